"""Suspected label errors (docs/estimates.md, "Suspected label errors"): every person's label of
a queried item, compared with the model's prediction logged when the item was decided (before that
label was learnt: an out-of-sample prediction) and, for annotators with overlapping opinions, with
their Dawid-Skene confusion matrix (:func:`.consensus.annotator_confusions`), scored by the
posterior that it is wrong (:func:`learners.label_errors.suspicion`) and ranked.

The labels most likely wrong go to the review queue (reason ``suspect``) with one click
(:func:`send_to_review`) or, when the project sets ``suspect_threshold``, automatically on the
workers' sweep (:func:`auto_send`). A reviewer's decision is the item's final label, as for a
disagreement (:func:`.reviews.decide`).

The ranking reads every standing opinion on a queried item of the project (a page an admin opens,
and the sweep of projects with a threshold), not the stream: :func:`.reviews.suspect_opinions`,
the one rule of what can be suspected. An item outside it cannot be sent to review
(:func:`send_to_review` refuses it), and a suspect review whose label was undone after it was
sent is withdrawn (:func:`.reviews.withdraw_unfounded_suspects`; deciding it is refused,
:func:`.reviews.decide`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotator.labelling.models import Item, Project, Review
from learners.label_errors import calibrated_probabilities, suspicion

from .consensus import annotator_confusions
from .reviews import request_review, suspect_opinions

#: the accuracy assumed for an annotator without overlapping opinions (no confusion matrix)
DEFAULT_ANNOTATOR_ACCURACY = 0.9


def ranked_suspects(project: Project) -> list[dict[str, Any]]:
    """The standing opinions on queried items with a logged score, most likely wrong first:
    ``{"label_id", "item_id", "seq", "annotator" (username or None), "value", "prediction",
    "suspicion" (probability in [0, 1] that the label is wrong), "confusion" (True: the
    annotator's Dawid-Skene matrix was used), "reviewed" (the item has a suspect review)}``.
    Labels whose class or prediction is no longer a class of the project are left out."""
    code = {repr(c): j for j, c in enumerate(project.classes)}
    rows = [r for r in suspect_opinions(project)
            .order_by("id").values_list("id", "item_id", "item__seq", "annotator_id", "annotator__username",
                                        "value", "item__prediction", "item__score")
            if repr(r[5]) in code and repr(r[6]) in code]
    if not rows:
        return []
    given = np.array([code[repr(r[5])] for r in rows])
    pred = np.array([code[repr(r[6])] for r in rows])
    scores = np.array([r[7] for r in rows], dtype=float)
    probs = calibrated_probabilities(pred, scores, given, len(project.classes))
    confusions = annotator_confusions(project)
    users = sorted(confusions)
    index = {u: a for a, u in enumerate(users)}
    who = np.array([index.get(r[3], -1) for r in rows])
    stack = np.array([confusions[u] for u in users]) if users else None
    score = suspicion(probs, given, who, stack, DEFAULT_ANNOTATOR_ACCURACY)
    reviewed = set(Review.objects.filter(project=project, reason=Review.Reason.SUSPECT)
                   .values_list("item_id", flat=True))
    out = [{"label_id": r[0], "item_id": r[1], "seq": r[2], "annotator": r[4], "value": r[5],
            "prediction": r[6], "suspicion": float(s), "confusion": bool(w >= 0),
            "reviewed": r[1] in reviewed}
           for r, s, w in zip(rows, score, who, strict=True)]
    out.sort(key=lambda row: (-row["suspicion"], row["label_id"]))
    return out


class NotSuspectError(ValueError):
    """An item sent to review has no label that can be suspected (:func:`.reviews.suspect_opinions`)."""


def send_to_review(project: Project, item_ids: list[int]) -> int:
    """Queue the items ``item_ids`` of ``project`` for the reviewers as suspected label errors;
    returns how many were queued now (an item is reviewed once per reason). Nothing is queued
    when one of them is refused: ``Item.DoesNotExist`` for an id that is not an item of the
    project, :class:`NotSuspectError` for an item with no label the ranking would list (no
    standing opinion on it, or an item the model did not query: :func:`.reviews.suspect_opinions`)."""
    items = {i.pk: i for i in Item.objects.filter(project=project, pk__in=item_ids)}
    missing = [pk for pk in item_ids if pk not in items]
    if missing:
        raise Item.DoesNotExist(f"no item {missing[0]} in this project")
    founded = set(suspect_opinions(project).filter(item_id__in=item_ids).values_list("item_id", flat=True))
    unfounded = [items[pk] for pk in item_ids if pk not in founded]
    if unfounded:
        raise NotSuspectError(f"item #{unfounded[0].seq} has no label to review: only a standing label on an "
                              "item the model queried can be suspected (an item not labelled yet, a label "
                              "undone, or an item the model decided alone is not)")
    before = Review.objects.filter(project=project, reason=Review.Reason.SUSPECT).count()
    for pk in dict.fromkeys(item_ids):
        request_review(items[pk], Review.Reason.SUSPECT)
    return Review.objects.filter(project=project, reason=Review.Reason.SUSPECT).count() - before


def auto_send(project: Project) -> int:
    """Queue every label whose suspicion is at or above the project's ``suspect_threshold`` (none
    when it is None); returns how many were queued now (none when a label was undone between the
    ranking and the queueing: the next sweep ranks again)."""
    if project.suspect_threshold is None:
        return 0
    chosen = [r["item_id"] for r in ranked_suspects(project)
              if r["suspicion"] >= project.suspect_threshold and not r["reviewed"]]
    try:
        return send_to_review(project, chosen) if chosen else 0
    except NotSuspectError:
        return 0
