"""An import fanned out in chunks (annotator/labelling/ingest/fanout.py), its tasks run here in
any order and any number of times, as workers would: every item is inserted once, in the file's
order, the first chunk is sent alone and first, a restarted job stages nothing twice."""

from __future__ import annotations

import dataclasses
import json

import pytest

from annotator.labelling.ingest import fanout, new_job
from annotator.labelling.models import ImportChunk, ImportJob, Item, Label
from learners.uploads import Record
from learners.uploads.input_rules import text_problem
from tests.support.app import text_project

pytestmark = pytest.mark.django_db

N = 23


@pytest.fixture(autouse=True)
def small_chunks(settings):
    settings.IMPORT_FIRST_CHUNK, settings.IMPORT_CHUNK = 3, 5  # 3 + 5 + 5 + 5 + 5 = 23


def upload(project, n: int = N, name: str = "m.jsonl") -> ImportJob:
    lines = b"".join(json.dumps({"text": f"message {i}", "label": "ham"}).encode() + b"\n" for i in range(n))
    return new_job(project, name, [lines])


def texts(project) -> list[str]:
    return list(Item.objects.filter(project=project).order_by("seq").values_list("text", flat=True))


def test_chunks_run_in_any_order_and_twice_insert_each_item_once_in_file_order():
    project = text_project(["already here"])
    job = upload(project)
    sent: list[list[int]] = []
    noticed: list[int] = []
    job = fanout.stage(job.pk, lambda _job, indexes: sent.append(indexes), noticed.append)
    assert job.status == "running"
    # the small first chunk inserted at once, before the others were staged; those are sent
    assert sent == [[1, 2, 3, 4]] and noticed == [project.pk]
    assert texts(project) == ["already here", "message 0", "message 1", "message 2"]
    assert list(ImportChunk.objects.filter(job=job).values_list("start", "count")) == [
        (3, 5), (8, 5), (13, 5), (18, 5)]
    assert fanout.run_chunk(job.pk, 3, noticed.append) == 0  # waits for the chunks before it
    assert fanout.run_chunk(job.pk, 2, noticed.append) == 0
    assert fanout.run_chunk(job.pk, 1, noticed.append) == 15  # lands with the ones that waited on it
    assert noticed == [project.pk, project.pk]
    assert fanout.run_chunk(job.pk, 1, noticed.append) == 0  # delivered again: nothing doubled
    assert fanout.run_chunk(job.pk, 0, noticed.append) == 0
    assert fanout.run_chunk(job.pk, 4) == 5
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == ("done", N, N)
    assert not ImportChunk.objects.filter(job=job).exists() and not job.parts.exists()
    assert texts(project) == ["already here", *(f"message {i}" for i in range(N))]
    assert list(Item.objects.filter(project=project).order_by("seq").values_list("seq", flat=True)) == list(
        range(N + 1))
    assert fanout.run_chunk(job.pk, 2) == 0 and fanout.stage(job.pk, lambda *a: None) is None


def test_a_restarted_job_sends_its_staged_chunks_again_and_stages_nothing_twice():
    project = text_project()
    job = upload(project)
    fanout.stage(job.pk, lambda *a: None)  # inserts chunk 0
    fanout.run_chunk(job.pk, 2)  # featurized, waiting for chunk 1 (whose worker died)
    ImportJob.objects.filter(pk=job.pk).update(status="waiting")  # what the sweep does to a silent job
    sent: list[list[int]] = []
    fanout.stage(job.pk, lambda _job, indexes: sent.append(indexes))
    assert sent == [[1, 2, 3, 4]] and ImportChunk.objects.filter(job=job).count() == 4
    for index in sent[0]:
        fanout.run_chunk(job.pk, index)
    job.refresh_from_db()
    assert (job.status, job.done, job.attempt) == ("done", N, 2)
    assert texts(project) == [f"message {i}" for i in range(N)]


def test_a_job_restarted_while_staging_stages_the_rest():
    project = text_project()
    job = upload(project)
    fanout.stage(job.pk, lambda *a: None)
    ImportChunk.objects.filter(job=job, index__gte=2).delete()  # its first task died after two chunks
    fanout.run_chunk(job.pk, 1)
    ImportJob.objects.filter(pk=job.pk).update(status="waiting")
    sent: list[list[int]] = []
    fanout.stage(job.pk, lambda _job, indexes: sent.append(indexes))
    assert [len(s) for s in sent] == [2]  # the first new chunk inserted at once, then the others sent
    for indexes in sent:
        for index in indexes:
            fanout.run_chunk(job.pk, index)
    job.refresh_from_db()
    assert (job.status, job.done) == ("done", N)
    assert texts(project) == [f"message {i}" for i in range(N)]


def test_a_malformed_file_is_refused_whole_and_a_cancelled_job_inserts_nothing_more():
    project = text_project()
    bad = new_job(project, "b.csv", [b"text\nok\n\n,\n"])
    job = fanout.stage(bad.pk, lambda *a: pytest.fail("nothing to send"))
    assert job.status == "failed" and "line 4" in job.error and not Item.objects.exists()
    job = upload(project)
    fanout.stage(job.pk, lambda *a: None)  # inserts chunk 0
    ImportJob.objects.filter(pk=job.pk).update(status="cancelled")
    assert fanout.run_chunk(job.pk, 1) == 0
    assert texts(project) == [f"message {i}" for i in range(3)]


def test_rows_pack_and_unpack():
    rows = [b"", b"abc", bytes(range(256))]
    assert fanout.unpack_rows(memoryview(fanout.pack_rows(rows)), 3) == rows


def test_a_staged_record_comes_back_with_every_field():
    # every field of Record set away from its default (a field added later and not staged fails
    # here): an image's bytes, vector pairs, opinions from Label Studio, the ignored columns
    values = {"where": "task 3 (Label Studio id 17)", "raw": b"\x89PNG\x00\xff", "gold": 3,
              "filename": "a.png", "opinions": (("spam", "alice@example.com"), (3, "user 2")),
              "ignored": ("lang", "id")}
    assert set(values) == {f.name for f in dataclasses.fields(Record)}
    for raw in (b"\x89PNG\x00\xff", [[0, 1.5], [7, -2.0]], "text", {"base64": "not bytes"}, {"tuple": [1]},
                "a\x00b\ud800", {"str": "x", "\x00": (1,)}):
        record = Record(**{**values, "raw": raw})
        text = json.dumps(fanout._dump(record), ensure_ascii=False)  # as the chunk's JSON column stores it
        assert "\\u0000" not in text and text_problem(text) is None  # storable in PostgreSQL's jsonb too
        assert fanout._load(json.loads(text)) == record


def test_a_chunk_staged_by_the_previous_version_is_still_read():
    assert fanout._load(["line 2", {"base64": "AAE="}, "ham", "x.png"]) == Record(
        "line 2", b"\x00\x01", "ham", "x.png")


def test_names_that_cannot_be_stored_as_text_are_staged_all_the_same():
    # an annotator's name and an ignored key holding NUL or a lone surrogate (PostgreSQL's jsonb
    # refuses both): staged encoded, read back as they were, the import done
    project = text_project()
    tasks = [{"id": 1, "data": {"text": "win a free prize now"}, "annotations": [
        {"completed_by": {"email": "a\u0000b\ud800"}, "result": [
            {"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": ["spam"]}}]}]}]
    for name, data in (("ls.json", json.dumps(tasks).encode()),
                       ("k.jsonl", json.dumps({"text": "hello", "a\u0000b": 1, "\ud800": 2}).encode())):
        job = fanout.stage(new_job(project, name, [data]).pk, lambda *a: pytest.fail("one chunk"))
        assert job.status == "done", job.error
    assert list(Item.objects.filter(project=project).order_by("seq").values_list("text", flat=True)) == [
        "win a free prize now", "hello"]
    assert Label.objects.get(project=project).annotator.username == "labelstudio+a_b_"
