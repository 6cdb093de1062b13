"""Project creation and setting changes made in the Django admin take the same path as the
console's: a complete featurizer config with the initial learner state, and a history entry
(who, old -> new) for every field that changed."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from annotator.labelling.models import LearnerState, Project, ProjectChange
from learners.features import make_featurizer, new_project_config
from tests.support.app import text_project

pytestmark = pytest.mark.django_db

INLINE = {"memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
          "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000"}


def _form(project: Project | None = None, **fields: str) -> dict[str, str]:
    """The admin form of ``project`` (or of a new text project) with ``fields`` replaced."""
    base = {"name": "from admin", "task": "binary", "item_kind": "text", "classes": '["ham", "spam"]',
            "featurizer_config": '{"kind": "text"}', "algorithm": "paa-i", "params": '{"delta": 0.5}',
            "rng_seed": "0", "stream_state": "running", "look_ahead": "0", "lease_seconds": "300",
            "api_token": "t" * 43, "budget_ratio": "", "budget_per_day": "", "price_per_label": "",
            "overlap_fraction": "0", "quality_confidence": "0.95", "overlap_k": "2",
            "consensus_method": "majority", "audit_rate": "0",
            "honeypot_rate": "0"}
    if project is not None:
        base.update({"name": project.name, "classes": json.dumps(project.classes),
                     "featurizer_config": json.dumps(project.featurizer_config),
                     "algorithm": project.algorithm, "params": json.dumps(project.params),
                     "rng_seed": str(project.rng_seed), "api_token": project.api_token})
    return {**base, **INLINE, **fields}


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True, is_superuser=True)
    client.force_login(user)
    return user


def test_a_project_made_in_the_admin_gets_a_complete_config_and_a_learner_state(client, staff):
    response = client.post("/admin/labelling/project/add/", _form())
    assert response.status_code == 302, response.content.decode()[:2000]
    project = Project.objects.get(name="from admin")
    # the options the form left out take a new project's values (hashed-ngrams: norm 2, intercept)
    assert project.featurizer_config == make_featurizer(new_project_config({"kind": "text"})).config()
    assert (project.featurizer_config["norm"], project.featurizer_config["intercept"]) == (2.0, 0.5)
    assert "version" in project.featurizer_config
    assert LearnerState.objects.filter(project=project).exists()


def test_a_change_in_the_admin_is_recorded_field_by_field(client, staff):
    project = text_project()
    response = client.post(f"/admin/labelling/project/{project.pk}/change/",
                           _form(project, params='{"delta": 0.125}', lease_seconds="60"))
    assert response.status_code == 302, response.content.decode()[:2000]
    changes = {c.field: (c.old, c.new, c.user) for c in ProjectChange.objects.filter(project=project)}
    assert changes == {"params.delta": (0.5, 0.125, staff), "lease_seconds": (300, 60, staff)}
