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

The replay costs up to ``RUNS x BASELINE_MAX_ITEMS`` learner steps (11 s at 1M items under load),
so no request runs it: a worker does (``tasks.compute_cost_view`` -> :func:`refresh`)
and stores the result with the fingerprint of its inputs (:class:`..models.CostView`, one row
per project). The dashboard shows the stored result (:func:`stored_view`) and "computing..."
while it is missing or stale, i.e. computed from other inputs: the rows grew by a tenth or the
learner's configuration changed (:func:`inputs_fingerprint`); the view asks a worker for it
once per fingerprint (:func:`ask_worker`; again after :data:`ASK_AGAIN_SECONDS` when the
message was lost).
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

import numpy as np
import scipy.sparse as sp
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

import learners
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import CostView, Item, Project
from learners.evaluation.engine import replay

from .metrics import aggregates

#: fewest gold rows for the view; runs of the random learner averaged; points per curve
MIN_ITEMS, RUNS, POINTS = 10, 3, 40
#: items of the stream read per query while the first gold rows are gathered
WINDOW = 5000
#: a computation asked for and not stored after this long is asked again (its message was lost)
ASK_AGAIN_SECONDS = 600


def rows_wanted(gold_n: int) -> int:
    """How many gold rows the view reads when ``gold_n`` decided items have a gold class:
    capped, and rounded down to a tenth so that the stored result lasts while the rows grow."""
    n = min(gold_n, settings.BASELINE_MAX_ITEMS)
    step = max(MIN_ITEMS, n // 10)
    return n - n % step


def _points(labels: np.ndarray, right: np.ndarray) -> list[tuple[float, float]]:
    """``(labels spent, online accuracy)`` after about :data:`POINTS` evenly spaced prefixes."""
    n = len(right)
    at = np.unique(np.linspace(0, n - 1, min(POINTS, n)).astype(int))
    acc = np.cumsum(right) / np.arange(1, n + 1)
    return [(float(labels[t]), float(acc[t])) for t in at]


def inputs_fingerprint(project: Project, gold_n: int) -> str | None:
    """The fingerprint of what the view is computed from when ``gold_n`` decided items have a
    gold class (the project, its algorithm, parameters and classes, :func:`rows_wanted`); None
    when there are too few gold rows for a view."""
    n = rows_wanted(gold_n)
    if n < MIN_ITEMS:
        return None
    config = json.dumps([project.pk, project.algorithm, project.learner_params(), project.classes, n],
                        sort_keys=True, default=str)
    return hashlib.sha1(config.encode()).hexdigest()


def stored_view(project: Project, gold_n: int) -> tuple[dict[str, Any] | None, str | None]:
    """``(view, pending)`` for a request: the stored view (the last one computed, even from older
    inputs; None when there is none) and, when it is missing or stale, the fingerprint a worker
    should compute (None: it is current, or there are too few gold rows for a view). One query."""
    wanted = inputs_fingerprint(project, gold_n)
    if wanted is None:
        return None, None
    row = CostView.objects.filter(project=project).values_list("fingerprint", "view").first()
    if row is not None and row[0] == wanted:
        return row[1], None
    return (row[1] if row is not None else None), wanted


def stored_at(project: Project) -> Any:
    """When the stored view was last written (None: never), for the dashboard's fingerprint."""
    return CostView.objects.filter(project=project).values_list("computed_at", flat=True).first()


def ask_worker(project_id: int, fingerprint: str) -> bool:
    """Record that a worker is asked to compute ``fingerprint``; True when the caller should send
    the task: not asked for it yet, or asked more than :data:`ASK_AGAIN_SECONDS` ago (so a
    dashboard polled every 2 s sends one message, not one per poll)."""
    CostView.objects.get_or_create(project_id=project_id)
    stale = timezone.now() - timedelta(seconds=ASK_AGAIN_SECONDS)
    return bool(CostView.objects.filter(project_id=project_id)
                .filter(~Q(requested=fingerprint) | Q(requested_at__lt=stale))
                .update(requested=fingerprint, requested_at=timezone.now()))


def refresh(project_id: int) -> bool:
    """Compute and store the project's view if the stored one is stale (the worker's side);
    True when it was computed. Reads the gold count from the running aggregates (:mod:`.running_totals`)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return False
    gold_n = aggregates(project)[0].gold_n
    wanted = inputs_fingerprint(project, gold_n)
    stored = CostView.objects.filter(project=project).values_list("fingerprint", flat=True).first()
    if wanted is None or stored == wanted:
        return False
    view = compute(project, gold_n)
    CostView.objects.update_or_create(project=project, defaults={
        "fingerprint": wanted, "view": view, "computed_at": timezone.now()})
    return True


def compute(project: Project, gold_n: int) -> dict[str, Any] | None:
    """The two curves and their end points (module docstring), or None with too few gold rows;
    replays the baseline (seconds: a worker's job, :func:`refresh`).

    ``{"items", "p", "runs", "active": [(labels, accuracy), ...], "random": [...],
    "active_end": (labels, accuracy), "random_end": (labels, accuracy)}``.
    """
    n = rows_wanted(gold_n)
    return _compute(project, n) if n >= MIN_ITEMS else None


def _first_rows(project: Project, n: int) -> list[tuple[Any, ...]]:
    """The first ``n`` rows of the module docstring ``(vector, gold, prediction, queried)``, read
    by ``seq`` windows of :data:`WINDOW` items: one ``ORDER BY seq LIMIT n`` let PostgreSQL sort
    every gold row of the stream before the limit (a bitmap scan)."""
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
