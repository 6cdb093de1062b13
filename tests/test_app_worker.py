"""End to end with a REAL Celery worker process: SQLite file + filesystem broker (default suite)
and PostgreSQL + Redis (marker ``services``). Labels go in through the Django test client; the
worker applies them and decides new items; nothing calls the pipeline directly.
"""

from __future__ import annotations

import pytest
from django.db.models import Count
from django.test import Client

from annotator.labelling.models import Item, Label, LearnerState, Membership
from annotator.labelling.tasks import advance_stream, enqueue

from .apphelpers import Worker, digits_project, label_everything, member


@pytest.fixture
def worker(tmp_path):
    w = Worker(tmp_path / "worker.log")
    yield w
    w.stop()


def run_labelling(project, worker, n_annotators: int) -> None:
    clients = []
    for i in range(n_annotators):
        client = Client()
        client.force_login(member(project, f"annotator{i}", Membership.Role.ANNOTATOR))
        clients.append(client)
    enqueue(advance_stream, project.pk)  # what the upload task does after an import
    given = label_everything(project, clients, worker)

    labels = Label.objects.filter(project=project)
    assert given == labels.count() > 0
    assert not Item.objects.filter(project=project, status__in=["pending", "queued", "leased"]).exists()
    state = LearnerState.objects.get(project=project)
    assert state.version == labels.count()  # one new model version per label
    applied = sorted(labels.values_list("applied_version", flat=True))
    assert applied == list(range(1, labels.count() + 1))  # each label applied exactly once
    assert not labels.values("applied_version").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert state.n_decided == Item.objects.filter(project=project).count()
    if n_annotators > 1:
        by = set(labels.values_list("annotator__username", flat=True))
        assert by == {f"annotator{i}" for i in range(n_annotators)}


@pytest.mark.slow
def test_real_worker_on_sqlite_and_filesystem_broker(transactional_db, worker):
    project = digits_project(40, params={"delta": 0.5})
    run_labelling(project, worker, 1)


@pytest.mark.services
@pytest.mark.slow
def test_real_worker_on_postgresql_and_redis(services, transactional_db, worker):
    project = digits_project(300, params={"delta": 1.0})
    run_labelling(project, worker, 2)
