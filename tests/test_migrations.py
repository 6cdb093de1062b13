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


@pytest.mark.django_db(transaction=True)
def test_disagreement_reviews_catch_up_with_the_consensus_once():
    before = [("labelling", "0032_refitrun")]
    after = [("labelling", "0033_disagreement_reviews_follow_consensus")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    Project, Item = apps.get_model("labelling", "Project"), apps.get_model("labelling", "Item")
    Consensus, Review = apps.get_model("labelling", "Consensus"), apps.get_model("labelling", "Review")
    project = Project.objects.create(name="team", task="binary", item_kind="text", classes=["ham", "spam"],
                                     featurizer_config={"kind": "text"}, algorithm="paa-i", params={})
    items = [Item.objects.create(project=project, seq=i, text=f"t{i}", status="labelled") for i in range(6)]
    for item, status, due in [(items[0], "disputed", False), (items[1], "disputed", True),
                              (items[2], "majority", False), (items[3], "agreed", False),
                              (items[4], "adjudicated", False)]:
        Consensus.objects.create(item=item, project=project, status=status, due=due)
    Review.objects.create(project=project, item=items[2], reason="disagreement")  # settled since
    Review.objects.create(project=project, item=items[3], reason="audit")  # not a disagreement
    Review.objects.create(project=project, item=items[4], reason="disagreement")  # reopened decision
    Review.objects.create(project=project, item=items[5], reason="disagreement")  # queued by hand

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    Review = executor.loader.project_state(after).apps.get_model("labelling", "Review")
    found = sorted((r.item.seq, r.reason) for r in Review.objects.all())
    assert found == [(0, "disagreement"), (3, "audit"), (4, "disagreement"), (5, "disagreement")]
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_waiting_counters_learn_the_relabels_of_queried_items_applied_before():
    """0039: ``StreamStats.undrawn_queried`` of an existing project counts its applied primary
    labels not drawn on queried items (engine/queue_counts.py), nothing else."""
    before = [("labelling", "0038_streamstats_left_out_label_given")]
    after = [("labelling", "0039_untaught_pipeline_error_undrawn_queried")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    Project, Item = apps.get_model("labelling", "Project"), apps.get_model("labelling", "Item")
    Label, StreamStats = apps.get_model("labelling", "Label"), apps.get_model("labelling", "StreamStats")
    project = Project.objects.create(name="relabelled", task="binary", item_kind="text",
                                     classes=["ham", "spam"], featurizer_config={"kind": "text"},
                                     algorithm="paa-i", params={})
    StreamStats.objects.create(project=project)
    queried = [Item.objects.create(project=project, seq=i, text=f"q{i}", status="labelled", queried=True)
               for i in range(4)]
    auto = Item.objects.create(project=project, seq=4, text="a", status="auto", queried=False)
    for item, drawn, applied, primary in [(queried[0], False, 1, True),  # counted
                                          (queried[1], False, 2, True),  # counted
                                          (queried[2], False, None, True),  # not applied yet
                                          (queried[3], True, 3, True),  # drawn: in `labels`
                                          (queried[3], False, None, False),  # not primary
                                          (auto, False, 4, True)]:  # not queried
        Label.objects.create(project=project, item=item, value="ham", drawn=drawn, applied_version=applied,
                             primary=primary)

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    StreamStats = executor.loader.project_state(after).apps.get_model("labelling", "StreamStats")
    assert StreamStats.objects.get(project_id=project.pk).undrawn_queried == 2
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _apps_at(target: list[tuple[str, str]]):
    """The database migrated to ``target``; its historical apps."""
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_the_labels_given_counter_starts_from_the_labels_stored_before():
    """0040: each project's ``LabelsGiven`` counts its opinions drawn here (undone ones included),
    not a reviewer's decision nor a label from Label Studio; a project without one gets no row."""
    apps = _apps_at([("labelling", "0039_untaught_pipeline_error_undrawn_queried")])
    Project, Item, Label = (apps.get_model("labelling", name) for name in ("Project", "Item", "Label"))
    made = {}
    for name in ("paid", "unpaid"):
        made[name] = Project.objects.create(name=name, task="binary", item_kind="text",
                                            classes=["ham", "spam"], featurizer_config={"kind": "text"},
                                            algorithm="paa-i", params={})
    item = Item.objects.create(project=made["paid"], seq=0, text="t", status="labelled")
    for kind, drawn, undone in [("opinion", True, None), ("opinion", True, "2026-01-01T00:00:00Z"),
                                ("adjudication", True, None), ("opinion", False, None)]:
        Label.objects.create(project=made["paid"], item=item, value="ham", kind=kind, drawn=drawn,
                             undone_at=undone)
    LabelsGiven = _apps_at([("labelling", "0040_labels_given")]).get_model("labelling", "LabelsGiven")
    assert dict(LabelsGiven.objects.values_list("project_id", "given")) == {made["paid"].pk: 2}
    _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
