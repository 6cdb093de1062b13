"""The review queue (docs/teams.md, "Review"): one item at a time, decided with a key press,
swapped by htmx, like the annotator's queue (same item rendering; ``static/labelling/review.js``
for its keys).

* ``GET  projects/<pk>/review/``                    the page (leases the next review).
* ``GET  projects/<pk>/review/next``                polled while nothing waits: the next panel, or 204.
* ``POST projects/<pk>/reviews/<review>/decide``    store the final ``value``; answers the next panel.
* ``POST projects/<pk>/review/undo``                reopen my latest decision; answers its panel.

With the project's ``blind_review`` the panel names the annotators "annotator 1", "annotator 2", ...

Staff and the project's reviewers and admins only (403 for annotators, 404/403 outside their
projects, :func:`.access.may_review`). Refused decisions: a review leased to another reviewer or
already decided (409), a suspect review whose label was undone since it was sent (409; the review
is withdrawn, :func:`.reviews.decide`), a value that is not a class (400), a review that is not
open any more (a disagreement its annotators settled meanwhile closes,
:func:`.consensus.sync_reviews`) or not in the project (404).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotator.labelling.annotation.actions import LeasedToOtherError
from annotator.labelling.models import Project, Review
from annotator.labelling.projects.access import may_review, project_for, sees_dashboard
from annotator.labelling.teams.reviews import (
    FINAL_REASONS,
    AlreadyDecidedError,
    WithdrawnReviewError,
    decide,
    last_decision,
    lease_review,
    opinions,
    review_counts,
    undo_decision,
)
from annotator.labelling.worker import send

from .request import AppRequest, class_buttons, item_display, polled_panel, refused_panel


def _review_project(request: AppRequest, pk: int) -> Project:
    """The project if the user may review it (403 otherwise, 404 for a missing project)."""
    project = project_for(request.user, pk)
    if not may_review(request.user, project):
        raise PermissionDenied("the review queue is for the project's reviewers")
    return project


def _panel(request: AppRequest, project: Project, review: Review | None, error: str = "",
           status: int = 200, saved: object = None) -> HttpResponse:
    """Render the review panel (or the whole page for a plain GET)."""
    item = review.item if review is not None else None
    context = {
        "project": project, "review": review, "item": item, "buttons": class_buttons(project),
        "opinions": opinions(review, blind=project.blind_review) if review is not None else [],
        "can_undo": last_decision(project, request.user) is not None,
        "audit": review is not None and review.reason == Review.Reason.AUDIT,
        "counts": review_counts(project), "error": error, "saved": saved,
        "sees_dashboard": not request.htmx and sees_dashboard(request.user, project),  # the page's link
        **item_display(project, item),
    }
    template = "labelling/_review_item.html" if request.htmx else "labelling/review.html"
    return render(request, template, context, status=status)


@never_cache
@login_required
@require_GET
def review_queue(request: AppRequest, pk: int) -> HttpResponse:
    """The review queue page: lease the next review to the reviewer and show it."""
    project = _review_project(request, pk)
    return _panel(request, project, lease_review(project, request.user))


@login_required
@require_GET
def review_next(request: AppRequest, pk: int) -> HttpResponse:
    """Polled while nothing waits: the next review's panel, or 204 when there is still none."""
    project = _review_project(request, pk)
    review = lease_review(project, request.user)
    return polled_panel(request, review, lambda: _panel(request, project, review))


@login_required
@require_POST
def review_decide(request: AppRequest, pk: int, review_pk: int) -> HttpResponse:
    """Store the posted ``value`` as the final decision of the review, then answer the next one."""
    project = _review_project(request, pk)
    try:
        done = decide(project, review_pk, request.user, request.POST.get("value"))
    except Review.DoesNotExist:
        # also a disagreement the annotators settled while it was shown (.consensus.sync_reviews)
        return _refuse(request, project, "this review is no longer open: its item was settled by its "
                       "annotators meanwhile, or there is no such review in this project", 404)
    except (AlreadyDecidedError, LeasedToOtherError, WithdrawnReviewError) as exc:
        return _refuse(request, project, str(exc), 409)
    except ValueError as exc:
        return _refuse(request, project, str(exc), 400)
    if done.reason in FINAL_REASONS:  # the item's final label: the learner follows
        send.labels_changed(project.pk)
    if not request.htmx:
        return redirect("review", pk=project.pk)
    return _panel(request, project, lease_review(project, request.user), saved=done.value)


@login_required
@require_POST
def review_undo(request: AppRequest, pk: int) -> HttpResponse:
    """Reopen my latest review decision (:func:`.reviews.undo_decision`) and show it again; 409
    when there is none."""
    project = _review_project(request, pk)
    try:
        review = undo_decision(project, request.user)
    except ValueError as exc:
        return _refuse(request, project, str(exc), 409)
    if not request.htmx:
        return redirect("review", pk=project.pk)
    return _panel(request, project, review)


def _refuse(request: AppRequest, project: Project, message: str, status: int) -> HttpResponse:
    """A refused decision (:func:`.request.refused_panel`), beside the next leased review for htmx."""
    return refused_panel(request, message, status, lambda error, code: _panel(
        request, project, lease_review(project, request.user), error, code))
