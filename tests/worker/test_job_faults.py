"""Imports survive worker death: a real worker SIGKILLed in the middle of an import
(after its items were written, before the commit) leaves the job "stalled", never "running";
the sweep of a new worker restarts it and every item is stored exactly once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.labelling.engine.faults import PREFIX
from annotator.labelling.models import ImportJob, Item, Membership
from tests.support.app import Worker, member, text_project

pytestmark = [pytest.mark.services, pytest.mark.slow]

N = 300


def test_an_import_whose_worker_is_killed_is_restarted_and_stores_each_item_once(
        services, transactional_db, tmp_path, client, settings):
    settings.JOB_STALE_SECONDS = 2  # the page's judgement (this process); the workers get the same
    project = text_project()
    client.force_login(member(project, "boss", role=Membership.Role.ADMIN))
    lines = b"".join(json.dumps({"text": f"message number {i}"}).encode() + b"\n" for i in range(N))
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile("m.jsonl", lines)})
    assert response.status_code == 302
    job = ImportJob.objects.get(project=project)
    page = f"/projects/{project.pk}/imports/{job.pk}/"
    hold = tmp_path / "hold"
    hold.touch()
    env = {"JOB_STALE_SECONDS": "2", "SWEEP_SECONDS": "1"}
    doomed = Worker(tmp_path / "doomed.log", env={**env, PREFIX + "IMPORT": str(hold)})
    doomed.wait_for(lambda: Path(f"{hold}.reached").exists(), 60, "the import to write its items")
    doomed.kill()  # SIGKILL between writing the items and committing them
    hold.unlink()
    job.refresh_from_db()
    assert job.status == "running" and not Item.objects.filter(project=project).exists()
    time.sleep(2.5)  # the dead worker's job has not beaten for JOB_STALE_SECONDS
    shown = client.get(page).content.decode()
    assert "<strong>stalled</strong>" in shown and "<strong>running</strong>" not in shown
    fresh = Worker(tmp_path / "fresh.log", "-B", env=env)
    try:
        fresh.wait_for(lambda: ImportJob.objects.get(pk=job.pk).status == "done", 60,
                       "the sweep to restart the import")
    finally:
        fresh.stop()
    job.refresh_from_db()
    assert (job.done, job.total, job.attempt) == (N, N, 2)
    texts = list(Item.objects.filter(project=project).order_by("seq").values_list("text", flat=True))
    assert texts == [f"message number {i}" for i in range(N)]  # none lost, none doubled
    assert "<strong>done</strong>" in client.get(page).content.decode()
