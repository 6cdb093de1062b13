"""The dashboard's cost-per-accuracy view: labels spent against online accuracy reached, for the
project's learner and for random querying at the same label rate, on the items with a gold class
(docs/cost.md says what "random" means here and why).

* Rows: the first :data:`~django.conf.settings.BASELINE_MAX_ITEMS` decided items that have a
  gold class and still a vector (the retention sweep drops the vectors of old auto items), in
  arrival order. Fewer than :data:`MIN_ITEMS`: no view.
* The project's learner: its logged decisions on those rows (prediction when decided, queried
  or not): x = its queries among the rows so far, y = its online accuracy on the rows so far.
* Random querying: the project's algorithm and parameters with ``query="random"`` and ``p`` =
  the learner's query ratio on the same rows, replayed on them in the same order, learning the
  gold class of each item it queries (:func:`learners.evaluation.engine.replay`); the mean of
  :data:`RUNS` runs (decision seeds 0, 1, 2). Not for learners whose state changes between
  labels (``static_between_labels = False``: OASIS, OSIS, OS, KMC): their replay runs item by
  item at tens of items per second (OASIS took over 4 minutes for 3 x 1,790 digits,
  benchmarks/COST_VIEW.md), too slow for a dashboard request; the view then shows the learner's
  own curve alone and says why.

The replay costs up to ``RUNS x BASELINE_MAX_ITEMS`` learner steps, so its result is cached and
recomputed only when the rows grow by a tenth (or the learner's configuration changes).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import scipy.sparse as sp
from django.conf import settings
from django.core.cache import cache

import learners
from learners.evaluation.engine import replay

from .models import Item, Project
from .vectors import decode

#: fewest gold rows for the view; runs of the random learner averaged; points per curve
MIN_ITEMS, RUNS, POINTS = 10, 3, 40
#: items of the stream read per query while the first gold rows are gathered
WINDOW = 5000


def rows_wanted(gold_n: int) -> int:
    """How many gold rows the view reads when ``gold_n`` decided items have a gold class:
    capped, and rounded down to a tenth so that the cached result lasts while the rows grow."""
    n = min(gold_n, settings.BASELINE_MAX_ITEMS)
    step = max(MIN_ITEMS, n // 10)
    return n - n % step


def _points(labels: np.ndarray, right: np.ndarray) -> list[tuple[float, float]]:
    """``(labels spent, online accuracy)`` after about :data:`POINTS` evenly spaced prefixes."""
    n = len(right)
    at = np.unique(np.linspace(0, n - 1, min(POINTS, n)).astype(int))
    acc = np.cumsum(right) / np.arange(1, n + 1)
    return [(float(labels[t]), float(acc[t])) for t in at]


def cost_view(project: Project, gold_n: int) -> dict[str, Any] | None:
    """The two curves and their end points (module docstring), or None with too few gold rows.

    ``{"items", "p", "runs", "active": [(labels, accuracy), ...], "random": [...],
    "active_end": (labels, accuracy), "random_end": (labels, accuracy)}``.
    """
    n = rows_wanted(gold_n)
    if n < MIN_ITEMS:
        return None
    config = json.dumps([project.pk, project.algorithm, project.learner_params(), project.classes, n],
                        sort_keys=True, default=str)
    key = "cost-view:" + hashlib.sha1(config.encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = _compute(project, n)
        cache.set(key, found, 24 * 3600)
    return found


def _first_rows(project: Project, n: int) -> list[tuple[Any, ...]]:
    """The first ``n`` rows of the module docstring ``(vector, gold, prediction, queried)``, read
    by ``seq`` windows of :data:`WINDOW` items: one ``ORDER BY seq LIMIT n`` let PostgreSQL sort
    every gold row of the stream before the limit (a bitmap scan, issue 18)."""
    rows: list[tuple[Any, ...]] = []
    wanted = Item.objects.filter(project=project, gold__isnull=False, vector__isnull=False).decided()
    last = Item.objects.filter(project=project).order_by("-seq").values_list("seq", flat=True).first()
    start = 0
    while len(rows) < n and last is not None and start <= last:
        rows += list(wanted.filter(seq__gte=start, seq__lt=start + WINDOW).order_by("seq")
                     .values_list("vector", "gold", "prediction", "queried")[:n - len(rows)])
        start += WINDOW
    return rows


def _compute(project: Project, n: int) -> dict[str, Any] | None:
    rows = _first_rows(project, n)
    index = {str(c): k for k, c in enumerate(project.classes)}
    rows = [r for r in rows if str(r[1]) in index]
    if len(rows) < MIN_ITEMS:
        return None
    n_features = project.featurizer().n_features
    X = sp.vstack([sp.csr_matrix(decode(v, n_features)) for v, *_ in rows], format="csr")
    codes = np.array([index[str(g)] for _, g, _, _ in rows], dtype=np.int64)
    live_right = np.array([str(p) == str(g) for _, g, p, _ in rows])
    live_labels = np.cumsum([bool(q) for *_, q in rows])
    p = max(float(live_labels[-1]) / len(rows), 1.0 / len(rows))  # p > 0: at least one label
    active = _points(live_labels, live_right)
    if not learners.get_spec(project.algorithm).cls.static_between_labels:
        return {"items": len(rows), "p": p, "runs": 0, "active": active, "random": [],
                "active_end": active[-1], "random_end": None}
    params = {**project.learner_params(), "query": "random", "p": p}
    labels, right = np.zeros(len(rows)), np.zeros(len(rows))
    for run in range(RUNS):
        learner = learners.make(project.algorithm, n_features=n_features, classes=project.classes, **params)
        trace = replay(learner, X, codes, np.random.default_rng(run))
        labels += np.cumsum(trace.queried)
        right += trace.pred == codes
    rand = _points(labels / RUNS, right / RUNS)
    return {"items": len(rows), "p": p, "runs": RUNS, "active": active, "random": rand,
            "active_end": active[-1], "random_end": rand[-1]}
