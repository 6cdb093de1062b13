"""The decision log of a project and the importance-weighted accuracy over its covered prefix.

One definition of the rule that both the metrics (:mod:`.metrics`) and the dashboard's curves
(:mod:`.dashboard`) use: the Horvitz-Thompson estimate needs the label of every queried item of
the stream it covers, so it covers the longest prefix of the log (in ``seq`` order) before the
first queried item still waiting for a label; queried items that will never have one (skipped)
are left out of that stream, and so are the items decided while the stop rule held (logged with
query probability 0, docs/estimates.md). See docs/architecture.md ("Metrics").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from annotator.labelling.models import Item, Label, Project
from learners.evaluation.metrics import Estimate, importance_weighted_accuracy


class Decision(NamedTuple):
    """One decided item: the learner's logged decision and what is known of its class."""

    seq: int
    #: the item's status now (:class:`.models.Item.Status` value)
    status: str
    #: the class predicted when the item was decided
    prediction: Any
    #: the probability with which it was queried, in (0, 1]
    query_prob: float
    queried: bool
    #: the known class (gold) or None
    gold: Any
    #: the primary label's value, None while there is none
    label: Any

    @property
    def awaiting_label(self) -> bool:
        """Queried and still waiting in the queue for its label."""
        return self.queried and self.label is None and self.status in Item.AWAITING_LABEL

    @property
    def label_missing(self) -> bool:
        """Queried without a label (waiting for it, or skipped for good)."""
        return self.queried and self.label is None

    @property
    def in_stream(self) -> bool:
        """In the estimator's stream: not a queried item without a label, nor an item decided while
        the stop rule held (``query_prob`` 0: nobody could be asked; docs/estimates.md)."""
        return not self.label_missing and self.query_prob > 0


class CoveredEstimate(NamedTuple):
    """The importance-weighted accuracy over the covered prefix of a decision log."""

    estimate: Estimate
    #: length of the covered prefix: the estimate covers ``log[:stop]``
    stop: int
    #: items of that prefix in the estimator's stream (queried items without a label left out)
    seen: int


def decision_log(project: Project) -> list[Decision]:
    """Every decided item of ``project`` in ``seq`` order (two queries)."""
    labels = dict(Label.objects.filter(project=project, primary=True).values_list("item_id", "value"))
    rows = (Item.objects.filter(project=project).decided().order_by("seq")
            .values_list("id", "seq", "status", "prediction", "query_prob", "queried", "gold"))
    return [Decision(seq, status, pred, q, bool(queried), gold, labels.get(pk))
            for pk, seq, status, pred, q, queried, gold in rows]


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
