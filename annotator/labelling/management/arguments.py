"""Argument parsing shared by the management commands (commands never import each other)."""

from django.core.management.base import CommandError

from annotator.labelling.models import Project


def project_arg(value: str) -> Project:
    """A project by id or by exact name; CommandError otherwise."""
    project = (Project.objects.filter(pk=int(value)).first() if value.isdigit() else None) \
        or Project.objects.filter(name=value).first()
    if project is None:
        raise CommandError(f"no project with id or name {value!r}")
    return project
