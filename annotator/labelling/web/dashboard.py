"""The live dashboard of a project: the page, and the panel it polls every 2 s (htmx)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotator.labelling.models import Item, Project
from annotator.labelling.projects.access import is_project_admin, project_for, sees_dashboard
from annotator.labelling.reporting.cost_view import ask_worker
from annotator.labelling.reporting.dashboard import annotator_figures, dashboard_data
from annotator.labelling.worker.send import cost_view_stale

from .request import AppRequest


def _dashboard_project(request: AppRequest, pk: int) -> Project:
    """Admins always; annotators of the project when it allows them (403 otherwise)."""
    project = project_for(request.user, pk)
    if not sees_dashboard(request.user, project):
        raise PermissionDenied("this project's dashboard is for its admins")
    return project


def _context(request: AppRequest, project: Project) -> dict[str, Any]:
    """The dashboard's figures: live for admins; for annotators and reviewers those of
    :func:`.dashboard.annotator_figures` (no agreement between annotators, no quality: they would
    tell them about honeypots; a snapshot while the project serves honeypots or audits). The
    console link is for admins only."""
    is_admin = is_project_admin(request.user, project)
    data = dashboard_data(project) if is_admin else annotator_figures(project)
    if data["cost_pending"] is not None and ask_worker(project.pk, data["cost_pending"]):
        cost_view_stale(project.pk)  # shown as "computing..." until a worker stored it
    return {"project": project, "is_admin": is_admin, **data}


@login_required
@require_GET
def dashboard(request: AppRequest, pk: int) -> HttpResponse:
    project = _dashboard_project(request, pk)
    context = _context(request, project)
    context["no_items"] = not Item.objects.filter(project=project).exists()  # the empty state's link
    return render(request, "labelling/dashboard.html", context)


@login_required
@require_GET
def dashboard_panel(request: AppRequest, pk: int) -> HttpResponse:
    """The numbers and charts alone (what the page's htmx poll swaps in)."""
    project = _dashboard_project(request, pk)
    return render(request, "labelling/_dashboard_panel.html", _context(request, project))
