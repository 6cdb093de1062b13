"""The item browser's query (docs/dataset.md): one page of a project's items, filtered, by keyset
over ``(project, seq)`` so that every page costs about the same at 1k and 1M items.

Filters (query keys, anything else refused): ``q`` (the text contains, case-insensitive),
``host`` (URL items whose host is this one or one of its subdomains), ``status`` (an
:class:`.models.Item.Status`), ``provenance`` (of the final label, :func:`.dataset_export.provenance_case`),
``predicted`` (the model's predicted class), ``confidence`` (a band of ``|score|``: ``low``,
``mid``, ``high``, bounds :data:`BANDS`), ``disagreement`` (``annotators``: their opinions
differ, the item's consensus is not unanimous; ``model``: the final human label differs from the
model's prediction). ``after``: the ``seq`` the page starts after (the previous page's last), a
whole number from 0 to 2**63 - 1; past the project's last item is refused. For a viewer who is
not a project admin, ``status`` and ``provenance`` take the merged values of :mod:`.member_view`
and ``confidence`` is refused.

A text search that matches few items reads the items until it fills a page. On PostgreSQL a
trigram index (migration 0031) answers a ``q`` of :data:`TRIGRAM` characters or more; any other
``q`` (shorter, or without that index: SQLite, or PostgreSQL without ``pg_trgm``) reads at most
:data:`SCAN_WINDOW` items a page: a page it did not fill says how far it searched
(``Page.searched_to``) and its next page searches on from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, Q

from annotator.labelling.models import Consensus, Item, Label, Project
from annotator.labelling.teams import member_view
from annotator.labelling.teams.consensus import RELABEL
from learners.uploads.input_rules import BIGINT_MAX, whole_number

from .dataset_export import ITEM_COLUMNS, PROVENANCES, annotated_items, provenance, provenance_q, related_rows

#: items per page
PAGE_SIZE = 50
#: the confidence bands: ``|score|`` in [low, high) (the score is each learner's margin or gap)
BANDS = {"low": (0.0, 0.25), "mid": (0.25, 1.0), "high": (1.0, None)}
DISAGREEMENTS = ("annotators", "model")
#: items a text search the trigram index cannot serve reads at most per page (module docstring)
SCAN_WINDOW = 100_000
#: the shortest text a trigram index can look up
TRIGRAM = 3
KEYS = ("q", "host", "status", "provenance", "predicted", "confidence", "disagreement", "after")


class PastTheEndError(ValueError):
    """``after`` lies past the project's last item."""


@dataclass
class Page:
    """One page: ``rows`` (dicts: the item's columns, ``provenance``, ``label`` and the rest of
    :func:`.dataset_export.provenance`), ``next_after`` (the ``after`` of the next page; None on
    the last), the applied ``filters`` (query keys, for the links) and ``searched_to``: the last
    ``seq`` a bounded text search read without filling the page (None when it was not cut)."""

    rows: list[dict[str, Any]]
    next_after: int | None
    filters: dict[str, str]
    searched_to: int | None = None


def _indexed_search(text: str) -> bool:
    """Whether the trigram index can answer ``q=text`` (PostgreSQL, the index present, and at
    least :data:`TRIGRAM` characters)."""
    if connection.vendor != "postgresql" or len(text) < TRIGRAM:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'item_text_trgm'")
        return cursor.fetchone() is not None


def _host_q(host: str) -> Q:
    """URL items whose host is ``host`` or a subdomain of it (any scheme, port, path)."""
    return Q(text__iregex=r"^[a-z][a-z0-9+.-]*://([^/?#@]*@)?([^/?#:]*\.)?" + _escape(host) + r"([/:?#]|$)")


def _escape(text: str) -> str:
    """``text`` with the regular-expression characters escaped (portable to SQLite and PostgreSQL)."""
    return "".join("\\" + c if not c.isalnum() and c not in "-_" else c for c in text)


def filter_q(project: Project, query: Mapping[str, str], member: bool = False
             ) -> tuple[Q, dict[str, str]]:
    """``(Q on the annotated items, the filters kept)`` of a query; ValueError naming the key for
    an unknown key or value. ``member``: the viewer is not a project admin, so ``status`` and
    ``provenance`` take only the values members see (:mod:`.member_view`: a value naming the
    items the model decided alone, or the queued ones, is refused), and ``confidence`` is refused
    (the query rule drew on ``|score|``, so its bands would sort the two apart)."""
    unknown = sorted(k for k in query if k not in KEYS)
    if unknown:
        raise ValueError(f"unknown filter {unknown[0]!r}; the filters are {', '.join(KEYS[:-1])}")
    q, kept = Q(), {}
    for key in KEYS[:-1]:
        text = query.get(key, "").strip()
        if not text:
            continue
        kept[key] = text
        if key == "q":
            q &= Q(text__icontains=text)
        elif key == "host":
            q &= _host_q(text.lower())
        elif key == "status" and member:
            q &= Q(status__in=_member_values(member_view.STATUSES, key, text))
        elif key == "provenance" and member:
            q &= provenance_q(_member_values(member_view.PROVENANCES, key, text))
        elif key == "confidence" and member:
            raise ValueError("the confidence filter is for the project's admins")
        elif key == "status":
            if text not in Item.Status.values:
                raise ValueError(f"unknown status {text!r}; one of {', '.join(Item.Status.values)}")
            q &= Q(status=text)
        elif key == "provenance":
            if text not in PROVENANCES:
                raise ValueError(f"unknown provenance {text!r}; one of {', '.join(PROVENANCES)}")
            q &= provenance_q([text])
        elif key == "predicted":
            q &= Q(prediction=project.parse_class(text))
        elif key == "confidence":
            if text not in BANDS:
                raise ValueError(f"unknown confidence band {text!r}; one of {', '.join(BANDS)}")
            low, high = BANDS[text]
            q &= Q(confidence__gte=low) & (Q(confidence__lt=high) if high is not None else Q())
        elif key == "disagreement":
            q &= _disagreement_q(text)
    return q, kept


def _member_values(mapping: dict[str, str], key: str, text: str) -> list[str]:
    """The stored values a member's filter ``key=text`` stands for (:func:`.member_view.underlying`)."""
    try:
        return member_view.underlying(mapping, text)
    except ValueError as exc:
        raise ValueError(f"unknown {key} {text!r}; {exc}") from None


def _disagreement_q(kind: str) -> Q:
    item = OuterRef("pk")
    if kind == "annotators":
        return Q(Exists(Consensus.objects.filter(item=item).exclude(status=Consensus.Status.AGREED)
                        .exclude(method=RELABEL)))
    if kind == "model":
        return Q(Exists(Label.objects.filter(item=item, primary=True).exclude(value=OuterRef("prediction"))))
    raise ValueError(f"unknown disagreement {kind!r}; one of {', '.join(DISAGREEMENTS)}")


def _after(query: Mapping[str, str], project: Project) -> int:
    text = query.get("after", "").strip()
    if not text:
        return -1
    try:
        after = whole_number(text, "after", 0, BIGINT_MAX)
    except ValueError as exc:
        raise ValueError(f"{exc} (an item's seq)") from None
    last = Item.objects.filter(project=project).order_by("-seq").values_list("seq", flat=True).first()
    if last is None or after >= last:
        raise PastTheEndError(f"there is no item after seq {after} (the last item has seq {last})")
    return after


def browse(project: Project, query: Mapping[str, str], size: int = PAGE_SIZE,
           member: bool = False) -> Page:
    """The page of ``query`` (module docstring; ``member`` as :func:`filter_q`'s: the rows stay as
    stored, the caller shows them through :func:`.member_view.as_member_sees`). ValueError for a
    bad filter, :class:`PastTheEndError` for an ``after`` past the last item."""
    q, kept = filter_q(project, query, member)
    after = _after(query, project)
    items = annotated_items(project).filter(q, seq__gt=after)
    window = after + SCAN_WINDOW if "q" in kept and not _indexed_search(kept["q"]) else None
    if window is not None:
        items = items.filter(seq__lte=window)
    rows = list(items.order_by("seq").values(*ITEM_COLUMNS, "confidence")[:size + 1])
    more = len(rows) > size
    rows = rows[:size]
    related = related_rows(rows)
    for row in rows:
        row.update(provenance(row, related))
    next_after = rows[-1]["seq"] if more and rows else None
    if window is not None and not more:
        last = Item.objects.filter(project=project).order_by("-seq").values_list("seq", flat=True).first()
        if last is not None and window < last:  # the window ended before the stream: search on
            return Page(rows, window, kept, searched_to=window)
    return Page(rows, next_after, kept)
