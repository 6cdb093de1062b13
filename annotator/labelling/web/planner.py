"""The delta planner's pages (project admins): start a run (its cost shown and bounded), watch its
progress, cancel it, use a result."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.labelling.engine import jobs
from annotator.labelling.models import PlannerRun, Project
from annotator.labelling.projects.access import project_for
from annotator.labelling.projects.settings_changes import change_settings
from annotator.labelling.reporting.learner_evidence import learner_rows, no_benchmark_note
from annotator.labelling.reporting.planner import (
    RANK_METRICS,
    budget_refusal,
    candidate_params,
    cost,
    default_metric,
    is_current,
    ranked,
    tried_settings,
)
from annotator.labelling.reporting.summary import budget_summary
from annotator.labelling.worker import send
from learners.evaluation.charts import line_chart

from .forms import PlannerForm
from .request import AppRequest

#: the form's rows before any run: the project's algorithm at four deltas
DEFAULT_DELTAS = (0.1, 0.5, 1.0, 4.0)
#: a planner run in these states counts against ``settings.PLANNER_MAX_QUEUED``
QUEUED = (PlannerRun.Status.WAITING, PlannerRun.Status.RUNNING)


def chosen_metric(request: AppRequest) -> str | None:
    """The ``metric`` of the query string (None: each run's default,
    :func:`.planner.default_metric`); ValueError naming the valid ones."""
    metric = request.GET.get("metric") or None
    if metric is not None and metric not in RANK_METRICS:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(RANK_METRICS)}")
    return metric


def _bad_metric(exc: ValueError) -> HttpResponse:
    return HttpResponse(str(exc), status=400, content_type="text/plain")


@login_required
def planner(request: AppRequest, pk: int) -> HttpResponse:
    """The form (up to 4 candidates; it starts from the settings of the last run), the settings
    tried so far with their results, and the project's recent runs; POST starts a run in a worker,
    unless ``settings.PLANNER_MAX_QUEUED`` runs of the project wait or run (409, the form says why)."""
    project = project_for(request.user, pk, admin=True)
    try:
        metric = chosen_metric(request)
    except ValueError as exc:
        return _bad_metric(exc)
    last = project.planner_runs.first()
    rows = [(c["algorithm"], c["delta"]) for c in last.candidates] if last else \
        [(project.algorithm, d) for d in DEFAULT_DELTAS]
    form = PlannerForm(project, request.POST if request.method == "POST" else None, rows=rows)
    if last is not None:
        form.fields["runs"].initial = last.runs
    full = False
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with transaction.atomic():  # the project's row locked first: concurrent starts count in turn
            Project.objects.select_for_update().filter(pk=project.pk).values("pk").first()
            queued = project.planner_runs.filter(status__in=QUEUED).count()
            full = queued >= settings.PLANNER_MAX_QUEUED
            if full:
                form.add_error(None, f"{queued} planner run(s) of this project are waiting or running "
                                     f"(at most {settings.PLANNER_MAX_QUEUED} at once): wait for one "
                                     "to finish or cancel one, then start this one.")
            else:
                job = PlannerRun.objects.create(project=project, created_by=request.user,
                                                candidates=data["candidates"], runs=data["runs"],
                                                cost=data["cost"])
                send.run_planner(job.pk)
    if request.method == "POST" and not form.errors:
        messages.success(request, f"Planner run started: {len(data['candidates'])} setting(s) x "
                                  f"{data['runs']} "
                                  f"permutation(s); each result appears below as soon as it is known.")
        return redirect("planner", pk=project.pk)
    items, _ = cost(project, 1, 1)
    context = {"project": project, "form": form, "items": items, "max_cost": settings.PLANNER_MAX_COST,
               "delta": project.learner_params()["delta"], "budget": budget_summary(project),
               "budget_refusal": budget_refusal(project), "tried": tried_settings(project),
               "runs": project.planner_runs.all()[:5], "metric": metric or "", "metrics": RANK_METRICS,
               "learner_evidence": learner_rows(project.task, project.item_kind, project),
               "learner_evidence_note": no_benchmark_note(project.task, project.item_kind)}
    status = 409 if full else 400 if form.errors else 200
    return render(request, "labelling/planner.html", context, status=status)


def chart(job: PlannerRun, metric: str = "accuracy") -> str:
    """``metric`` against query ratio, one point per candidate with mean +- std whiskers over the
    permutations (inline SVG); candidates without the metric (runs from before it) are left out."""
    results = [r for r in job.results or [] if metric in r["mean"]]
    series = [(f"{r['algorithm']} delta={r['delta']:g}", [(r["mean"]["query_ratio"], r["mean"][metric])],
               False) for r in results]
    bars = [[(r["mean"]["query_ratio"], r["mean"][metric], r["std"]["query_ratio"], r["std"][metric])]
            for r in results]
    label = RANK_METRICS.get(metric, metric)
    return line_chart(series, title=f"Replay: {label} against query ratio (mean ± std)",
                      x_label="query ratio",
                      y_label=f"online {label}", width=760, height=360, log_x=False, error_bars=bars,
                      y_min=0.0, y_max=1.0)


@login_required
@require_GET
def planner_run(request: AppRequest, pk: int, run_pk: int) -> HttpResponse:
    """One run's panel (polled every second while it runs); a finished run's settings ranked by
    the query string's ``metric`` (:data:`.planner.RANK_METRICS`, 400 for another; default
    :func:`.planner.default_metric`), each not beating the majority-class baseline marked."""
    project = project_for(request.user, pk, admin=True)
    job = get_object_or_404(PlannerRun, pk=run_pk, project=project)
    try:
        asked = chosen_metric(request)
    except ValueError as exc:
        return _bad_metric(exc)
    metric = asked or default_metric(project, job.results or [])
    done = bool(job.results) and job.status == PlannerRun.Status.DONE
    return render(request, "labelling/_planner_run.html",
                  {"project": project, "job": job, "current": _current_index(project, job),
                   "budget_refusal": budget_refusal(project),
                   "replaying": replaying(job), "metric": asked or "", "rank_metric": metric,
                   "rank_label": RANK_METRICS[metric], "ranked": ranked(job.results or [], metric),
                   "chart": chart(job, metric) if done else ""})


def replaying(job: PlannerRun) -> tuple[int, dict] | None:
    """``(number from 1, candidate)`` of the setting a running run replays now (the worker replays
    the candidates in order, ``runs`` permutations each), None when it is not running."""
    if job.status != PlannerRun.Status.RUNNING or not job.candidates or not job.runs:
        return None
    index = min(job.done // job.runs, len(job.candidates) - 1)
    return index + 1, job.candidates[index]


@login_required
@require_POST
def planner_cancel(request: AppRequest, pk: int, run_pk: int) -> HttpResponse:
    """Cancel a waiting or running run (its worker stops after the permutation it is replaying)."""
    project = project_for(request.user, pk, admin=True)
    job = get_object_or_404(PlannerRun, pk=run_pk, project=project)
    jobs.cancel(PlannerRun, job.pk)
    return redirect("planner", pk=project.pk)


@login_required
@require_POST
def planner_use(request: AppRequest, pk: int, run_pk: int, index: int) -> HttpResponse:
    """Make a candidate the project's algorithm and delta (recorded in the history); 409 saying
    why, nothing changed, while the project has a label budget (:func:`.planner.budget_refusal`)."""
    project = project_for(request.user, pk, admin=True)
    job = get_object_or_404(PlannerRun, pk=run_pk, project=project, status=PlannerRun.Status.DONE)
    if not 0 <= index < len(job.candidates):
        return HttpResponse("no such candidate", status=404, content_type="text/plain")
    cand = job.candidates[index]
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        refusal = budget_refusal(project)  # read under the lock: a budget set meanwhile counts
        if refusal is not None:
            return HttpResponse(refusal, status=409, content_type="text/plain")
        params = candidate_params(project, cand["algorithm"], cand["delta"])
        changed = change_settings(project, request.user, algorithm=cand["algorithm"], params=params)
        send.items_changed(project.pk)
    messages.success(request, f"The project now runs {cand['algorithm']} with delta={cand['delta']:g} "
                              f"(from the planner)." if changed else "That setting was running already.")
    return redirect("console", pk=project.pk)


def _current_index(project: Project, job: PlannerRun) -> int | None:
    """The index of ``job``'s candidate that the project runs now, if one is."""
    return next((k for k, c in enumerate(job.candidates or [])
                 if is_current(project, c["algorithm"], c["delta"])), None)
