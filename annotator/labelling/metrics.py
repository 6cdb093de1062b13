"""Project metrics computed from the decision log (issue 2 item 9, DESIGN.md section 4).

* ``items``, ``pending`` (not decided yet) and ``waiting``: items an annotator could lease
  now (:meth:`.models.ItemQuerySet.waiting`, the count the project list and the queue show).
* ``seen``: items decided so far; ``queried`` and ``query_ratio`` = queried / seen.
* ``labels``: primary labels given; ``seconds_per_label``: mean annotator time per label
  (labels with a recorded time).
* ``accuracy_gold``: exact online accuracy of the logged predictions over every decided item
  that has a known (gold) class, queried or not.
* ``accuracy_iw``: the importance-weighted (Horvitz-Thompson) estimate of online accuracy
  from queried items only, each weighted by 1/q, with its 95% interval
  (:func:`learners.evaluation.metrics.importance_weighted_accuracy`). The estimator needs the label
  of every queried item of the stream it covers, so it covers the longest prefix of the
  stream (in ``seq`` order) before the first queried item still waiting for a label;
  queried items that were skipped are left out of the stream (they will never have one).
* ``accuracy_queried``: plain accuracy of the predictions on labelled queried items (a
  biased view: the learner queries the items it is unsure of).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models import Avg, Count, Q
from django.utils import timezone

from learners.evaluation.metrics import accuracy, importance_weighted_accuracy

from .models import Item, Label, Project, waiting_q


def _decisions(project: Project) -> list[tuple[int, str, Any, float, bool, Any, Any]]:
    """``(seq, status, prediction, q, queried, gold, primary label value or None)`` by seq."""
    labels = dict(Label.objects.filter(project=project, primary=True).values_list("item_id", "value"))
    rows = (Item.objects.filter(project=project).decided().order_by("seq")
            .values_list("id", "seq", "status", "prediction", "query_prob", "queried", "gold"))
    return [(seq, status, pred, q, queried, gold, labels.get(pk))
            for pk, seq, status, pred, q, queried, gold in rows]


def _estimate(value: float | None, n: int, **extra: Any) -> dict[str, Any]:
    return {"value": value, "n": n, **extra}


def project_metrics(project: Project) -> dict[str, Any]:
    """The metrics of the module docstring as a JSON-able dict."""
    log = _decisions(project)
    counts = Item.objects.filter(project=project).aggregate(
        items=Count("id"), pending=Count("id", filter=Q(status=Item.Status.PENDING)),
        waiting=Count("id", filter=waiting_q(timezone.now())))
    label_stats = Label.objects.filter(project=project, primary=True).aggregate(
        n=Count("id"), seconds=Avg("seconds"), applied=Count("id", filter=Q(applied_version__isnull=False)))
    seen = len(log)
    queried = sum(1 for r in log if r[4])

    gold_rows = [(r[5], r[2]) for r in log if r[5] is not None]
    gold_acc = accuracy([g for g, _ in gold_rows], [p for _, p in gold_rows]) if gold_rows else None

    labelled_q = [r for r in log if r[4] and r[6] is not None]
    q_acc = accuracy([r[6] for r in labelled_q], [r[2] for r in labelled_q]) if labelled_q else None

    stop = next((i for i, r in enumerate(log) if r[4] and r[6] is None and r[1] in Item.AWAITING_LABEL),
                len(log))
    prefix = [r for r in log[:stop] if not (r[4] and r[6] is None)]  # drop skipped queried items
    covered = [r for r in prefix if r[4]]
    iw = importance_weighted_accuracy(
        np.array([r[6] == r[2] for r in covered], dtype=bool),
        np.array([r[3] for r in covered], dtype=float), len(prefix))

    state = getattr(project, "learner_state", None)
    return {
        "project": project.pk,
        "model_version": state.version if state else 0,
        "items": counts["items"], "pending": counts["pending"], "waiting": counts["waiting"],
        "seen": seen, "queried": queried, "query_ratio": queried / seen if seen else None,
        "labels": label_stats["n"], "labels_applied": label_stats["applied"],
        "seconds_per_label": label_stats["seconds"],
        "accuracy_gold": _estimate(gold_acc, len(gold_rows)),
        "accuracy_iw": _estimate(iw.value, iw.n, low=iw.low, high=iw.high, seen=len(prefix)),
        "accuracy_queried": _estimate(q_acc, len(labelled_q)),
    }
