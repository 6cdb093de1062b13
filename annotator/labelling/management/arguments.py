"""Argument parsing shared by the management commands (commands never import each other)."""

from django.core.management.base import CommandError

from annotator.labelling.models import Project
from learners.uploads.input_rules import whole_number


def project_arg(value: str) -> Project:
    """A project by id (a whole number within the ids' range,
    :func:`learners.uploads.input_rules.whole_number`) or by exact name; CommandError otherwise."""
    try:
        pk: int | None = whole_number(value, "a project id")
    except ValueError:
        pk = None
    project = (Project.objects.filter(pk=pk).first() if pk is not None else None) \
        or Project.objects.filter(name=value).first()
    if project is None:
        raise CommandError(f"no project with id or name {value!r}")
    return project
