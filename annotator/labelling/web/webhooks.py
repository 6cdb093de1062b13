"""Webhooks of a project (project admins): register a URL for chosen events, see each one's
delivery log (status, attempts, last error), rotate its secret, delete it (docs/webhooks.md).

A new endpoint's secret, and a rotated one, is shown once, on the answer to that POST."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotator.labelling.models import Project, WebhookEndpoint
from annotator.labelling.projects.access import project_for
from annotator.labelling.webhooks import endpoints

from .request import AppRequest


def _page(request: AppRequest, project: Project, status: int = 200, **extra: Any) -> HttpResponse:
    hooks = [endpoints.describe(e) for e in endpoints.of_project(project)]
    return render(request, "labelling/webhooks.html",
                  {"project": project, "hooks": hooks, "events": endpoints.EVENTS, **extra}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def webhooks(request: AppRequest, pk: int) -> HttpResponse:
    """The list with its delivery logs; a POST (``url``, ``event`` ticked any number of times)
    registers an endpoint and shows its secret once, or answers 400 with the reason (nothing stored)."""
    project = project_for(request.user, pk, admin=True)
    if request.method == "GET":
        return _page(request, project)
    url, chosen = request.POST.get("url", ""), request.POST.getlist("event")
    try:
        endpoint, secret = endpoints.register(project, url, chosen, request.user)
    except ValueError as exc:
        return _page(request, project, status=400, error=str(exc), url=url, chosen=chosen)
    return _page(request, project, secret=secret, secret_for=endpoint.pk)


def _endpoint(project: Project, hook_pk: int) -> WebhookEndpoint:
    found = WebhookEndpoint.objects.filter(project=project, pk=hook_pk).first()
    if found is None:
        raise Http404("no such webhook in this project")
    return found


@login_required
@require_POST
def webhook_rotate(request: AppRequest, pk: int, hook_pk: int) -> HttpResponse:
    """A new secret for the webhook, shown once."""
    project = project_for(request.user, pk, admin=True)
    endpoint = _endpoint(project, hook_pk)
    return _page(request, project, secret=endpoints.rotate(endpoint), secret_for=endpoint.pk)


@login_required
@require_POST
def webhook_delete(request: AppRequest, pk: int, hook_pk: int) -> HttpResponse:
    """Delete the webhook and its delivery log."""
    project = project_for(request.user, pk, admin=True)
    endpoint = _endpoint(project, hook_pk)
    messages.success(request, f"webhook to {endpoint.url} deleted")
    endpoint.delete()
    return redirect("webhooks", pk=project.pk)
