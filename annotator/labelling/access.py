"""Who may see what: members see their projects, project admins and staff manage them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, QuerySet
from django.shortcuts import get_object_or_404

from .models import Membership, Project


def visible_projects(user: Any) -> QuerySet[Project]:
    """Every project for staff; the projects ``user`` is a member of otherwise."""
    if user.is_staff:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def is_project_admin(user: Any, project: Project) -> bool:
    """Staff, or a member with the admin role."""
    return user.is_staff or Membership.objects.filter(
        user=user, project=project, role=Membership.Role.ADMIN).exists()


def may_review(user: Any, project: Project) -> bool:
    """Whether ``user`` may use the project's review queue (docs/teams.md, "Review"): staff, and
    members with the reviewer or the admin role; never annotators."""
    return user.is_staff or Membership.objects.filter(
        user=user, project=project, role__in=[Membership.Role.REVIEWER, Membership.Role.ADMIN]).exists()


def sees_predictions(user: Any, project: Project) -> bool:
    """Whether ``user`` (a member) may see the model's guesses, scores and query probabilities:
    project admins always, annotators when the project shows its guess to them."""
    return project.show_prediction or is_project_admin(user, project)


def sees_dashboard(user: Any, project: Project) -> bool:
    """Whether ``user`` (a member) may see the dashboard and the metrics: project admins always,
    annotators when the project opens its dashboard to them."""
    return project.dashboard_for_annotators or is_project_admin(user, project)


def project_for(user: Any, pk: int, *, admin: bool = False) -> Project:
    """The project ``pk`` if ``user`` may see it (manage it, with ``admin``); 404 / 403 otherwise.

    One query: the project row with whether ``user`` has a qualifying membership.
    """
    if user.is_staff:
        return get_object_or_404(Project, pk=pk)
    roles = [Membership.Role.ADMIN] if admin else list(Membership.Role)
    member = Membership.objects.filter(user=user, project=OuterRef("pk"), role__in=roles)
    project = get_object_or_404(Project.objects.annotate(allowed=Exists(member)), pk=pk)
    if not getattr(project, "allowed", False):  # the annotation above
        raise PermissionDenied("only the project's admins may open this page" if admin
                               else "you are not a member of this project")
    return project
