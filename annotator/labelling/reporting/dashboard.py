"""What the live dashboard shows: numbers, worker health, class distributions, the cost per
accuracy (:mod:`.cost_view`) and curves (inline SVG), per project.

:func:`dashboard_data` adds to :func:`.metrics.project_metrics` the per-annotator figures, the
agreement between annotators (:func:`.agreement.project_agreement`) and the annotators' quality
(:func:`.quality.annotator_quality`), both shown to admins only (these three over the project's
newest ``DASHBOARD_LABEL_WINDOW`` labels, :func:`.agreement.recent_labels`: a poll reads as many
label rows at any length of the stream), the audit of the model's own
labels (:func:`.audit_sampling.audit_estimate`) beside their importance-weighted estimate and the
project's quality target (:mod:`.stop_rule`), the per-class figures with the majority baseline
(:mod:`.class_figures`, docs/estimates.md), the worker health and the curves (the label cost is
the metrics', :func:`.metrics.label_cost`, docs/cost.md). It is
polled every 2 s, so it is cached per process and recomputed only when the project changed:
the key is the learner state's revision (bumped by every pipeline save: labels applied, items
decided) plus the newest label id (labels stored but not applied yet), the newest review and
review decision, and the newest heartbeat, and when a worker last stored the cost view (which
no request computes: ``cost_pending`` is the fingerprint a worker should compute it for, which
the view layer asks for, :func:`.cost_view.ask_worker`).
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max, QuerySet
from django.utils import timezone

from annotator.labelling.engine.queue_counts import waiting_count
from annotator.labelling.models import Item, Label, LearnerState, Project, Review
from annotator.labelling.projects.access import is_project_admin
from annotator.labelling.teams.agreement import project_agreement, recent_labels
from annotator.labelling.teams.honeypots import holds_honeypot
from annotator.labelling.teams.quality import annotator_quality
from learners.evaluation.charts import line_chart
from learners.evaluation.metrics import iw_estimate

from . import stop_rule
from .class_figures import class_figures
from .cost_view import stored_at, stored_view
from .metrics import aggregates, project_metrics
from .summary import budget_summary
from .worker_health import queue_health

T = TypeVar("T")
#: labels waiting longer than this (seconds) to be applied turn the dashboard banner red
STALE_SECONDS = 30


def health(project: Project) -> dict[str, Any]:
    """Worker health: per queue up / busy / absent (:func:`.worker_health.queue_health`; ``labels`` is
    the label queue's), labels waiting to be applied and the age of the oldest, the last failure
    of the project's pipeline (``failure``: ``{"error", "at"}``, None when its last run succeeded;
    :func:`.pipeline.update_project_recorded`) and the labels it could not teach (``untaught``:
    their items' content was dropped, docs/operations.md "Retention"). The page shows the last
    two to the project's admins only."""
    now = timezone.now()
    waiting = Label.objects.filter(project=project, primary=True, applied_version__isnull=True)
    oldest = waiting.order_by("created").values_list("created", flat=True).first()
    age = (now - oldest).total_seconds() if oldest else 0.0
    queues = queue_health()
    error, failed_at, untaught = (LearnerState.objects.filter(project=project)
                                  .values_list("pipeline_error", "pipeline_failed_at", "untaught")
                                  .first() or ("", None, 0))
    return {"queues": queues, "labels": queues[0], "labels_waiting": waiting.count(),
            "oldest_waiting_seconds": age, "stale": age > STALE_SECONDS,
            "failure": {"error": error, "at": failed_at} if failed_at is not None else None,
            "untaught": untaught}


def annotators(labels: QuerySet[Label]) -> list[dict[str, Any]]:
    """Per annotator, over their standing labels (not undone; the dashboard passes its window of
    the newest labels, :func:`.agreement.recent_labels`): ``labels``, their opinions (answers to
    honeypots included: the queue's "my labels here" counts the same), ``decisions``, the classes
    they gave as a reviewer that no annotator gave (labels of kind ``adjudication``), and the
    median seconds per opinion. ``labels + decisions`` is their rows in the labels export."""
    rows: dict[str, tuple[list[Any], list[None]]] = {}
    for name, kind, seconds in (labels.filter(undone_at__isnull=True)
                                .values_list("annotator__username", "kind", "seconds")):
        opinions, decisions = rows.setdefault(name or "(deleted user)", ([], []))
        if kind == Label.Kind.OPINION:
            opinions.append(seconds)
        else:
            decisions.append(None)
    return [{"name": name, "labels": len(secs), "decisions": len(decisions),
             "median_seconds": statistics.median([s for s in secs if s is not None])
             if any(s is not None for s in secs) else None}
            for name, (secs, decisions) in sorted(rows.items())]


def curves(project: Project) -> dict[str, list[tuple[float, float]]]:
    """The curve points from the stored checkpoints (:mod:`.running_totals`) plus the current totals
    (x = items seen or labels spent); at most ``2 x CURVE_POINTS + 1`` points whatever the stream."""
    agg, state = aggregates(project)
    points = [tuple(c[:8]) for c in agg.checkpoints]
    n, n_queried = (state.n_decided, state.n_queried) if state else (0, 0)
    if n and (not points or points[-1][0] != n):
        now = (agg.iw_seen, agg.iw_m, agg.iw_s1, agg.iw_s2) if agg.frontier == n else (None,) * 4
        points.append((n, agg.gold_n, agg.gold_correct, n_queried, *now))
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in (
        "gold", "iw", "iw_low", "iw_high", "gold_by_labels", "iw_by_labels", "query_ratio")}
    for t, gold_n, gold_correct, queried, iw_seen, iw_m, s1, s2 in points:
        if gold_n:
            acc = gold_correct / gold_n
            out["gold"].append((t, acc))
            out["gold_by_labels"].append((queried, acc))
        out["query_ratio"].append((t, queried / t))
        if iw_seen is None:
            continue  # the estimate needs every queried label of its prefix
        est = iw_estimate(s1, s2, iw_m, iw_seen)
        if est.value is not None and est.low is not None and est.high is not None:
            out["iw_by_labels"].append((queried, est.value))
            out["iw"].append((t, est.value))
            out["iw_low"].append((t, est.low))
            out["iw_high"].append((t, est.high))
    return out


def labels_per_hour(project: Project, hours: int = 24) -> list[tuple[float, float]]:
    """``(hours ago, labels in that hour)`` over the last ``hours`` hours (0 = the current hour)."""
    now = timezone.now()
    counts = [0] * hours
    for created in Label.objects.filter(project=project, created__gte=now - timedelta(hours=hours)) \
            .values_list("created", flat=True):
        counts[min(hours - 1, int((now - created).total_seconds() // 3600))] += 1
    return [(-float(h), float(c)) for h, c in enumerate(counts)][::-1]


def class_distribution(project: Project) -> dict[str, Any]:
    """Per class of the project, in class order: applied primary labels and items decided without
    a query (by predicted class), counts and shares, from the running aggregates (:mod:`.running_totals`):
    ``{"rows": [{"cls", "labels", "labels_share", "auto", "auto_share"}], "labels", "auto"}``."""
    agg, _ = aggregates(project)
    labels, auto = sum(agg.label_classes.values()), sum(agg.auto_classes.values())
    rows = []
    for c in project.classes:
        n_labels, n_auto = agg.label_classes.get(str(c), 0), agg.auto_classes.get(str(c), 0)
        rows.append({"cls": c, "labels": n_labels, "labels_share": n_labels / labels if labels else 0.0,
                     "auto": n_auto, "auto_share": n_auto / auto if auto else 0.0})
    return {"rows": rows, "labels": labels, "auto": auto}


def charts(project: Project, cost: dict[str, Any] | None = None, computing: bool = False) -> dict[str, str]:
    """The five SVG charts (inline SVG text), drawn on the server; the 95% interval of the
    importance-weighted estimate is a band, accuracies and ratios stay within [0, 1]. ``cost``:
    the cost-per-accuracy view (:func:`.cost_view.stored_view`), None when there is none;
    ``computing``: a worker is computing it (said on an empty chart)."""
    c = curves(project)
    small: dict[str, Any] = {"width": 560, "height": 340, "log_x": False, "legend_below": True, "y_min": 0.0}
    unit = {**small, "y_max": 1.0}
    band = [(x, low, high) for (x, low), (_, high) in zip(c["iw_low"], c["iw_high"], strict=True)]
    return {
        "accuracy": line_chart([("exact (gold)", c["gold"], True),
                                ("estimated (IW, covered items)", c["iw"], True)],
                               bands=[("95% interval (IW)", band)],
                               title="Online accuracy", x_label="items seen", y_label="accuracy", **unit),
        "by_labels": line_chart([("exact (gold)", c["gold_by_labels"], True),
                                 ("estimated (IW, covered items)", c["iw_by_labels"], True)],
                                title="Accuracy against labels", x_label="labels spent", y_label="accuracy",
                                **unit),
        "query_ratio": line_chart([("query ratio", c["query_ratio"], True)], title="Query ratio",
                                  x_label="items seen", y_label="queried / seen", **unit),
        "per_hour": line_chart([("labels", labels_per_hour(project), True)], title="Labels per hour",
                               x_label="hours ago", y_label="labels", **small),
        "cost": line_chart([("this learner (active)", cost["active"] if cost else [], True),
                            ("random querying, same label rate", cost["random"] if cost else [], True)],
                           title="Accuracy per item asked (items with gold)", x_label="items asked",
                           y_label="online accuracy", empty="computing…" if computing
                           else "no data yet: needs 10 decided items with gold",
                           **unit),
    }


def iw_blocker(project: Project, metrics: dict[str, Any]) -> dict[str, Any] | None:
    """Why the importance-weighted estimate stops short of the items seen: ``{"seq": the first
    queried item without an applied label, "waiting": True while it waits in the queue (False:
    labelled, the worker has not applied the label yet)}``; None when it covers every item."""
    covers = metrics["accuracy_iw"]["covers"]
    if covers >= metrics["seen"]:
        return None
    status = Item.objects.filter(project=project, seq=covers).values_list("status", flat=True).first()
    return {"seq": covers, "waiting": status in Item.AWAITING_LABEL}


def fingerprint(project: Project) -> tuple:
    """Changes whenever anything the dashboard shows (but the clock) changes."""
    revision = LearnerState.objects.filter(project=project).values_list("revision", flat=True).first()
    labels = Label.objects.filter(project=project)  # each through its index, not a scan
    newest = labels.order_by("-created").values_list("id", flat=True).first()
    undone = (labels.filter(undone_at__isnull=False).order_by("-undone_at")
              .values_list("undone_at", flat=True).first())
    reviews = Review.objects.filter(project=project).aggregate(m=Max("id"), d=Max("decided_at"))
    target = (project.quality_target, project.quality_confidence, project.stop_at_target,
              project.asking_stopped)
    return (project.pk, revision, newest, undone, reviews["m"], reviews["d"], stored_at(project), target)


def dashboard_data(project: Project) -> dict[str, Any]:
    """Metrics, annotators, cost and charts (cached by :func:`fingerprint`), plus live health and
    waiting count."""
    key = "dashboard:" + hashlib.sha1(repr(fingerprint(project)).encode()).hexdigest()
    data = cache.get(key)
    fresh = data is None
    if data is None:
        metrics = project_metrics(project)
        window = recent_labels(project)  # the same label rows at any stream length
        view, pending = stored_view(project, metrics["accuracy_gold"]["n"])
        data = {"metrics": metrics, "auto": metrics["seen"] - metrics["queried"],
                "annotators": annotators(window), "label_window": settings.DASHBOARD_LABEL_WINDOW,
                "charts": charts(project, view, pending is not None),
                "classes": class_distribution(project), "cost_view": view, "cost_pending": pending,
                "iw_blocker": iw_blocker(project, metrics)}
        data["agreement"] = project_agreement(project, window)
        data["quality"] = annotator_quality(project, window)
        quality = stop_rule.evaluate(project)  # the audit, the model labels' accuracy, the target
        data["audit"] = quality["audit"]
        data["model_labels"] = quality["model_labels"]
        data["target"] = quality["target"]
        data["per_class"] = class_figures(project, aggregates(project)[0])
        cache.set(key, data, 300)
    state = LearnerState.objects.filter(project=project).values_list("updated_at", flat=True).first()
    # waiting changes with the clock (a lease expires) and with leases, which the fingerprint misses
    metrics = data["metrics"] if fresh else {**data["metrics"], "waiting": waiting_count(project)}
    return {**data, "metrics": metrics, "health": health(project), "budget": budget_summary(project),
            "since_update": (timezone.now() - state).total_seconds() if state else None}


#: the figures of :func:`dashboard_data` only the project's admins see (they would tell annotators
#: which of their answers were checked against gold)
ADMINS_ONLY = ("agreement", "quality")


def serves_blind_checks(project: Project) -> bool:
    """Whether ``project`` mixes checks its annotators must not tell from real work into their
    queue or the model's labels: honeypots or audits (docs/teams.md)."""
    return project.honeypot_rate > 0 or project.audit_rate > 0


def annotator_snapshot(project: Project, name: str, build: Callable[[], T]) -> tuple[T, datetime | None]:
    """``(build(), None)`` live, or, while the project serves honeypots or audits
    (:func:`serves_blind_checks`), ``(value, when it was built)``: the value ``name`` of the
    project's snapshot in Django's cache, shared by every member of the project and rebuilt at
    most every ``ANNOTATOR_SNAPSHOT_SECONDS`` (0: never kept).

    The one way every figure an annotator or reviewer sees is read (the dashboard, its panel, the
    metrics API, the waiting count of the queue and the project list), so that one label does not
    move what they see: a real label changes the labels, the model version, the worker's backlog
    and the waiting items, a honeypot's answer none of them (docs/teams.md, "Honeypots")."""
    if not serves_blind_checks(project):
        return build(), None
    key = f"annotator-snapshot:{project.pk}:{name}"
    found = cache.get(key)
    if found is None:
        found = (build(), timezone.now())
        cache.add(key, found, settings.ANNOTATOR_SNAPSHOT_SECONDS)
        found = cache.get(key) or found  # another request's, when it stored one first
    return found


def annotator_figures(project: Project) -> dict[str, Any]:
    """The dashboard's figures as an annotator or reviewer sees them (the dashboard page, its
    polled panel, the metrics API: ``["metrics"]``): :func:`dashboard_data` without
    :data:`ADMINS_ONLY`, through :func:`annotator_snapshot`; ``snapshot`` says when it was taken
    (``{"taken", "minutes"}``; None: live). Only the age of the model (``since_update``) runs on
    with the clock, from the snapshot's own value. Admins call :func:`dashboard_data`: live."""
    data, taken = annotator_snapshot(project, "figures",
                                     lambda: _without_admins_figures(dashboard_data(project)))
    if taken is None:
        return {**data, "snapshot": None}
    age = (timezone.now() - taken).total_seconds()
    return {**data, "snapshot": {"taken": taken, "minutes": settings.ANNOTATOR_SNAPSHOT_SECONDS / 60},
            "since_update": None if data["since_update"] is None else data["since_update"] + age}


def waiting_for(project: Project, user: Any) -> int:
    """The items waiting in ``project`` as ``user``'s pages show the count (their queue, the project
    list). Admins: live. Others: :func:`annotator_snapshot` of the count; live (no honeypots or
    audits) it is one fewer while they hold a honeypot, as if it were the waiting item it stands in
    for (the pages agree). A snapshot moves neither with a lease nor with an answer: live, the
    count fell by one after a real label (the next item leased) and not after a honeypot's answer
    (the item it stood in for leased at last)."""
    if is_project_admin(user, project):
        return waiting_count(project)
    count, taken = annotator_snapshot(project, "waiting", lambda: waiting_count(project))
    return count if taken is not None else max(0, count - holds_honeypot(project, user))


def _without_admins_figures(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ADMINS_ONLY}

