"""Creating projects (outside the admin): validated config plus the initial learner state."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from .models import Project
from .state_store import create_state


def create_project(**fields: Any) -> Project:
    """Create a project and its initial learner state in one transaction.

    ``fields`` are :class:`~.models.Project` fields; ``featurizer_config`` defaults to the
    default config of ``item_kind`` and is stored complete (every option and the version).
    ValueError (naming the problem) when the algorithm,
    its parameters, the classes or the featurizer config are invalid.
    """
    from learners.features import default_config, make_featurizer

    config = fields.get("featurizer_config") or default_config(fields["item_kind"])
    fields["featurizer_config"] = make_featurizer(config).config()  # complete, with its version
    project = Project(**fields)
    project.check_config()
    with transaction.atomic():
        project.save()
        create_state(project)
    return project
