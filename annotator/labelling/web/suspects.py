"""Suspected label errors (project admins): the labels most likely wrong, ranked
(:mod:`.suspects`, docs/estimates.md), each sent to the review queue with one click."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.labelling.models import Item
from annotator.labelling.projects.access import project_for
from annotator.labelling.teams.suspects import NotSuspectError, ranked_suspects, send_to_review
from learners.uploads.input_rules import whole_number

from .request import AppRequest

#: labels listed on the page, most suspect first
SHOWN = 50


@login_required
@require_GET
def suspects(request: AppRequest, pk: int) -> HttpResponse:
    """The :data:`SHOWN` labels most likely wrong, with the project's automatic threshold."""
    project = project_for(request.user, pk, admin=True)
    rows = ranked_suspects(project)
    return render(request, "labelling/suspects.html",
                  {"project": project, "rows": rows[:SHOWN], "total": len(rows)})


@login_required
@require_POST
def suspects_send(request: AppRequest, pk: int) -> HttpResponse:
    """Queue the posted ``item`` ids for the reviewers; 400 naming a bad id (not a whole number
    within the ids' range, not an item of this project, or an item with no label the ranking would
    list: :func:`.suspects.send_to_review`) and nothing queued then."""
    project = project_for(request.user, pk, admin=True)
    raw = request.POST.getlist("item")
    if not raw:
        return HttpResponse("choose at least one label to send (field 'item')", status=400,
                            content_type="text/plain")
    try:
        ids = [whole_number(v, "item") for v in raw]
    except ValueError as exc:
        return HttpResponse(f"{exc} (an item id)", status=400, content_type="text/plain")
    try:
        queued = send_to_review(project, ids)
    except (Item.DoesNotExist, NotSuspectError) as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    messages.success(request, f"{queued} label(s) sent to the review queue" if queued
                     else "those labels were in the review queue already")
    return redirect("suspects", pk=project.pk)
