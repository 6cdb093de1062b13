"""Annotator quality (docs/teams.md "Annotator quality"): each annotator's
accuracy against the gold classes and against the consensus, with the number of items behind each
figure.

Every standing opinion counts (a label of kind "opinion" not undone whose annotator still exists,
primary or not, honeypot answers included: :mod:`.agreement`'s definition). Against gold: the
opinions on items with a gold class. Against consensus: the opinions on items whose class the team
settled (:func:`.consensus.values`: agreed, majority or adjudicated by a reviewer); an annotator's
own vote is part of the consensus it is compared with. Classes compare by their string form (gold
read from a CSV cell and a label of the int class 3 are the same class).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet

from annotator.labelling.models import Label, Project

from . import consensus


def accuracy_table(opinions: Iterable[tuple[Any, str, Any]],
                   truth: Mapping[Any, Any]) -> dict[str, dict[str, Any]]:
    """``{annotator: {"accuracy", "correct", "n"}}`` of the opinions ``(item, annotator, value)``
    on the items of ``truth`` (``{item: class}``); annotators without such an item are left out."""
    table: dict[str, dict[str, Any]] = {}
    for item, annotator, value in opinions:
        if item not in truth:
            continue
        row = table.setdefault(annotator, {"correct": 0, "n": 0})
        row["n"] += 1
        row["correct"] += str(value) == str(truth[item])
    for row in table.values():
        row["accuracy"] = row["correct"] / row["n"]
    return dict(sorted(table.items()))


def annotator_quality(project: Project, labels: QuerySet[Label] | None = None) -> list[dict[str, Any]]:
    """Per annotator (name order): ``{"name", "gold": {"accuracy", "correct", "n"} | None,
    "consensus": ... | None}`` (None: no such item yet), JSON-able, for the admins' dashboard.
    Reads the standing opinions among ``labels`` once (default: every label of the project; the
    dashboard passes its window, :func:`.agreement.recent_labels`) and the settled ones of
    their items (:func:`.consensus.values`)."""
    labels = Label.objects.filter(project=project) if labels is None else labels
    standing = labels.filter(undone_at__isnull=True, annotator__isnull=False, kind=Label.Kind.OPINION)
    rows = list(standing.values_list("item_id", "annotator__username", "value", "item__gold"))
    opinions = [row[:3] for row in rows]
    by_gold = accuracy_table(opinions, {item: gold for item, _, _, gold in rows if gold is not None})
    by_consensus = accuracy_table(opinions, consensus.values(project, standing.values("item_id")))
    return [{"name": name, "gold": by_gold.get(name), "consensus": by_consensus.get(name)}
            for name in sorted(set(by_gold) | set(by_consensus))]
