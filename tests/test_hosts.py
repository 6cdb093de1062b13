"""Several hosts: the web server, two workers and beat each in their own network
namespace (their own network stack, joined to this one by veth pairs on a bridge), reaching
PostgreSQL and Redis only over their veth, while ten annotators label 1,000 items over HTTP:
no label lost, none applied twice. Skips with the reason where namespaces cannot be made; fails
in CI (REQUIRE_SERVICES=1)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from django.db import connection

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, LearnerState
from harness import netns
from harness.http_annotator import HttpAnnotator
from harness.servers import Gunicorn, PrivateRedis
from tests.support.app import ROOT, Worker, digits_project, member, worker_database_url
from tests.support.resources import absent

pytestmark = [pytest.mark.services, pytest.mark.slow]

LABELS = 1000
ANNOTATORS = 10


def _labels_given(project) -> int:
    return Label.objects.filter(project=project, primary=True).count()


def test_web_two_workers_and_beat_on_separate_hosts_lose_no_label(services, transactional_db, tmp_path):
    problem = netns.unavailable()
    if problem is not None:
        absent(f"cannot make network namespaces here: {problem}")
    project = digits_project(LABELS + 200, params={"delta": 100.0}, lease_seconds=15, look_ahead=40)
    for i in range(ANNOTATORS):
        member(project, f"h{i}")
    gold = dict(Item.objects.filter(project=project).values_list("id", "gold"))
    update_project(project.pk)
    hosts = netns.Hosts(["web", "w1", "w2", "beat"])
    db = connection.settings_dict
    postgres = netns.Forwarder(hosts.gateway, (db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)))
    redis = PrivateRedis(tmp_path, bind=hosts.gateway)  # listens on the bridge only
    stop = threading.Event()
    people: list[HttpAnnotator] = []
    server = beat = None
    workers: list[Worker] = []
    try:
        redis.start()
        database_url = worker_database_url().replace(f"@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/",
                                                     f"@{hosts.gateway}:{postgres.port}/")
        env = {"DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url,
               "CELERY_BROKER_URL": redis.url, "HTTPS": "0", "ALLOWED_HOSTS": hosts.addresses["web"],
               "SWEEP_SECONDS": "2"}
        server = Gunicorn(env, workers=2, threads=4, host=hosts.addresses["web"], wrapper=hosts.wrap("web"))
        workers = [Worker(tmp_path / f"{name}.log", env=env, wrapper=hosts.wrap(name))
                   for name in ("w1", "w2")]
        beat_log = open(tmp_path / "beat.log", "w")  # noqa: SIM115 - closed below
        beat = subprocess.Popen([*hosts.wrap("beat"), sys.executable, "-m", "celery", "-A", "annotator",
                                 "beat", "--loglevel=INFO"], cwd=ROOT, env={**os.environ, **env},
                                stdout=beat_log, stderr=subprocess.STDOUT)
        people = [HttpAnnotator(server.base, project.pk, f"h{i}", "pw", gold, stop)
                  for i in range(ANNOTATORS)]
        for p in people:
            p.start()

        def enough() -> bool:
            if not any(p.is_alive() for p in people):
                raise AssertionError(f"every annotator stopped: {[e for p in people for e in p.errors][:5]}")
            return _labels_given(project) >= LABELS

        workers[0].wait_for(enough, 600, f"{LABELS} labels through the web host")
        stop.set()
        for p in people:
            p.join(60)
        given = _labels_given(project)

        def all_applied() -> bool:
            return (LearnerState.objects.get(project=project).version == given
                    and not Label.objects.filter(project=project, applied_version=None).exists())

        workers[0].wait_for(all_applied, 120, "the workers to apply every label")
    finally:
        stop.set()
        for p in people:
            p.join(60)
        if server is not None:
            server.stop()
        if beat is not None:
            beat.terminate()
            beat.wait(20)
            beat_log.close()
        for w in workers:
            w.stop()
        redis.stop()
        postgres.close()
        hosts.remove()
    errors = [e for p in people for e in p.errors]
    assert not errors, errors[:5]
    labelled = [i for p in people for i in p.labelled]
    assert len(labelled) == len(set(labelled)) == given >= LABELS  # every answer stored, none twice
    assert set(labelled) == set(Label.objects.filter(project=project).values_list("item_id", flat=True))
    versions = sorted(Label.objects.filter(project=project).values_list("applied_version", flat=True))
    assert versions == list(range(1, given + 1))  # each label applied exactly once
    logs = [w.log_path.read_text() for w in workers]
    assert all("apply_labels" in log.split("ready.", 1)[1] for log in logs), "both worker hosts took part"
