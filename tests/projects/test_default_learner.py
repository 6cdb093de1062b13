"""A new project's learner (``auto``, docs/algorithms/auto.md) and its budget on a short upload:
the app makes the replay's decisions, and the plan fits the upload's length (docs/budget.md)."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from annotator.labelling.engine.stored_vectors import decode_row
from annotator.labelling.ingest import import_records
from annotator.labelling.models import Item, LearnerState
from annotator.labelling.projects.creation import create_project
from annotator.labelling.reporting.simulation import simulate
from learners.budget import BudgetController
from tests.support.app import digits_project, vector_records

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("task,classes,expected", [("binary", ["a", "b"], "auto"),
                                                   ("multiclass", [0, 1, 2], "auto"),
                                                   ("cost-sensitive", ["neg", "pos"], "cspaa")])
def test_a_project_made_without_an_algorithm_gets_its_tasks_default(task, classes, expected):
    project = create_project(name=f"default {task}", task=task, item_kind="vectors", classes=classes,
                             featurizer_config={"kind": "vectors", "n_features": 8})
    assert project.algorithm == expected == learners.default_algorithm(task)
    assert LearnerState.objects.get(project=project).revision >= 0


def test_an_existing_project_keeps_its_learner():
    project = digits_project(0, algorithm="mpaa-i")
    project.refresh_from_db()
    assert project.algorithm == "mpaa-i"


@pytest.mark.parametrize("target", [0.05, 0.3])
def test_the_app_makes_the_replays_decisions_and_holds_the_budget_of_a_short_upload(target):
    n, classes = 200, [0, 1, 2]
    project = create_project(name=f"short {target}", task="multiclass", item_kind="vectors",
                             classes=classes, featurizer_config={"kind": "vectors", "n_features": 8},
                             budget_ratio=target, look_ahead=1, rng_seed=11)
    assert project.algorithm == "auto"
    import_records(project, vector_records(classes, n, seed=4))
    simulate(project)  # an oracle answers every query from the gold labels, one at a time
    items = list(Item.objects.filter(project=project).order_by("seq"))
    assert len(items) == n and all(i.queried is not None for i in items)
    # the replay: the same learner, seed, budget (the length known: an upload) and protocol
    lrn = learners.make("auto", n_features=8, classes=classes)
    rng = np.random.default_rng(11)
    ctl = BudgetController.for_learner(target, lrn, length=n)
    for item in items:
        idx, vals = decode_row(item.vector, 8)
        d = lrn.decide_row(idx, vals, rng, ctl)
        assert (d.prediction, d.queried) == (item.prediction, item.queried), item.seq
        assert d.query_prob == pytest.approx(item.query_prob, rel=1e-12, abs=1e-15)
        if d.queried:
            lrn.learn_row(idx, vals, classes.index(item.gold))
        else:
            lrn.observe_row(idx, vals)
    ratio = sum(i.queried for i in items) / n
    assert abs(ratio / target - 1.0) <= 0.10, ratio  # held from the first item
