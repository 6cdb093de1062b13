"""Who may see what: members see their projects, project admins and staff manage them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404

from annotator.labelling.models import Membership, Project

NO_SUCH_PROJECT = "no such project (or you are not one of its members)"


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


def sees_items(user: Any, project: Project) -> bool:
    """Whether ``user`` (a member) may open the item browser (docs/dataset.md): project admins
    always, annotators when the project opens it to them (they never relabel) and serves no
    honeypots: after an answer the browser would show their labelled item turn ``human`` and a
    honeypot they answered not (docs/teams.md, "Honeypots")."""
    opened = project.items_for_annotators and not project.honeypot_rate
    return opened or is_project_admin(user, project)


def project_for(user: Any, pk: int, *, admin: bool = False) -> Project:
    """The project ``pk`` if ``user`` may see it (manage it, with ``admin``).

    404 when there is no such project or ``user`` is not one of its members (the same answer,
    so that a non-member cannot tell which project ids exist); 403 when ``user`` is a member
    without the role ``admin`` asks for. One query: the project row with ``user``'s roles.
    """
    projects = Project.objects.all()
    if not user.is_staff:
        mine = Membership.objects.filter(user=user, project=OuterRef("pk"))
        projects = projects.filter(Exists(mine)).annotate(
            manager=Exists(mine.filter(role=Membership.Role.ADMIN)))
    project = projects.filter(pk=pk).first()
    if project is None:
        raise Http404(NO_SUCH_PROJECT)
    if admin and not (user.is_staff or getattr(project, "manager", False)):  # annotated above
        raise PermissionDenied("only the project's admins may open this page")
    return project
