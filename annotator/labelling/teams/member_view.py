"""What a project member who is not one of its admins (an annotator or a reviewer) sees of an
item's decision: the one definition the item browser and the items API both apply
(docs/teams.md, "Honeypots").

Honeypots are drawn from the items the model decided alone (``auto``), and audits are such items
too; so no member may tell those from the items waiting for a person (``queued``, ``leased``,
``skipped``). Both show as one status, :data:`DECIDED`, and one provenance,
:data:`UNCONFIRMED` (decided, no person's final label yet), with the model's prediction as their
label when the project shows its guesses (every decided item has one). Items not decided yet
(``pending``) and items with a person's label stay apart: a honeypot is neither. A disputed item
(its annotators disagree) shows as disputed, never with who said what (``opinions``: the
admins').

The fields of :data:`HIDDEN` are null for a member on every item: ``queried`` says which set an
item is in, ``query_prob`` and ``score`` (``confidence``: its absolute value) drew that choice
(``q = 1`` is always queried, ``q = 0`` never), ``model_version`` and ``decided_at`` date the
decision. The items API is stricter still
(:data:`.api.views.HIDDEN_FROM_MEMBERS`: status and prediction null as well).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from annotator.labelling.models import Item

#: the status a member sees of a decided item without a person's label, queued or not
DECIDED = "decided"
#: the provenance a member sees of a decided item without a person's final label
UNCONFIRMED = "unconfirmed"

#: each item status as a member sees it
STATUSES: dict[str, str] = {
    Item.Status.PENDING: "pending",
    Item.Status.AUTO: DECIDED,
    Item.Status.QUEUED: DECIDED,
    Item.Status.LEASED: DECIDED,
    Item.Status.SKIPPED: DECIDED,
    Item.Status.LABELLED: "labelled",
}
#: each provenance (:func:`.dataset_export.provenance_rules`) as a member sees it
PROVENANCES: dict[str, str] = {
    "human": "human",
    "disputed": "disputed",
    "pending": "pending",
    "model": UNCONFIRMED,
    "honeypot": UNCONFIRMED,
    "audited": UNCONFIRMED,
    "waiting": UNCONFIRMED,
}
#: decision fields a member never sees, for any item (module docstring)
HIDDEN = ("score", "confidence", "query_prob", "queried", "model_version", "decided_at")


def shown(mapping: dict[str, str]) -> tuple[str, ...]:
    """The values a member sees of ``mapping`` (:data:`STATUSES` or :data:`PROVENANCES`), in order:
    the only values a member's filter accepts."""
    return tuple(dict.fromkeys(mapping.values()))


def underlying(mapping: dict[str, str], value: str) -> list[str]:
    """The values of ``mapping`` a member's ``value`` stands for; ValueError for a value members do
    not see (one naming a set they may not tell apart, or none at all)."""
    found = [raw for raw, seen in mapping.items() if seen == value]
    if not found:
        raise ValueError(f"one of {', '.join(shown(mapping))}")
    return [str(raw) for raw in found]


def as_member_sees(row: MutableMapping[str, Any], predictions: bool) -> MutableMapping[str, Any]:
    """``row`` (an item's fields, some of ``status``, ``provenance``, ``label``, ``prediction`` and
    :data:`HIDDEN`) changed in place to what a member sees: merged status and provenance, the
    prediction as the label of an :data:`UNCONFIRMED` item, the prediction only with
    ``predictions`` (the project shows its guesses), :data:`HIDDEN` and ``opinions`` null."""
    if "status" in row:
        row["status"] = STATUSES[row["status"]]
    if "provenance" in row:
        row["provenance"] = PROVENANCES[row["provenance"]]
    if not predictions and "prediction" in row:
        row["prediction"] = None
    if row.get("provenance") == UNCONFIRMED:
        row["label"] = row.get("prediction")
        for key in ("labelled_at", "annotator", "method", "drawn", "opinions", "reviewer"):
            if key in row:
                row[key] = None
    for key in (*HIDDEN, "opinions"):
        if key in row:
            row[key] = None
    return row
