"""The whole decision log of a project and the estimate over its covered prefix, computed from
every row: what the running totals (:mod:`annotator.labelling.engine.running_totals`) must
equal. No request reads the whole log; tests compare the totals against this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from annotator.labelling.engine.decision_log import Decision, left_out_flags
from annotator.labelling.models import Item, Label, Project
from learners.evaluation.metrics import Estimate, importance_weighted_accuracy


class CoveredEstimate(NamedTuple):
    """The importance-weighted accuracy over the covered prefix of a decision log."""

    estimate: Estimate
    #: length of the covered prefix: the estimate covers ``log[:stop]``
    stop: int
    #: items of that prefix in the estimator's stream (queried items without a label left out)
    seen: int


def decision_log(project: Project) -> list[Decision]:
    """Every decided item of ``project`` in ``seq`` order, with why a queried item without a drawn
    label is left out (:func:`~annotator.labelling.engine.decision_log.left_out_flags`)."""
    labels = dict(Label.objects.filter(project=project, primary=True, drawn=True)
                  .values_list("item_id", "value"))
    rows = (Item.objects.filter(project=project).decided().order_by("seq")
            .values_list("id", "seq", "status", "prediction", "query_prob", "queried", "gold"))
    log = [(pk, Decision(seq, status, pred, q, bool(queried), gold, labels.get(pk)))
           for pk, seq, status, pred, q, queried, gold in rows]
    flags = left_out_flags(pk for pk, d in log if d.left_out is not None)
    return [d.flagged(flags, pk) for pk, d in log]


def not_reached(log: Sequence[Decision]) -> dict[str, int]:
    """Why the estimate does not reach the decided items it could cover (docs/estimates.md): the
    items of the covered prefix left out per cause, but ``unasked`` (q = 0), and ``waiting``: the
    items from the first queried one still waiting for its label on, but those with q = 0."""
    stop = covered_accuracy(log).stop
    out: dict[str, int] = {}
    for d in log[:stop]:
        if d.left_out not in (None, "unasked"):
            out[d.left_out] = out.get(d.left_out, 0) + 1
    waiting = sum(1 for d in log[stop:] if d.query_prob > 0)
    return {**out, **({"waiting": waiting} if waiting else {})}


def covered_accuracy(log: Sequence[Decision]) -> CoveredEstimate:
    """The importance-weighted accuracy of the longest prefix of ``log`` it can cover.

    ``stop`` < ``len(log)`` when a queried item of ``log`` still waits for its label.
    """
    stop = next((i for i, d in enumerate(log) if d.awaiting_label), len(log))
    stream = [d for d in log[:stop] if d.in_stream]
    covered = [d for d in stream if d.queried]
    estimate = importance_weighted_accuracy(
        np.array([d.label == d.prediction for d in covered], dtype=bool),
        np.array([d.query_prob for d in covered], dtype=float), len(stream))
    return CoveredEstimate(estimate, stop, len(stream))
