"""Annotator quality (issue 19 item 4, docs/teams.md "Annotator quality"): each annotator's
accuracy against the gold classes and against the consensus, with the number of items behind
each figure.

Every standing opinion counts (a label not undone whose annotator still exists, primary or not,
honeypot answers included: :mod:`.agreement`'s definition). Against gold: the opinions on items
with a gold class. Against consensus: the opinions on items whose class the team settled, that
is the reviewers' decisions on disagreements (final); an annotator's own vote is part of the
consensus it is compared with. Classes compare by their string form (gold read from a CSV cell
and a label of the int class 3 are the same class).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from .models import Label, Project, Review


def accuracy_table(opinions: Iterable[tuple[Hashable, str, Any]],
                   truth: Mapping[Hashable, Any]) -> dict[str, dict[str, Any]]:
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


def consensus_values(project: Project) -> Any:
    """The settled items (see the module docstring) as ``(item id, class)`` rows (a queryset)."""
    return Review.objects.filter(project=project, reason=Review.Reason.DISAGREEMENT,
                                 decided_at__isnull=False).values_list("item_id", "value")


def annotator_quality(project: Project) -> list[dict[str, Any]]:
    """Per annotator (name order): ``{"name", "gold": {"accuracy", "correct", "n"} | None,
    "consensus": ... | None}`` (None: no such item yet), JSON-able, for the admins' dashboard.
    Reads the labelled items only (human work, not the stream)."""
    standing = Label.objects.filter(project=project, undone_at__isnull=True, annotator__isnull=False)
    gold_rows = list(standing.filter(item__gold__isnull=False)
                     .values_list("item_id", "annotator__username", "value", "item__gold"))
    settled = consensus_values(project)
    by_gold = accuracy_table([row[:3] for row in gold_rows], {row[0]: row[3] for row in gold_rows})
    by_consensus = accuracy_table(
        standing.filter(item_id__in=settled.values("item_id")).values_list("item_id", "annotator__username",
                                                                            "value"),
        dict(settled))
    return [{"name": name, "gold": by_gold.get(name), "consensus": by_consensus.get(name)}
            for name in sorted(set(by_gold) | set(by_consensus))]
