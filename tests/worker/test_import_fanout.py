"""An upload fanned out over two real worker processes (PostgreSQL + Redis): every item inserted
once and in the file's order, both workers featurizing chunks; and one worker SIGKILLed in the
middle of a chunk: the chunk is redone once by the other (the sweep restarts the silent job), no
item lost or doubled."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.labelling.engine.faults import PREFIX
from annotator.labelling.models import ImportChunk, ImportJob, Item, Membership
from tests.support.app import Worker, member, text_project

pytestmark = [pytest.mark.services, pytest.mark.slow]

N = 600
#: small chunks so that two workers share them: 50 first, then 11 of 50
CHUNKS = {"IMPORT_FIRST_CHUNK": "50", "IMPORT_CHUNK": "50"}


def upload(client, project) -> ImportJob:
    client.force_login(member(project, "boss", role=Membership.Role.ADMIN))
    lines = b"".join(json.dumps({"text": f"message number {i}"}).encode() + b"\n" for i in range(N))
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile("m.jsonl", lines)})
    assert response.status_code == 302
    return ImportJob.objects.get(project=project)


def stored_in_order(project) -> None:
    texts = list(Item.objects.filter(project=project).order_by("seq").values_list("text", flat=True))
    assert texts == [f"message number {i}" for i in range(N)]  # none lost, none doubled, file order


def chunks_run(worker: Worker) -> int:
    return worker.log_path.read_text().count("import_chunk[") // 2  # "received" and "succeeded" lines


def test_an_import_is_shared_by_two_workers_and_stored_once_in_order(services, transactional_db, tmp_path,
                                                                     client):
    project = text_project()
    # both workers ready before the upload: a worker still starting while the other runs every
    # chunk would prove nothing about sharing
    workers = [Worker(tmp_path / f"w{i}.log", env=CHUNKS) for i in range(2)]
    job = upload(client, project)
    try:
        workers[0].wait_for(lambda: ImportJob.objects.get(pk=job.pk).status == "done", 120, "the import")
    finally:
        for worker in workers:
            worker.stop()
    job.refresh_from_db()
    assert (job.done, job.total, job.attempt) == (N, N, 1)
    stored_in_order(project)
    assert not ImportChunk.objects.filter(job=job).exists()
    assert all(chunks_run(w) > 0 for w in workers), [chunks_run(w) for w in workers]


def test_a_worker_killed_mid_chunk_has_its_chunk_redone_once_by_the_other(services, transactional_db,
                                                                          tmp_path, client, settings):
    settings.JOB_STALE_SECONDS = 2
    project = text_project()
    job = upload(client, project)
    hold = tmp_path / "hold"
    hold.touch()
    env = {**CHUNKS, "JOB_STALE_SECONDS": "2", "SWEEP_SECONDS": "1"}
    doomed = Worker(tmp_path / "doomed.log", env={**env, PREFIX + "IMPORT_CHUNK": str(hold)})
    doomed.wait_for(lambda: Path(f"{hold}.reached").exists(), 60, "a chunk to start")
    survivor = Worker(tmp_path / "survivor.log", "-B", env=env)
    try:
        doomed.kill()  # SIGKILL while it featurizes its chunk: no ack, nothing stored
        hold.unlink()
        survivor.wait_for(lambda: ImportJob.objects.get(pk=job.pk).status == "done", 120,
                          "the other worker to finish the import, the killed chunk redone")
    finally:
        survivor.stop()
    job.refresh_from_db()
    assert (job.done, job.total) == (N, N) and job.attempt >= 2  # restarted by the sweep
    stored_in_order(project)
    assert not ImportChunk.objects.filter(job=job).exists()
    time.sleep(0.5)
    assert Item.objects.filter(project=project).count() == N
