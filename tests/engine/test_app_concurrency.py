"""Two pipeline runs at once (as two workers would): each label is applied exactly once."""

from __future__ import annotations

import threading

from django.db import connection

from annotator.labelling.engine import learner_state
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, LearnerState
from tests.support.app import digits_project, member


def test_concurrent_runs_apply_each_label_once(transactional_db):
    project = digits_project(40, look_ahead=8)
    user = member(project, "ann")
    update_project(project.pk)
    for item in Item.objects.filter(project=project, status="queued"):
        Label.objects.create(item=item, project=project, annotator=user, value=item.gold)
        Item.objects.filter(pk=item.pk).update(status="labelled")
    barrier = threading.Barrier(2)
    outcomes, errors = [], []

    def run() -> None:
        try:
            barrier.wait()
            outcomes.append(update_project(project.pk))
        except Exception as exc:  # reported below with the assertion
            errors.append(exc)
        finally:
            connection.close()

    learner_state._CACHE.clear()
    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(o.applied for o in outcomes) == [0, 8]
    assert LearnerState.objects.get(project=project).version == 8
    assert sorted(Label.objects.values_list("applied_version", flat=True)) == list(range(1, 9))
