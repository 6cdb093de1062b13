"""Who may see what: members see their projects, project admins and staff manage them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
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


def project_for(user: Any, pk: int, *, admin: bool = False) -> Project:
    """The project ``pk`` if ``user`` may see it (manage it, with ``admin``); 404 / 403 otherwise."""
    project = get_object_or_404(Project, pk=pk)
    if admin:
        allowed = is_project_admin(user, project)
    else:
        allowed = user.is_staff or Membership.objects.filter(user=user, project=project).exists()
    if not allowed:
        raise PermissionDenied("you are not a member of this project")
    return project
