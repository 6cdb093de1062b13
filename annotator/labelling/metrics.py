"""Project metrics computed from the decision log (docs/architecture.md, "Metrics").

* ``items``, ``pending`` (not decided yet) and ``waiting``: items an annotator could lease
  now (:meth:`.models.ItemQuerySet.waiting`, the count the project list and the queue show).
* ``seen``: items decided so far; ``queried`` and ``query_ratio`` = queried / seen.
* ``labels``: primary labels given; ``seconds_per_label``: mean annotator time per label
  (labels with a recorded time).
* ``accuracy_gold``: exact online accuracy of the logged predictions over every decided item
  that has a known (gold) class, queried or not.
* ``accuracy_iw``: the importance-weighted (Horvitz-Thompson) estimate of online accuracy
  from queried items only, each weighted by 1/q, with its 95% interval
  (:func:`learners.evaluation.metrics.importance_weighted_accuracy`) over the prefix of the
  stream it can cover (:func:`.decisions.covered_accuracy`).
* ``accuracy_queried``: plain accuracy of the predictions on labelled queried items (a
  biased view: the learner queries the items it is unsure of).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models import Avg, Count, Q
from django.utils import timezone

from learners.evaluation.metrics import accuracy

from .decisions import covered_accuracy, decision_log
from .models import Item, Label, Project, pending_q, waiting_q


def _estimate(value: float | None, n: int, **extra: Any) -> dict[str, Any]:
    return {"value": value, "n": n, **extra}


def project_metrics(project: Project) -> dict[str, Any]:
    """The metrics of the module docstring as a JSON-able dict."""
    log = decision_log(project)
    counts = Item.objects.filter(project=project).aggregate(
        items=Count("id"), pending=Count("id", filter=pending_q()),
        waiting=Count("id", filter=waiting_q(timezone.now())))
    label_stats = Label.objects.filter(project=project, primary=True).aggregate(
        n=Count("id"), seconds=Avg("seconds"), applied=Count("id", filter=Q(applied_version__isnull=False)))
    seen = len(log)
    queried = sum(1 for d in log if d.queried)

    gold_rows = [d for d in log if d.gold is not None]
    gold_acc = (accuracy(np.array([d.gold for d in gold_rows]), np.array([d.prediction for d in gold_rows]))
                if gold_rows else None)

    labelled_q = [d for d in log if d.queried and d.label is not None]
    q_acc = (accuracy(np.array([d.label for d in labelled_q]), np.array([d.prediction for d in labelled_q]))
             if labelled_q else None)

    covered = covered_accuracy(log)
    iw = covered.estimate

    state = getattr(project, "learner_state", None)
    return {
        "project": project.pk,
        "model_version": state.version if state else 0,
        "items": counts["items"], "pending": counts["pending"], "waiting": counts["waiting"],
        "seen": seen, "queried": queried, "query_ratio": queried / seen if seen else None,
        "labels": label_stats["n"], "labels_applied": label_stats["applied"],
        "seconds_per_label": label_stats["seconds"],
        "accuracy_gold": _estimate(gold_acc, len(gold_rows)),
        "accuracy_iw": _estimate(iw.value, iw.n, low=iw.low, high=iw.high, seen=covered.seen),
        "accuracy_queried": _estimate(q_acc, len(labelled_q)),
    }
