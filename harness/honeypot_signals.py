"""What an annotator can observe of each item served to them, to check that no signal tells a
honeypot from a real item (docs/teams.md, "Honeypots").

Shared by ``tests/teams/test_review.py`` (asserts that no signal separates the two groups) and
``benchmarks/races.py`` (counts the separating signals over many rounds), hence here and not
under ``tests/``. An annotator's signals for one item: the panel's structure, their own items-API
row and a reviewer's (besides id and seq), their item-browser row (besides number and content;
where the project opens the browser to them), the answer to a label and to its repeat, the row of
their answer in "My last labels", how the waiting count of their queue moved with the answer, the
id's place in the order they were shown items ("older than one seen"), and, with a colleague, the
answer to the colleague's label on the item while the annotator holds it (status and message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from django.test import Client

from annotator.labelling.models import Honeypot, Item, Project

#: what htmx sends with its requests (the queue answers a panel, not the page)
HX = {"HX-Request": "true"}
#: attributes whose values are the item's own (its id, image, caption, class values)
_ITEM_OWN = ("data-item", "src", "alt", "value")


class _Skeleton(HTMLParser):
    """Collects (tag, attributes) of the element with ``id="queue-item"`` and everything in it."""

    VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                      "source", "track", "wbr"})

    def __init__(self, item_pk: int) -> None:
        super().__init__()
        self.item_pk = item_pk
        self.depth = 0  # >0 inside the panel
        self.item: int | None = None  # the panel's data-item
        self.out: list[tuple[str, tuple[tuple[str, str], ...]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if self.depth == 0 and values.get("id") != "queue-item":
            return
        if self.depth == 0 and values.get("data-item", "").isdigit():
            self.item = int(values["data-item"])
        kept = {k: re.sub(rf"/items/{self.item_pk}/", "/items/N/", v) for k, v in values.items()
                if k not in _ITEM_OWN}
        self.out.append((tag, tuple(sorted(kept.items()))))
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag not in self.VOID:
            self.depth -= 1


def skeleton(html: bytes, item_pk: int) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The queue panel's structure in ``html``: tags, ids, classes, names, keys, URLs with the
    item id ``item_pk`` masked; no text and none of the item's own attribute values."""
    parser = _Skeleton(item_pk)
    parser.feed(html.decode())
    return tuple(parser.out)


def waiting_shown(html: bytes) -> int | None:
    """The waiting count of a queue panel's progress line (None when it has none)."""
    found = re.search(rb'<b id="waiting">(\d+)</b>', html)
    return int(found.group(1)) if found else None


def browser_row(client: Client, project: Project, item_pk: int) -> tuple[str, ...] | None:
    """The item browser's row of the item as ``client`` sees it, but its number, content and
    classes (its cells as ``label=text``, a class as whether it is the prediction); None when the
    browser is closed to them."""
    seq = Item.objects.get(pk=item_pk).seq
    answer = client.get(f"/projects/{project.pk}/items/?after={seq - 1}")
    if answer.status_code != 200:
        return None
    row = re.search(r"<tr>\s*<td data-label=\"#\">(\d+)</td>(.*?)</tr>", answer.content.decode(), re.S)
    assert row is not None and int(row.group(1)) == seq
    cells = {k: " ".join(re.sub(r"<[^>]+>", " ", v).split())
             for k, v in re.findall(r'<td data-label="([^"]+)"[^>]*>(.*?)</td>', row.group(2), re.S)}
    for own in ("label", "predicted"):  # the item's own class: whether there is one, and which
        if own in cells and cells[own] not in ("", "none"):
            cells[own] = "the prediction" if cells[own] == cells.get("predicted") else "a class"
    return tuple(f"{k}={v}" for k, v in cells.items() if k != "item")


class _RecentRow(HTMLParser):
    """Collects (tag, attributes) of the first row (``li``) of the element ``id="recent-labels"``
    (My last labels, newest first), digits masked (label and item ids) and without the item's
    own attribute values or the selected class: how the row renders, not what it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = self.depth = 0  # inside the list; depth within the first row
        self.done = False
        self.out: list[tuple[str, tuple[tuple[str, str], ...]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if values.get("id") == "recent-labels":
            self.inside = 1
        if not self.inside or self.done or (tag != "li" and not self.depth):
            return
        kept = {k: re.sub(r"\d+", "N", v) for k, v in values.items() if k not in (*_ITEM_OWN, "selected")}
        self.out.append((tag, tuple(sorted(kept.items()))))
        if tag not in _Skeleton.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag not in _Skeleton.VOID:
            self.depth -= 1
            self.done = self.depth == 0


def recent_row(html: bytes) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The structure of the newest row of "My last labels" in ``html`` (see :class:`_RecentRow`)."""
    parser = _RecentRow()
    parser.feed(html.decode())
    return tuple(parser.out)


def served_item(html: bytes) -> int | None:
    """The id of the item a queue panel shows; None when nothing waits."""
    parser = _Skeleton(-1)
    parser.feed(html.decode())
    return parser.item


@dataclass
class Signals:
    """Values each signal took on honeypots (``gold``) and on real items (``real``)."""

    gold: dict[str, set[Any]] = field(default_factory=dict)
    real: dict[str, set[Any]] = field(default_factory=dict)

    def add(self, is_honeypot: bool, seen: dict[str, Any]) -> None:
        side = self.gold if is_honeypot else self.real
        for name, value in seen.items():
            side.setdefault(name, set()).add(value)

    def separating(self) -> dict[str, set[Any]]:
        """Signals with a value on some honeypot that no real item showed (must be empty)."""
        return {name: values - self.real.get(name, set()) for name, values in self.gold.items()
                if values - self.real.get(name, set())}


def collect(project: Project, user: Any, annotator: Client, reviewer: Client, steps: int,
            value: str = "3", signals: Signals | None = None, colleague: Client | None = None) -> Signals:
    """Label ``steps`` items of ``project`` as ``user`` (logged in on ``annotator``), always with
    ``value``, and record every signal of each item served after the first (the first comes with
    the page, the others answer a label). ``colleague``: another annotator of the project, who
    tries to label each item while ``user`` holds it (refused, or the signal shows it). Stops
    early when nothing waits."""
    signals = signals if signals is not None else Signals()
    base = f"/projects/{project.pk}"
    answer = annotator.get(f"{base}/", headers=HX)
    shown: list[int] = []
    for step in range(steps + 1):
        pk = served_item(answer.content)
        if pk is None:
            break
        shown.append(pk)
        if step == 0:
            answer = annotator.post(f"{base}/items/{pk}/label", {"value": value}, headers=HX)
            continue
        seen: dict[str, Any] = {"panel": skeleton(answer.content, pk),
                                "older than one seen": pk < max(shown[:-1])}
        for who, client in (("api", annotator), ("reviewer api", reviewer)):
            row = client.get(f"/api/projects/{project.pk}/items?ids={pk}").json()["items"][0]
            seen[who] = tuple(sorted((k, v) for k, v in row.items() if k not in ("id", "seq")))
        seen["browser row"] = browser_row(annotator, project, pk)
        if colleague is not None:
            probe = colleague.post(f"{base}/items/{pk}/label", {"value": value})
            seen["colleague's label"] = (probe.status_code, probe.content.decode())
        waiting = waiting_shown(answer.content)
        answer = annotator.post(f"{base}/items/{pk}/label", {"value": value}, headers=HX)
        seen["label"] = answer.status_code
        seen["my last labels row"] = recent_row(answer.content)
        after = waiting_shown(answer.content)
        seen["waiting moved"] = None if waiting is None or after is None else after - waiting
        seen["repeat"] = annotator.post(f"{base}/items/{pk}/label", {"value": value}).status_code
        signals.add(Honeypot.objects.filter(item_id=pk, annotator=user).exists(), seen)
    return signals
