"""The one path that creates projects (console form, demo command, Django admin, tests):
validated config plus the initial learner state."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotator.labelling.engine.learner_state import create_state
from annotator.labelling.models import Project
from learners import DEFAULT_ALGORITHM, default_algorithm
from learners.features import default_config, make_featurizer, new_project_config
from learners.uploads.input_rules import checked_text


def checked_project_name(name: str) -> str:
    """``name`` unchanged; ValueError when it cannot be stored (NUL, lone surrogate, too long)."""
    return checked_text(name, "the project name", Project._meta.get_field("name").max_length)


def create_project(**fields: Any) -> Project:
    """Create a project from :class:`~.models.Project` fields, see :func:`save_new_project`.

    Without an ``algorithm`` the project gets its task's default learner
    (:func:`learners.default_algorithm`: ``auto``, docs/algorithms/auto.md; CSPAA for a
    cost-sensitive task).
    """
    task = fields.get("task", Project._meta.get_field("task").get_default())
    fields.setdefault("algorithm", default_algorithm(task) if task in DEFAULT_ALGORITHM else "auto")
    return save_new_project(Project(**fields))


def save_new_project(project: Project) -> Project:
    """Save a new (unsaved) project and its initial learner state in one transaction.

    ``featurizer_config`` defaults to the default config of ``item_kind``; options it does not
    give take a new project's values (``learners.features.new_project_config``) and it is stored
    complete (every option and the version). ValueError (naming the problem) when the name
    or a class name cannot be stored (:mod:`learners.uploads.input_rules`), or the algorithm, its parameters,
    the classes or the featurizer config are invalid; nothing is saved then.
    """
    checked_project_name(project.name)
    for value in project.classes if isinstance(project.classes, list) else []:
        if isinstance(value, str):
            checked_text(value, f"class {value[:40]!r}")
    config = project.featurizer_config or default_config(project.item_kind)
    if not isinstance(config, dict) or config.get("kind") != project.item_kind:
        raise ValueError(f"featurizer_config must have kind {project.item_kind!r}")
    # complete, with its version; options not given take a new project's values
    project.featurizer_config = make_featurizer(new_project_config(config)).config()
    project.check_config()
    with transaction.atomic():
        project.save()
        create_state(project)
    return project
