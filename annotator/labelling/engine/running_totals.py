"""Incremental aggregates of the decision log: the metrics, the dashboard's curves and
the model card cost the same at 1k and 1M items.

Kept in one row per project, :class:`.models.StreamStats` (its ``checkpoints`` included), written
only under the learner-state lock, in the transactions that record what they count:

* :func:`record_decisions` (the stream engine, per batch of decisions): gold counts, the items
  decided without a query per predicted class, the items nobody could be asked about (query
  probability 0) per cause (:func:`.decision_log.unasked_cause`), and a
  checkpoint every ``step`` decided items (``step`` doubles when more than
  ``2 x CURVE_POINTS`` checkpoints would exist, every other one is dropped);
* :func:`record_applied` (the pipeline, per applied label): label counts (also per class) and
  seconds;
* :func:`advance_frontier` (the pipeline, after labels and decisions): the importance-weighted
  sums (also per class: ``iw_cells`` and ``iw_auto``, docs/estimates.md) over the prefix of the
  stream the estimate can cover, by the rule of :mod:`.decision_log`
  (it stops at the first queried item still waiting for a label);
* :func:`record_undo` (an undo): the counts lose the label if it was applied and, when the
  item lies inside the covered prefix, the frontier goes back to the last checkpoint before
  it and the next :func:`advance_frontier` walks forward again from there;
* :func:`record_new_primary` (a consensus or a reviewer's decision gives a queried item its first
  primary label): when the frontier passed the item, which it then left out of the estimator's
  stream (in dispute), it goes back before it in the same way, so the label joins the estimates
  as a walk of the whole log would count it.

The walk also counts the items of the covered prefix it leaves out of the estimator's stream, per
cause (``left_out``, :attr:`.decision_log.Decision.left_out`), which :mod:`..reporting.coverage`
reads to say why the estimates do not reach an item.

Items are decided in ``seq`` order and ``seq`` runs 0, 1, 2, ... within a project, so the
first ``t`` decided items are the items with ``seq < t``. :func:`rebuild` recomputes the
aggregates from the log (projects from before the aggregates existed).

Labels an admin gave by choice (``Label.drawn`` False, :mod:`.annotation.relabel`) are counted
nowhere here but in ``undrawn_queried`` (those on queried items: the queue's counters,
:func:`.queue_counts.awaiting_label`): the label counts describe the sample the query rule drew,
and the importance-weighted sums weight a label by 1/q, which only a drawn label has. A queried item
whose label an admin replaced is left out of the estimator's stream as a skipped one is
(docs/dataset.md says why).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.db.models import Max, OuterRef, Subquery

from annotator.labelling.models import Item, Label, LearnerState, StreamStats

from .decision_log import Decision, left_out_flags

#: points per curve wanted on the dashboard; between this and twice this many checkpoints are kept
CURVE_POINTS = 60
#: items read per query while the frontier walks forward (the first read is small: it often stops at once)
WALK = (16, 2000)
#: the importance-weighted sums, on the aggregates and on each checkpoint (None there until reached)
IW_FIELDS = ("iw_seen", "iw_m", "iw_s1", "iw_s2")
#: a checkpoint: ``[t, gold_n, gold_correct, queried, *IW_FIELDS, [iw_cells, iw_auto, left_out]]``
#: (see :class:`.models.StreamStats`)
T, IW, CELLS = 0, slice(4, 8), 8


def cell_key(truth: Any, prediction: Any) -> str:
    """The key of a confusion cell in ``gold_cells`` / ``iw_cells``: JSON
    ``[str(truth), str(prediction)]``."""
    return json.dumps([str(truth), str(prediction)])


def _add_cell(cells: dict[str, list[float]], key: str, q: float) -> None:
    """One labelled queried item with query probability ``q`` joins its cell
    ``[m, sum 1/q, sum (1-q)/q^2]``."""
    m, s1, s2 = cells.get(key, [0.0, 0.0, 0.0])
    cells[key] = [m + 1.0, s1 + 1.0 / q, s2 + (1.0 - q) / (q * q)]


def outdated(stats: StreamStats | None) -> bool:
    """Aggregates to build from the log: missing, or from before the walk counted the items it
    leaves out (``left_out`` None: its checkpoints lack them too)."""
    return stats is None or stats.left_out is None


def load(project_id: int) -> StreamStats:
    """The project's aggregates (call under the state lock); built from the log if
    :func:`outdated`."""
    stats = StreamStats.objects.filter(project_id=project_id).first()
    return rebuild(project_id) if outdated(stats) else stats  # type: ignore[return-value]


def _count(counts: dict[str, int], value: Any, step: int) -> None:
    """Add ``step`` to the count of class ``value`` (keyed by its text: JSON object keys)."""
    key = str(value)
    counts[key] = counts.get(key, 0) + step


def record_decisions(stats: StreamStats, start: int, queried_before: int,
                     decisions: Iterable[tuple[Any, Any, bool, str | None]]) -> None:
    """Count decisions ``(gold, prediction, queried, unasked)`` of the items ``seq = start,
    start+1, ...`` (``queried_before``: queried items among the first ``start``; ``unasked``: why
    nobody could be asked, :func:`.decision_log.unasked_cause`, None when the item could have
    been) and add their checkpoints."""
    queried = queried_before
    t = start
    for gold, prediction, was_queried, unasked in decisions:
        t += 1
        queried += bool(was_queried)
        if not was_queried:
            _count(stats.auto_classes, prediction, 1)
        if unasked is not None:
            _count(stats.unasked, unasked, 1)
        if gold is not None:
            stats.gold_n += 1
            stats.gold_correct += gold == prediction
            key = cell_key(gold, prediction)
            stats.gold_cells[key] = stats.gold_cells.get(key, 0) + 1
        if t % stats.step == 0:
            stats.checkpoints.append([t, stats.gold_n, stats.gold_correct, queried, *[None] * 5])
    if t // stats.step > 2 * CURVE_POINTS:
        while t // stats.step > 2 * CURVE_POINTS:
            stats.step *= 2
        stats.checkpoints = [c for c in stats.checkpoints if c[T] % stats.step == 0]


def record_applied(stats: StreamStats, value: Any, prediction: Any, seconds: float | None,
                   drawn: bool = True, queried: bool = False) -> None:
    """Count one applied primary label ``value`` of an item whose logged prediction is ``prediction``;
    a label not ``drawn`` by the query rule is counted only in ``undrawn_queried``, when its item
    was ``queried`` (module docstring)."""
    if not drawn:
        stats.undrawn_queried += bool(queried)
        return
    stats.labels += 1
    stats.labels_correct += value == prediction
    _count(stats.label_classes, value, 1)
    if seconds is not None:
        stats.seconds_sum += seconds
        stats.seconds_n += 1


def record_undo(stats: StreamStats, label: Label, seq: int, prediction: Any) -> None:
    """The primary ``label`` of item ``seq`` was undone: uncount it if it was applied (a label not
    drawn: from ``undrawn_queried`` if its item was queried), and move the frontier back before
    the item (to the last checkpoint with sums, or the start) if it had passed it. Saves ``stats``."""
    if (label.applied_version is not None and not label.drawn
            and Item.objects.filter(pk=label.item_id, queried=True).exists()):
        stats.undrawn_queried -= 1
    if label.applied_version is not None and label.drawn:
        stats.labels -= 1
        stats.labels_correct -= label.value == prediction
        _count(stats.label_classes, label.value, -1)
        if label.seconds is not None:
            stats.seconds_sum -= label.seconds
            stats.seconds_n -= 1
    if seq < stats.frontier:
        _back_before(stats, seq)
    stats.save()


def record_new_primary(stats: StreamStats, seq: int, queried: bool) -> None:
    """A label became the primary label of item ``seq``, which had none (a consensus, a reviewer's
    decision or a relabel of an item in dispute): if the item was ``queried`` and the frontier
    passed it, the walk left it out of the estimator's stream for want of a label
    (:attr:`.decision_log.Decision.left_out`), so the frontier goes back before it as on an undo
    and the next :func:`advance_frontier` counts it as a walk of the whole log does. Saves ``stats``
    when it moved."""
    if queried and seq < stats.frontier:
        _back_before(stats, seq)
        stats.save()


def _back_before(stats: StreamStats, seq: int) -> None:
    """Move the frontier back to the last checkpoint at or before item ``seq`` whose sums are set
    (or the start), with the sums and counts it held; later checkpoints lose theirs."""
    back = next((c for c in reversed(stats.checkpoints) if c[T] <= seq and c[IW][0] is not None), None)
    stats.frontier = back[T] if back else 0
    for i, name in enumerate(IW_FIELDS):
        setattr(stats, name, back[IW][i] if back else 0)
    stats.iw_cells, stats.iw_auto, stats.left_out = (json.loads(json.dumps(back[CELLS])) if back
                                                     else ({}, {}, {}))
    for c in stats.checkpoints:
        if c[T] > stats.frontier:
            c[IW] = [None] * len(IW_FIELDS)
            c[CELLS] = None


def advance_frontier(stats: StreamStats, n_decided: int) -> None:
    """Walk the frontier forward, at most to ``n_decided``, while the rule of :mod:`.decision_log`
    lets the estimate cover the next item (it stops at a queried item awaiting its label),
    counting the items it leaves out per cause (``left_out``)."""
    if stats.left_out is None:
        raise ValueError("aggregates from before the walk counted what it leaves out: load() rebuilds them")
    left_out: dict[str, int] = stats.left_out
    size = WALK[0]
    primary = Label.objects.filter(item=OuterRef("pk"), primary=True, drawn=True).values("value")[:1]
    at = {c[T]: c for c in stats.checkpoints if c[T] > stats.frontier}
    while stats.frontier < n_decided:
        rows = list(Item.objects.filter(project_id=stats.project_id, seq__gte=stats.frontier,
                                        seq__lt=min(n_decided, stats.frontier + size))
                    .order_by("seq").annotate(label=Subquery(primary))
                    .values_list("pk", "seq", "status", "prediction", "query_prob", "queried", "label"))
        # every decided item has its q
        window = [(pk, Decision(seq, status, prediction, float(prob) if prob is not None else 1.0,
                                bool(queried), None, label))
                  for pk, seq, status, prediction, prob, queried, label in rows]
        # why a queried item without a drawn label is left out: read for those few alone
        flags = left_out_flags(pk for pk, d in window if d.left_out == "skipped")
        for pk, d in window:
            d = d.flagged(flags, pk)
            seq, q = d.seq, d.query_prob
            if d.awaiting_label:
                return
            if d.in_stream:
                stats.iw_seen += 1
                if d.queried:
                    c = float(d.label == d.prediction)
                    stats.iw_m += 1
                    stats.iw_s1 += c / q
                    stats.iw_s2 += c * (1.0 - q) / (q * q)
                    _add_cell(stats.iw_cells, cell_key(d.label, d.prediction), q)
                else:
                    _count(stats.iw_auto, d.prediction, 1)
            else:
                _count(left_out, d.left_out, 1)
            stats.frontier = seq + 1
            if stats.frontier in at:
                at[stats.frontier][IW] = [getattr(stats, name) for name in IW_FIELDS]
                at[stats.frontier][CELLS] = json.loads(json.dumps([stats.iw_cells, stats.iw_auto,
                                                                   stats.left_out]))
        if not rows:
            return
        size = WALK[1]


def rebuild(project_id: int) -> StreamStats:
    """Recompute the aggregates (and the state's decision counters) from the decision log. The log
    keeps no cause of a query probability 0 (:func:`.decision_log.unasked_cause`): such items count
    as ``unrecorded``, unless the aggregates this replaces counted as many of them, whose causes
    (counted when the items were decided) are kept."""
    old = StreamStats.objects.filter(project_id=project_id).values_list("unasked", flat=True).first()
    StreamStats.objects.filter(project_id=project_id).delete()
    stats = StreamStats(project_id=project_id, checkpoints=[], gold_cells={}, iw_cells={}, iw_auto={},
                        unasked={}, left_out={})
    decided = Item.objects.filter(project_id=project_id).decided()
    n_decided = decided.aggregate(m=Max("seq"))["m"]
    n_decided = 0 if n_decided is None else n_decided + 1
    queried = 0
    for start in range(0, n_decided, WALK[1]):
        rows = list(decided.filter(seq__gte=start, seq__lt=start + WALK[1]).order_by("seq")
                    .values_list("gold", "prediction", "queried", "query_prob"))
        record_decisions(stats, start, queried, [(g, p, z, None if q is None or q > 0 else "unrecorded")
                                                 for g, p, z, q in rows])
        queried += sum(1 for _, _, z, _ in rows if z)
    if old and sum(old.values()) == sum(stats.unasked.values()):
        stats.unasked = dict(old)  # the same items: their causes as counted when decided
    for value, prediction, seconds in (Label.objects.filter(project_id=project_id, primary=True, drawn=True,
                                                            applied_version__isnull=False)
                                       .values_list("value", "item__prediction", "seconds")):
        record_applied(stats, value, prediction, seconds)
    stats.undrawn_queried = Label.objects.filter(project_id=project_id, primary=True, drawn=False,
                                                 applied_version__isnull=False, item__queried=True).count()
    advance_frontier(stats, n_decided)
    stats.save()
    LearnerState.objects.filter(project_id=project_id).update(n_decided=n_decided, n_queried=queried)
    return stats
