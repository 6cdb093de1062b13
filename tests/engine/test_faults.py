"""Faults on PostgreSQL + Redis with real Celery worker processes: a worker killed inside
``apply_labels``, two workers racing, and 20 annotators over HTTP against gunicorn."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from django.test import Client

import learners
from annotator.labelling.engine.faults import PREFIX
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import Item, Label, LearnerState, Project
from harness.http_annotator import CSRF, ITEM, HttpAnnotator
from harness.servers import Gunicorn, PrivateRedis
from tests.support.app import Worker, digits_project, leased_item_id, member, worker_database_url

pytestmark = [pytest.mark.services, pytest.mark.slow]


def _label_some(project: Project, client: Client, n: int) -> list[int]:
    """Label ``n`` queued items with their gold class through the queue pages."""
    done = []
    while len(done) < n:
        item_id = leased_item_id(client.get(f"/projects/{project.pk}/"))
        assert item_id is not None, "the queue ran dry"
        gold = Item.objects.get(pk=item_id).gold
        response = client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": str(gold)})
        assert response.status_code == 302
        done.append(item_id)
    return done


def _all_applied(project: Project, n: int) -> bool:
    state = LearnerState.objects.get(project=project)
    return (
        state.version == n
        and not Label.objects.filter(project=project, primary=True, applied_version=None).exists()
    )


def assert_applied_once_and_state_is_a_replay(project: Project, n: int) -> None:
    """Every label applied exactly once, version == labels, state == replay in applied order."""
    labels = list(
        Label.objects.filter(project=project, primary=True)
        .order_by("applied_version")
        .values_list("applied_version", "value", "item__vector")
    )
    assert [v for v, _, _ in labels] == list(range(1, n + 1))
    state = LearnerState.objects.get(project=project)
    assert state.version == n
    got = learners.from_bytes(bytes(state.blob))
    want = project.new_learner(got.n_features)
    for _, value, vector in labels:
        want.learn(decode(vector, got.n_features), value)
    for key, arr in want.get_state()["arrays"].items():
        np.testing.assert_array_equal(got.get_state()["arrays"][key], arr, err_msg=key)


def test_worker_killed_inside_apply_labels(services, transactional_db, tmp_path):
    project = digits_project(80, params={"delta": 100.0}, look_ahead=30)
    update_project(project.pk)
    client = Client()
    client.force_login(member(project, "ann"))
    _label_some(project, client, 12)  # no worker yet: the apply_labels messages wait in Redis
    hold = tmp_path / "hold"
    hold.touch()
    doomed = Worker(tmp_path / "doomed.log", env={PREFIX + "APPLY": str(hold)})
    doomed.wait_for(lambda: Path(f"{hold}.reached").exists(), 60, "apply_labels to reach the hook")
    doomed.kill()  # SIGKILL inside the transaction: it rolls back with the connection
    state = LearnerState.objects.get(project=project)
    assert state.version == 0 and not Label.objects.filter(applied_version__isnull=False).exists()
    hold.unlink()
    fresh = Worker(tmp_path / "fresh.log", "-B", env={"SWEEP_SECONDS": "1"})
    try:
        fresh.wait_for(lambda: _all_applied(project, 12), 90, "the new worker to apply the labels")
    finally:
        fresh.stop()
    assert_applied_once_and_state_is_a_replay(project, 12)


def test_two_workers_racing_apply_each_label_once(services, transactional_db, tmp_path):
    project = digits_project(120, params={"delta": 100.0}, look_ahead=60)
    update_project(project.pk)
    workers = [Worker(tmp_path / f"w{i}.log") for i in range(2)]
    try:
        clients = []
        for name in ("a", "b"):
            c = Client()
            c.force_login(member(project, name))
            clients.append(c)
        for _ in range(20):  # 40 labels from two annotators, each sending apply_labels
            for c in clients:
                _label_some(project, c, 1)
        workers[0].wait_for(lambda: _all_applied(project, 40), 90, "both workers to apply the labels")
    finally:
        for w in workers:
            w.stop()
    assert_applied_once_and_state_is_a_replay(project, 40)
    logs = [w.log_path.read_text() for w in workers]
    assert all("apply_labels" in log for log in logs), "both workers took part"


# --------------------------------------------------------------------------- 20 annotators
def test_twenty_annotators_label_a_1000_item_project_through_gunicorn(services, transactional_db, tmp_path):
    # leases short enough that the quitter's item returns soon, long enough that a slow round
    # trip on a loaded 2-core machine does not lose a lease to another annotator (a 409)
    project = digits_project(1000, params={"delta": 100.0}, lease_seconds=15)
    for i in range(21):
        member(project, f"a{i}")
    gold = dict(Item.objects.filter(project=project).values_list("id", "gold"))
    # the suite's settings (its fast password hasher made these users' passwords) on the test database
    env = {
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": worker_database_url(),
        "HTTPS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    server = Gunicorn(env, workers=4, threads=4)
    workers = [
        Worker(tmp_path / f"w{i}.log", "-B" if i == 0 else "--without-heartbeat", env={"SWEEP_SECONDS": "2"})
        for i in range(2)
    ]
    stop = threading.Event()
    people: list[HttpAnnotator] = []
    try:
        base = server.base
        update_project(project.pk)
        quitter = HttpAnnotator(base, project.pk, "a20", "pw", gold, stop, abandon=True)
        quitter.start()
        quitter.join(30)
        people += [HttpAnnotator(base, project.pk, f"a{i}", "pw", gold, stop) for i in range(20)]
        for p in people:
            p.start()

        def finished() -> bool:
            if not any(p.is_alive() for p in people):
                raise AssertionError(f"every annotator stopped: {[e for p in people for e in p.errors][:5]}")
            busy = Item.objects.filter(project=project, status__in=["pending", "queued", "leased"]).exists()
            labels = Label.objects.filter(project=project, primary=True).count()
            return not busy and _all_applied(project, labels)

        try:
            workers[0].wait_for(finished, 240, "the annotators to finish the project")
        except AssertionError:
            from django.db.models import Count

            statuses = Item.objects.filter(project=project).values("status").annotate(n=Count("id"))
            print(
                "STATUS",
                list(statuses),
                "LABELS",
                Label.objects.filter(project=project).count(),
                "LABELLED",
                [len(p.labelled) for p in people],
                "ERR",
                [p.errors[:2] for p in people],
            )
            raise
    finally:
        stop.set()
        for p in people:
            p.join(60)  # before the server goes
        server.stop()
        for w in workers:
            w.stop()
    errors = [e for p in people for e in p.errors]
    assert not errors, errors[:10]
    queried = Item.objects.filter(project=project, queried=True)
    labelled = [i for p in people for i in p.labelled]
    assert len(labelled) == len(set(labelled)), "an item was labelled twice"
    assert set(labelled) == set(queried.values_list("id", flat=True)), "a queried item was lost"
    assert not Label.objects.filter(project=project, primary=False).exists()  # no lease was shared
    assert quitter.abandoned in labelled, "the abandoned lease expired and went back to the queue"
    assert Item.objects.filter(project=project, status="auto").count() + queried.count() == 1000
    assert_applied_once_and_state_is_a_replay(project, len(labelled))


# ------------------------------------------------------------------------------ broker down
def test_labels_survive_a_broker_outage(services, transactional_db, tmp_path):
    import os

    project = digits_project(200, params={"delta": 100.0}, look_ahead=60)
    for i in range(3):
        member(project, f"b{i}")
    gold = dict(Item.objects.filter(project=project).values_list("id", "gold"))
    update_project(project.pk)  # 60 items wait: the annotators can go on without any worker
    redis = PrivateRedis(tmp_path)
    redis.start()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": worker_database_url(),
        "CELERY_BROKER_URL": redis.url,
        "HTTPS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    server = Gunicorn(env, workers=2, threads=1)
    stop = threading.Event()
    people: list[HttpAnnotator] = []
    worker = None
    try:
        base = server.base
        redis.stop()  # the broker goes down before anyone labels
        people += [HttpAnnotator(base, project.pk, f"b{i}", "pw", gold, stop) for i in range(3)]
        for p in people:
            p.start()
        deadline = time.monotonic() + 60
        while Label.objects.filter(project=project).count() < 30 and time.monotonic() < deadline:
            time.sleep(0.2)
        stop.set()
        for p in people:
            p.join(60)
        given = Label.objects.filter(project=project, primary=True).count()
        assert given >= 30, "the annotators could not label while the broker was down"
        assert LearnerState.objects.get(project=project).version == 0  # nothing could be applied
        redis.start()  # the broker comes back; a worker with the periodic sweep catches up
        worker = Worker(
            tmp_path / "worker.log", "-B", env={"CELERY_BROKER_URL": redis.url, "SWEEP_SECONDS": "1"}
        )
        worker.wait_for(lambda: _all_applied(project, given), 60, "the labels stored during the outage")
    finally:
        stop.set()
        server.stop()
        if worker is not None:
            worker.stop()
        redis.stop()
    errors = [e for p in people for e in p.errors]
    assert not errors, errors[:5]  # the annotators saw no error
    assert_applied_once_and_state_is_a_replay(project, given)


def test_database_connection_dropped_mid_request(services, transactional_db, tmp_path):
    """The label request's connection is terminated while its transaction is open (after the
    label row was written): the request fails with a plain 500, nothing of it is stored, and the
    next request works."""
    import os

    import psycopg

    project = digits_project(30, params={"delta": 100.0})
    member(project, "d0")
    gold = dict(Item.objects.filter(project=project).values_list("id", "gold"))
    update_project(project.pk)
    hold = tmp_path / "hold"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": worker_database_url(),
        "HTTPS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        PREFIX + "LABEL": str(hold),
    }
    server = Gunicorn(env, workers=1, threads=2)
    try:
        base = server.base
        ann = HttpAnnotator(base, project.pk, "d0", "pw", gold, threading.Event())
        assert ann.log_in()
        status, page = ann._open(f"/projects/{project.pk}/")
        item = int(ITEM.search(page).group(1))
        csrf = CSRF.search(page).group(1)
        hold.touch()
        result = {}

        def post() -> None:
            result["answer"] = ann._open(
                f"/projects/{project.pk}/items/{item}/label",
                {"value": str(gold[item]), "csrfmiddlewaretoken": csrf},
                {"HX-Request": "true", "X-CSRFToken": csrf},
            )

        request = threading.Thread(target=post)
        request.start()
        deadline = time.monotonic() + 30
        while not Path(f"{hold}.reached").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert Path(f"{hold}.reached").exists(), "the request did not reach the hold point"
        db = worker_database_url()
        with psycopg.connect(db.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                "AND state = 'idle in transaction'",
                (db.rsplit("/", 1)[1],),
            ).fetchall()
        assert killed, "no open transaction to cut"
        hold.unlink()
        request.join(30)
        status, body = result["answer"]
        assert status == 500 and "Traceback" not in body  # a clean failure, no debug page
        assert not Label.objects.filter(item_id=item).exists()  # the written label row rolled back
        assert Item.objects.get(pk=item).status == "leased"
        # the next request gets a fresh connection and succeeds
        status, page = ann._open(
            f"/projects/{project.pk}/items/{item}/label",
            {"value": str(gold[item]), "csrfmiddlewaretoken": csrf},
            {"HX-Request": "true", "X-CSRFToken": csrf},
        )
        assert status == 200 and Label.objects.filter(item_id=item, primary=True).count() == 1
    finally:
        server.stop()
