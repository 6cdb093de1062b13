"""Helpers for the app tests: projects with real items, users, a real Celery worker process."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Membership, Project
from annotator.labelling.projects.creation import create_project
from harness.races import digits_project  # the one definition (benchmarks share it)
from tests.support.html import parse

ROOT = Path(__file__).resolve().parents[2]
_names = itertools.count()

SPAM = ["win a free prize now", "call me when you get home", "free entry in a weekly draw",
        "are we still on for lunch", "urgent claim your cash reward", "see you at the station"]


def queued_digits_project() -> Project:
    """30 demo digits decided with delta 100, so nearly every item waits in the queue."""
    project = digits_project(30, params={"delta": 100.0})
    update_project(project.pk)
    return project


def text_project(texts: list[str] | None = None, **fields: Any) -> Project:
    """A binary text project (ham/spam, paa-i), with ``texts`` imported (no gold)."""
    defaults = dict(name=f"text {next(_names)}", task="binary", item_kind="text",
                    classes=["ham", "spam"], algorithm="paa-i", params={"delta": 0.5}, rng_seed=3)
    project = create_project(**{**defaults, **fields})
    if texts:
        import_records(project, [Record(f"item {i}", t) for i, t in enumerate(texts)])
    return project


def member(project: Project, username: str, role: str = Membership.Role.ANNOTATOR,
           password: str = "pw") -> Any:
    """A user with ``role`` in ``project`` (created if needed)."""
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User.objects.create_user(username, password=password)
    Membership.objects.get_or_create(user=user, project=project, defaults={"role": role})
    return user


def client_for(user: Any) -> Client:
    """A test client logged in as ``user``."""
    c = Client()
    c.force_login(user)
    return c


def teach(project: Project, user: Any, until_auto: int | None = None) -> None:
    """Run the stream with ``user`` labelling every queued item with its gold class (the real
    pipeline, no worker), until nothing is pending or ``until_auto`` items were decided alone."""
    from annotator.labelling.models import Item
    from harness.chosen_labels import label_chosen

    while True:
        update_project(project.pk)
        queued = list(Item.objects.filter(project=project, status=Item.Status.QUEUED)
                      .values_list("pk", "gold"))
        auto = Item.objects.filter(project=project, status=Item.Status.AUTO).count()
        if not queued or (until_auto is not None and auto >= until_auto):
            return
        for pk, gold in queued:
            label_chosen(project, pk, user, gold)


def leased_item_id(response: Any) -> int | None:
    """The item id shown on a queue page, or None when nothing waits."""
    found = parse(response.content).find_all(has="data-item")
    return int(found[0].attrs["data-item"]) if found else None


def worker_database_url() -> str:
    """A DATABASE_URL for a worker process that points at the CURRENT (test) database."""
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Worker:
    """A real ``celery worker`` subprocess on the test database, broker and queue."""

    def __init__(self, log_path: Path, *extra_args: str, env: dict[str, str] | None = None,
                 python: str = sys.executable, wrapper: Sequence[str] = ()) -> None:
        """Start the worker; ``extra_args`` go to ``celery worker`` (e.g. ``-B``), ``env`` overrides
        environment variables of the worker process, ``python`` is the interpreter (venv) it runs in,
        ``wrapper`` a command prefix (e.g. ``ip netns exec NS``)."""
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "annotator.settings",
               "DATABASE_URL": worker_database_url(), **(env or {})}
        self.log_path = log_path
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*wrapper, python, "-m", "celery", "-A", "annotator", "worker", "--pool=solo",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO",
             f"--hostname=w{next(_names)}-{os.getpid()}@%h", *extra_args],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_for(lambda: "ready." in log_path.read_text(), 60, "the worker to start")

    def wait_for(self, condition: Any, timeout: float, what: str) -> None:
        """Poll ``condition()`` until true; AssertionError with the worker log on timeout."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; worker log:\n"
                                     + self.log_path.read_text()[-3000:])
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no cleanup, no ack, the database connection dies with the process."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def label_everything(project: Project, clients: list[Any], worker: Worker, timeout: float = 120) -> int:
    """Label every queued item through the queue pages, the clients taking turns.

    Waits for the worker whenever the queue is empty but items are still pending or labels
    are unapplied. Returns the number of labels given.
    """
    from annotator.labelling.models import Item, Label, LearnerState

    given = 0
    turn = itertools.cycle(clients)
    deadline = time.monotonic() + timeout
    while True:
        client = next(turn)
        item_id = leased_item_id(client.get(f"/projects/{project.pk}/"))
        if item_id is not None:
            gold = Item.objects.get(pk=item_id).gold
            response = client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": str(gold)})
            assert response.status_code == 302, response.content
            given += 1
            continue
        busy = (Item.objects.filter(project=project, status__in=["pending", "queued", "leased"]).exists()
                or LearnerState.objects.get(project=project).version < Label.objects.filter(
                    project=project, primary=True).count())
        if not busy:
            return given
        if time.monotonic() > deadline or worker.proc.poll() is not None:
            raise AssertionError("the worker did not keep up; log:\n" + worker.log_path.read_text()[-3000:])
        time.sleep(0.05)


def vector_records(classes: list[Any], n: int, n_features: int = 8, seed: int = 0) -> list[Record]:
    """``n`` separable vector records: class ``k`` has its mass on feature ``k`` (plus noise)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(len(classes)))
        x = rng.normal(0, 0.1, n_features)
        x[k] += 1.0
        out.append(Record(f"item {i}", [[j, float(v)] for j, v in enumerate(x)], classes[k]))
    return out


def zip_bytes(entries: dict[str, bytes]) -> bytes:
    """A deflated ZIP archive of ``{name: bytes}``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()
