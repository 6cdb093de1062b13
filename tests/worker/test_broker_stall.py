"""A hung broker: a private redis-server paused with SIGSTOP accepts connections and
never answers. Web requests must still return within about a second (bounded broker waits, no
publish retry), the label is stored, and the sweep applies it once the broker is resumed.
A broker that is down (killed: its port refuses connections) must hold a request even less
(no connect retry), and a worker started before it went down applies the labels once it is back."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, LearnerState, Project
from harness.http_annotator import CSRF, ITEM, HttpAnnotator
from harness.servers import Gunicorn, PrivateRedis
from tests.support.app import Worker, digits_project, member, worker_database_url

pytestmark = [pytest.mark.services, pytest.mark.slow]

#: The bound the test holds the web server to while the broker hangs ("about 1 s").
LIMIT_S = 1.5
#: ... and while it refuses connections: a refused connect costs nothing, so the label request's
#: own time (kombu's default connect retry slept 2 s per send).
REFUSED_LIMIT_S = 1.0


def _label(person: HttpAnnotator, project_id: int, gold: dict[int, int]) -> tuple[int, int, float]:
    """Open the queue page and label its item; ``(item id, status, seconds of the POST)``."""
    status, page = person._open(f"/projects/{project_id}/")
    assert status == 200, status
    item = int(ITEM.search(page).group(1))
    csrf = CSRF.search(page).group(1)
    t0 = time.perf_counter()
    status, _ = person._open(f"/projects/{project_id}/items/{item}/label",
                             {"value": str(gold[item]), "csrfmiddlewaretoken": csrf},
                             {"HX-Request": "true", "X-CSRFToken": csrf})
    return item, status, time.perf_counter() - t0


Scene = tuple[Project, dict[int, int], HttpAnnotator, PrivateRedis, Worker]


@contextmanager
def _labelling_through(tmp_path: Path) -> Iterator[Scene]:
    """A digits project served by gunicorn with a worker (and its beat, sweeping every second) on a
    private redis-server, one label already applied; ``(project, gold, annotator, redis, worker)``,
    all stopped on the way out."""
    project = digits_project(40, params={"delta": 100.0}, look_ahead=20)
    member(project, "s0")
    gold = dict(Item.objects.filter(project=project).values_list("id", "gold"))
    update_project(project.pk)
    redis = PrivateRedis(tmp_path)
    redis.start()
    env = {"DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": worker_database_url(),
           "CELERY_BROKER_URL": redis.url, "HTTPS": "0", "ALLOWED_HOSTS": "127.0.0.1"}
    server = Gunicorn({**os.environ, **env}, workers=1, threads=2)
    worker = Worker(tmp_path / "worker.log", "-B", env={**env, "SWEEP_SECONDS": "1"})
    try:
        person = HttpAnnotator(server.base, project.pk, "s0", "pw", gold, None)
        assert person.log_in()
        _, status, _ = _label(person, project.pk, gold)  # the web server's broker connection is open
        assert status == 200
        worker.wait_for(lambda: LearnerState.objects.get(project=project).version == 1, 30,
                        "the first label to be applied")
        yield project, gold, person, redis, worker
    finally:
        server.stop()
        worker.stop()
        redis.stop()


def _three_labels_unapplied(person: HttpAnnotator, project: Project, gold: dict[int, int]) -> list[float]:
    """Label three items while the broker is out: each stored (200), none applied; their seconds."""
    waits, items = [], []
    for _ in range(3):
        item, status, seconds = _label(person, project.pk, gold)
        assert status == 200
        waits.append(seconds)
        items.append(item)
    for item in items:  # stored, not applied
        assert Label.objects.get(item_id=item, primary=True).applied_version is None
    return waits


def test_a_paused_broker_holds_no_request_and_the_sweep_applies_its_labels(services, transactional_db,
                                                                           tmp_path):
    with _labelling_through(tmp_path) as (project, gold, person, redis, worker):
        redis.pause()
        waits = _three_labels_unapplied(person, project, gold)
        t0 = time.perf_counter()
        person.cookies.clear()  # a fresh visitor: the login page and a login while the broker hangs
        assert person.log_in()
        waits.append(time.perf_counter() - t0)
        assert max(waits) < LIMIT_S, f"requests waited {waits} s on the paused broker"
        assert LearnerState.objects.get(project=project).version == 1
        redis.resume()
        worker.wait_for(lambda: LearnerState.objects.get(project=project).version == 4, 60,
                        "the sweep to apply the labels stored while the broker hung")
    applied = sorted(Label.objects.filter(project=project, primary=True).values_list("applied_version",
                                                                                       flat=True))
    assert applied == [1, 2, 3, 4]
    print(f"broker-stall wait per request: {', '.join(f'{w:.2f}' for w in waits)} s")


def test_a_broker_that_refuses_connections_holds_no_request_and_the_sweep_applies_its_labels(
        services, transactional_db, tmp_path):
    with _labelling_through(tmp_path) as (project, gold, person, redis, worker):
        redis.stop()  # nothing listens on its port now: every connect is refused
        waits = _three_labels_unapplied(person, project, gold)
        assert max(waits) < REFUSED_LIMIT_S, f"requests waited {waits} s on the refusing broker"
        redis.start()  # the same port: the worker (and its beat) connect again
        worker.wait_for(lambda: LearnerState.objects.get(project=project).version == 4, 90,
                        "the sweep to apply the labels stored while the broker was down")
    print(f"refused-broker wait per request: {', '.join(f'{w:.2f}' for w in waits)} s")
