"""Every registered learner runs in the app through the registry, without app changes."""

from __future__ import annotations

import pytest

import learners
from annotator.labelling.models import Label, LearnerState
from annotator.labelling.reporting.simulation import simulate
from tests.support.app import digits_project, vector_records

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", sorted(learners.REGISTRY))
def test_registered_learner_drives_a_project(name):
    spec = learners.get_spec(name)
    binary = "multiclass" not in spec.tasks
    task = "binary" if binary else "multiclass"
    classes = ["zero", "one"] if binary else [0, 1, 2]
    # random querying: some learners (OS, OSIS) never query under their own rule
    project = digits_project(0, task=task, classes=classes, algorithm=name, item_kind="vectors",
                             params={"query": "random", "p": 0.5}, look_ahead=2,
                             featurizer_config={"kind": "vectors", "n_features": 8})
    from annotator.labelling.ingest import import_records

    import_records(project, vector_records(classes, 30))
    given = simulate(project, max_labels=6)
    assert given == Label.objects.filter(project=project).count() > 0
    assert LearnerState.objects.get(project=project).version == given
