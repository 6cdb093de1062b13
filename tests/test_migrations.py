"""Data migrations that keep existing projects as they ran: run forwards on a database at the
migration before, through Django's migration executor."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

import learners

BEFORE = [("labelling", "0018_label_undone_index")]
AFTER = [("labelling", "0019_pin_dada_smoothing")]


@pytest.mark.django_db(transaction=True)
def test_existing_dada_projects_keep_smoothing_1_and_new_ones_get_the_new_default():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    Project = executor.loader.project_state(BEFORE).apps.get_model("labelling", "Project")

    def project(name: str, algorithm: str, params: dict) -> None:
        Project.objects.create(name=name, task="binary", item_kind="text", classes=["ham", "spam"],
                               featurizer_config={"kind": "text"}, algorithm=algorithm, params=params)

    project("silent d-ada", "d-ada", {"delta": 0.3})
    project("silent d-amd", "d-amd", {})
    project("chosen", "d-ada", {"smoothing": 2.0})
    project("multiclass", "md-amd", {})
    project("paa", "paa-i", {"C": 1.0})

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    Project = executor.loader.project_state(AFTER).apps.get_model("labelling", "Project")
    params = dict(Project.objects.values_list("name", "params"))
    assert params == {"silent d-ada": {"delta": 0.3, "smoothing": 1.0}, "silent d-amd": {"smoothing": 1.0},
                      "chosen": {"smoothing": 2.0}, "multiclass": {}, "paa": {"C": 1.0}}
    # what a project that names nothing gets now: the binary learners' new default
    assert learners.validate_params("d-ada", {})["smoothing"] == 0.5
    assert learners.validate_params("md-amd", {})["smoothing"] == 1.0
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
