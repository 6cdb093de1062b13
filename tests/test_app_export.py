"""Export (issue 2 item 10): the exported model predicts exactly what the app predicted."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotator.labelling.annotation import lease_next, submit_label
from annotator.labelling.models import Item, LearnerState
from annotator.labelling.pipeline import update_project
from learners import load_model

from .support.app import digits_project, member

pytestmark = pytest.mark.django_db


def test_exported_model_predicts_what_the_app_predicted(tmp_path):
    project = digits_project(150, look_ahead=4)
    user = member(project, "ann")
    update_project(project.pk)
    for _ in range(25):  # label through the app's own functions, as the queue page does
        item = lease_next(project, user)
        submit_label(project, item.pk, user, item.gold)
        update_project(project.pk)
    # decide many more items with the final model (no further labels)
    project.look_ahead = 10_000
    project.save()
    update_project(project.pk)
    version = LearnerState.objects.get(project=project).version
    assert version == 25
    same_version = list(Item.objects.filter(project=project, model_version=version).order_by("seq"))
    assert len(same_version) > 50

    path = tmp_path / "digits.npz"
    call_command("export_model", str(project.pk), str(path))
    model = load_model(path)
    assert model.predict([bytes(it.data) for it in same_version]) == [it.prediction for it in same_version]
    card = json.loads(path.with_suffix(".json").read_text())
    assert card["model_version"] == 25 and card["labels_used"] == 25 and card["algorithm"] == "mpaa-i"
    assert card["delta"] == 1.0 and card["classes"] == list(range(10))
    assert card["featurizer"]["kind"] == "image" and card["metrics"]["labels"] == 25
