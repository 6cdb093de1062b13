"""The Python client (``client/``) against the running app: real HTTP to Django's live server,
a real project token; its back-off against the app's real throttle (429 with Retry-After) and
against a server that answers 503 before 200."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pyarrow.parquet as pq
import pytest
from annotator_client import ApiError, Client, retry_after

from annotator.labelling.models import Item, Label
from tests.support.app import ROOT, member, teach, text_project

HASHED = {"kind": "text", "name": "hashed-ngrams", "n_features": 2**16}
WORDS = ["free prize now", "lunch at home", "cash reward draw", "see you at the station"]


def _items(n: int):
    for i in range(n):
        text = f"{WORDS[i % 4]} {i}"
        yield {"text": text, "gold": "spam" if i % 4 in (0, 2) else "ham"}


@pytest.mark.django_db(transaction=True)
def test_the_client_streams_items_and_reads_decisions_metrics_and_exports(live_server, tmp_path):
    project = text_project(featurizer_config=HASHED, params={"delta": 100.0})
    with Client(live_server.url, project.api_token) as api:
        created = list(api.stream_items(project.pk, _items(1100), batch_size=400))  # 3 batches
        assert [c["seq"] for c in created] == list(range(1100))
        assert Item.objects.filter(project=project).count() == 1100
        states = api.items(project.pk, [c["id"] for c in created[:5]])
        assert [s["id"] for s in states] == [c["id"] for c in created[:5]]
        assert "project" in api.metrics(project.pk)

        teach(project, member(project, "alice"))  # the learner decides; alice labels what it asks
        n = Label.objects.filter(project=project).count()
        assert n > 0
        rows = api.labels(project.pk)
        assert len(rows) == n and {r["annotator"] for r in rows} == {"alice"}
        table = pq.read_table(io.BytesIO(api.export_labels(project.pk, "parquet")))
        assert table.num_rows == n
        tasks = api.export_labels(project.pk, "prodigy").decode().splitlines()
        assert len(tasks) == n and json.loads(tasks[0])["answer"] == "accept"
        path = api.save_export(project.pk, tmp_path / "dataset.parquet", "dataset", "parquet")
        assert pq.read_table(path).num_rows == 1100
        human = api.export_dataset(project.pk, "jsonl", provenance="human").decode().splitlines()
        assert len(human) == n
        assert api.waits == []


@pytest.mark.django_db(transaction=True)
def test_a_refused_batch_raises_the_apis_message_and_stores_nothing(live_server):
    project = text_project(featurizer_config=HASHED)
    with Client(live_server.url, project.api_token) as api:
        with pytest.raises(ApiError) as refused:
            api.create_items(project.pk, [{"text": "fine"}, {"text": "bad", "gold": "eggs"}])
        assert refused.value.status == 400 and refused.value.message.startswith("item 1: label 'eggs'")
        with pytest.raises(ApiError) as wrong:
            Client(live_server.url, "not-the-token").metrics(project.pk)
        assert wrong.value.status == 403
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.django_db(transaction=True)
def test_a_refused_export_leaves_the_existing_file_as_it_was(live_server, tmp_path):
    """save_export puts the export in place only once it arrived whole: a 400 (a format the app
    does not have) and a ``what`` that is neither labels nor dataset leave the user's file
    untouched and no partial file behind; a good export then replaces it."""
    project = text_project(["win a free prize now", "see you at the station"], featurizer_config=HASHED)
    target = tmp_path / "labels.jsonl"
    target.write_bytes(b"yesterday's export\n")
    with Client(live_server.url, project.api_token) as api:
        with pytest.raises(ApiError) as refused:
            api.save_export(project.pk, target, "labels", "xlsx")
        assert refused.value.status == 400
        with pytest.raises(ValueError, match="what must be"):
            api.save_export(project.pk, target, "everything", "jsonl")
        assert target.read_bytes() == b"yesterday's export\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.jsonl"]
        assert api.save_export(project.pk, target, "dataset", "jsonl") == target
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["labels.jsonl"]


@pytest.mark.django_db(transaction=True)
def test_the_client_waits_out_the_apps_real_throttle(live_server, settings):
    """Too many wrong tokens from an address: the app answers that address's wrong tokens 429
    with Retry-After (the cool-off); the client waits that long and asks again (then 403: still
    wrong). A right token from the same address is served at once, never throttled."""
    settings.AXES_FAILURE_LIMIT = 1
    settings.AXES_COOLOFF_TIME = timedelta(seconds=1)
    project = text_project(featurizer_config=HASHED)
    with pytest.raises(ApiError):
        Client(live_server.url, "wrong", max_retries=0).metrics(project.pk)
    with Client(live_server.url, "wrong", max_retries=0) as impatient, pytest.raises(ApiError) as throttled:
        impatient.metrics(project.pk)
    assert throttled.value.status == 429
    with Client(live_server.url, project.api_token, max_retries=0) as api:
        created = api.create_items(project.pk, [{"text": "not throttled"}])
    assert api.waits == [] and Item.objects.get(pk=created[0]["id"]).text == "not throttled"
    started = time.monotonic()
    with Client(live_server.url, "wrong", max_retries=1) as patient, pytest.raises(ApiError) as wrong:
        patient.metrics(project.pk)
    assert wrong.value.status == 403 and patient.waits == [1.0] and time.monotonic() - started >= 1.0


class _Flaky(BaseHTTPRequestHandler):
    """Answers 503 (``plan``: Retry-After values, None for none) before a 201 of created items."""

    plan: ClassVar[list[str | None]] = []
    seen: ClassVar[list[float]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(time.monotonic())
        if type(self).plan:
            after = type(self).plan.pop(0)
            self.send_response(503)
            if after is not None:
                self.send_header("Retry-After", after)
            payload = b'{"error": "busy"}'
        else:
            self.send_response(201)
            payload = json.dumps({"items": [{"id": i, "seq": i, "status": "pending"}
                                            for i in range(len(body["items"]))]}).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flaky():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Flaky.seen = []
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_client_backs_off_on_503_honouring_retry_after(flaky):
    _, url = flaky
    _Flaky.plan = [None, "1"]  # no Retry-After: the back-off's first step; then one second
    with Client(url, "t", backoff=0.1) as api:
        created = list(api.stream_items(1, ({"text": str(i)} for i in range(3)), batch_size=2))
    assert len(created) == 3 and api.waits == [0.1, 1.0]
    gaps = [b - a for a, b in zip(_Flaky.seen, _Flaky.seen[1:], strict=False)]
    assert gaps[0] >= 0.1 and gaps[1] >= 1.0


def test_the_client_gives_up_after_its_retries(flaky):
    _, url = flaky
    _Flaky.plan = ["0"] * 10
    with Client(url, "t", max_retries=2) as api, pytest.raises(ApiError) as busy:
        api.create_items(1, [{"text": "x"}])
    assert busy.value.status == 503 and busy.value.message == "busy" and len(_Flaky.seen) == 3


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after("3", now) == 3.0
    assert retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now) == 0.0
    assert retry_after("soon", now) is None and retry_after(None) is None


@pytest.mark.slow
def test_pip_install_client_installs_the_package(tmp_path):
    """``pip install ./client`` as a wheel into a folder (without dependencies: httpx is this
    venv's), imported from there in a process whose path holds no checkout."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "client", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                    "--no-deps", "-w", str(wheels), str(src)], check=True, timeout=300)
    site = tmp_path / "site"
    (wheel,) = wheels.glob("*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-deps", "--target", str(site), str(wheel)], check=True, timeout=300)
    code = ("import annotator_client, sys\n"
            f"assert annotator_client.__file__.startswith({str(site)!r}), annotator_client.__file__\n"
            "print(annotator_client.Client.__name__, annotator_client.BATCH)\n")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["Client", "500"]
    assert (site / "annotator_client" / "py.typed").exists()
