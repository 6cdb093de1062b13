"""The delta planner's pages (project admins): start a run (its cost shown and bounded), watch its
progress, cancel it, use a result."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

import learners
from learners.evaluation.charts import line_chart

from . import enqueue, jobs
from .access import project_for
from .changes import change_settings
from .models import PlannerRun, Project
from .planner import MAX_CANDIDATES, candidate_params, check_cost, cost
from .web import AppRequest


def _candidates(request: AppRequest, project: Project) -> list[dict]:
    """The posted rows ``algorithm-i`` / ``delta-i`` (blank rows ignored), validated."""
    out = []
    for i in range(MAX_CANDIDATES):
        algorithm = request.POST.get(f"algorithm-{i}", "").strip()
        delta = request.POST.get(f"delta-{i}", "").strip()
        if not algorithm and not delta:
            continue
        params = candidate_params(project, algorithm, delta)
        out.append({"algorithm": algorithm, "delta": params["delta"]})
    if not out:
        raise ValueError("give at least one candidate (algorithm and delta)")
    return out


@login_required
def planner(request: AppRequest, pk: int) -> HttpResponse:
    """The form (up to 4 candidates) and the project's runs; POST starts a run in a worker."""
    project = project_for(request.user, pk, admin=True)
    error = ""
    if request.method == "POST":
        try:
            candidates = _candidates(request, project)
            runs = int(request.POST.get("runs", 5))
            if not 1 <= runs <= 20:
                raise ValueError("runs must be between 1 and 20")
            run_cost = check_cost(project, len(candidates), runs)
        except ValueError as exc:
            error = str(exc)
        else:
            with transaction.atomic():
                job = PlannerRun.objects.create(project=project, created_by=request.user,
                                                candidates=candidates, runs=runs, cost=run_cost)
                enqueue.run_planner(job.pk)
            return redirect("planner", pk=project.pk)
    defaults = [(project.algorithm, d) for d in (0.1, 0.5, 1.0, 4.0)]
    items, _ = cost(project, 1, 1)
    context = {"project": project, "error": error, "rows": defaults, "items": items,
               "max_cost": settings.PLANNER_MAX_COST,
               "algorithms": learners.names_for_task(project.task), "runs": project.planner_runs.all()[:5]}
    return render(request, "labelling/planner.html", context, status=400 if error else 200)


def chart(job: PlannerRun) -> str:
    """Accuracy against query ratio, one point per candidate (inline SVG)."""
    series = [(f"{r['algorithm']} delta={r['delta']:g}",
               [(r["mean"]["query_ratio"], r["mean"]["accuracy"])], False) for r in job.results or []]
    return line_chart(series, title="Replay: accuracy against query ratio", x_label="query ratio",
                      y_label="online accuracy", width=560, height=340, log_x=False)


@login_required
@require_GET
def planner_run(request: AppRequest, pk: int, run_pk: int) -> HttpResponse:
    """One run's panel (polled every second while it runs)."""
    project = project_for(request.user, pk, admin=True)
    job = get_object_or_404(PlannerRun, pk=run_pk, project=project)
    return render(request, "labelling/_planner_run.html",
                  {"project": project, "job": job,
                   "chart": chart(job) if job.results and job.status == PlannerRun.Status.DONE else ""})


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
    """Make a candidate the project's algorithm and delta (recorded in the history)."""
    project = project_for(request.user, pk, admin=True)
    job = get_object_or_404(PlannerRun, pk=run_pk, project=project, status=PlannerRun.Status.DONE)
    if not 0 <= index < len(job.candidates):
        return HttpResponse("no such candidate", status=404, content_type="text/plain")
    cand = job.candidates[index]
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        params = candidate_params(project, cand["algorithm"], cand["delta"])
        change_settings(project, request.user, algorithm=cand["algorithm"], params=params)
        enqueue.items_changed(project.pk)
    return redirect("console", pk=project.pk)
