"""Prodigy JSONL and Parquet uploads: read by the format's rules, bad input refused whole and
named, Parquet read a batch at a time (memory flat in the file's and its row groups' size)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.labelling.ingest import new_job, run_job
from annotator.labelling.models import ImportJob, Item, Membership
from learners.uploads import IngestError, OpenTarget, parse_upload
from learners.uploads.prodigy import murmurhash3_32, task_hashes
from tests.support.app import ROOT, member, text_project

HASHED = {"kind": "text", "name": "hashed-ngrams", "n_features": 2**16}


def _lines(*tasks: dict) -> bytes:
    return b"".join(json.dumps(t).encode() + b"\n" for t in tasks)


def _parquet(table: pa.Table, **kwargs) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out, **kwargs)
    return out.getvalue()


def test_murmurhash_matches_the_published_vectors():
    # MurmurHash3 x86 32-bit, seed 0 (mmh3's README: hash("foo") == -156908512)
    assert murmurhash3_32(b"foo") == -156908512
    assert murmurhash3_32(b"hello") & 0xFFFFFFFF == 0x248BFA47
    assert murmurhash3_32(b"") == 0
    one, two = task_hashes({"text": "a", "label": "X"}), task_hashes({"text": "a", "label": "Y"})
    assert one[0] == two[0] and one[1] != two[1]  # one input, two questions


def test_prodigy_answers_become_classes_by_the_documented_rules():
    target = OpenTarget("text")
    data = _lines(
        {"text": "binary accept", "label": "spam", "answer": "accept", "_input_hash": 1, "_task_hash": 2},
        {"text": "binary reject", "label": "spam", "answer": "reject"},
        {"text": "ignored", "label": "spam", "answer": "ignore"},
        {"text": "choice", "options": [{"id": "ham", "text": "Ham"}, {"id": "spam", "text": "Spam"}],
         "accept": ["ham"], "answer": "accept"},
        {"text": "choice by text", "options": [{"id": 1, "text": "spam"}], "accept": [1], "answer": "accept"},
        {"text": "nothing chosen", "options": [{"id": "ham"}], "accept": [], "answer": "accept"},
        {"text": "plain line", "label": "ham"})
    records = parse_upload(target, "p.jsonl", data)
    assert [(r.raw, r.gold) for r in records] == [
        ("binary accept", "spam"), ("binary reject", None), ("ignored", None), ("choice", "ham"),
        ("choice by text", "1"), ("nothing chosen", None), ("plain line", "ham")]


@pytest.mark.parametrize("line,message", [
    ({"image": "https://x/a.png", "answer": "accept"}, "line 2: the Prodigy task has no 'text'"),
    ({"label": "spam", "answer": "accept", "_input_hash": 5}, "line 2: the Prodigy task has no 'text'"),
    ({"text": "t", "answer": "maybe"}, "line 2: 'answer' must be one of accept, reject, ignore"),
    ({"text": "t", "accept": ["ham", "spam"], "answer": "accept"}, "line 2: 'accept' holds 2 options"),
])
def test_a_bad_prodigy_line_is_named(line, message):
    data = _lines({"text": "fine", "answer": "accept", "label": "ham"}, line)
    with pytest.raises(IngestError, match=message):
        parse_upload(OpenTarget("text"), "p.jsonl", data)


def test_a_url_project_reads_a_prodigy_image_url():
    data = _lines({"image": "https://x/a.png", "answer": "ignore"})
    records = parse_upload(OpenTarget("url"), "p.jsonl", data)
    assert records[0].raw == "https://x/a.png"


pytestmark = pytest.mark.django_db


def test_a_prodigy_file_with_a_line_without_text_is_refused_and_nothing_stored(client):
    project = text_project(featurizer_config=HASHED)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    good = [{"text": f"message {i}", "label": "spam", "answer": "accept"} for i in range(60)]
    data = _lines(*good, {"label": "ham", "answer": "accept"}, *good)
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile("p.jsonl", data)})
    assert response.status_code == 302  # its first records are fine: a worker checks the rest
    job = run_job(ImportJob.objects.get(project=project).pk)
    assert job.status == "failed" and "line 61: the Prodigy task has no 'text'" in job.error, job.error
    assert "nothing was imported" in job.error
    assert not Item.objects.filter(project=project).exists()


def test_a_parquet_upload_imports_texts_and_labels():
    project = text_project(featurizer_config=HASHED)
    table = pa.table({"id": list(range(5000)), "text": [f"message {i}" for i in range(5000)],
                      "label": ["spam" if i % 3 else None for i in range(5000)]})
    data = _parquet(table, row_group_size=1000)
    job = run_job(new_job(project, "items.parquet", [data[i:i + 4096] for i in range(0, len(data), 4096)]).pk)
    assert (job.status, job.done, job.total) == ("done", 5000, 5000), job.error
    rows = list(Item.objects.filter(project=project).order_by("seq").values_list("text", "gold"))
    assert rows[:3] == [("message 0", None), ("message 1", "spam"), ("message 2", "spam")]
    assert len(rows) == 5000


def test_a_parquet_file_without_the_needed_column_is_refused_on_the_form(client):
    project = text_project(featurizer_config=HASHED)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    data = _parquet(pa.table({"sentence": ["a", "b"], "label": ["ham", "spam"]}))
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile("x.parquet", data)})
    assert response.status_code == 400
    assert "the Parquet file has no &#x27;text&#x27; column" in response.content.decode()
    assert not ImportJob.objects.filter(project=project).exists()


def test_a_parquet_label_that_is_not_a_class_names_its_row():
    project = text_project(featurizer_config=HASHED)
    data = _parquet(pa.table({"text": ["a", "b", "c"], "label": ["ham", "spam", "eggs"]}))
    job = run_job(new_job(project, "x.parquet", [data]).pk)
    assert job.status == "failed" and job.error.startswith("row 3: label 'eggs' is not one of"), job.error
    assert not Item.objects.filter(project=project).exists()


def test_parquet_vectors_and_image_bytes(tmp_path):
    vectors = parse_upload(OpenTarget("vectors"), "v.parquet",
                           _parquet(pa.table({"vector": [[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]], "gold": [1, 0]})))
    assert [(r.raw, r.gold) for r in vectors] == [([[1, 1.5]], "1"), ([[0, 2.0], [2, 3.0]], "0")]
    pairs = parse_upload(OpenTarget("vectors"), "v.parquet", _parquet(pa.table({"vector": [[[3, 0.5]]]})))
    assert pairs[0].raw == [[3, 0.5]]
    # Hugging Face datasets' Image feature: a struct of the file's bytes and its path
    images = parse_upload(OpenTarget("image"), "i.parquet", _parquet(pa.table({
        "image": [{"bytes": b"\x89PNG-1", "path": "a.png"}, {"bytes": b"\x89PNG-2", "path": None}]})))
    assert [(r.raw, r.filename) for r in images] == [(b"\x89PNG-1", "a.png"), (b"\x89PNG-2", "row-2")]
    with pytest.raises(IngestError, match="not a readable Parquet file"):
        parse_upload(OpenTarget("text"), "x.parquet", b"PAR1 but not really")


# Writes a Parquet file of `n` texts in `groups` row groups (mode "write"), or parses it as the
# import does and prints the traced peak of Python's allocations and pyarrow's pool's peak (a
# fresh interpreter each: no other test's or the writer's allocations count).
MEASURE = r"""
import json, sys, tracemalloc
import pyarrow as pa, pyarrow.parquet as pq
n, groups, path, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
if mode == "write":
    words = ["free", "prize", "call", "lunch", "station", "cash", "reward", "weekly", "draw", "home"]
    texts = [" ".join(words[(i * 7 + j) % 10] for j in range(12)) + f" number {i}" for i in range(n)]
    pq.write_table(pa.table({"text": texts, "label": ["spam" if i % 3 else "ham" for i in range(n)]}),
                   path, row_group_size=n // groups)
    sys.exit()
from learners.uploads import OpenTarget, iter_upload, record_chunks
with open(path, "rb") as fh:  # warm-up
    next(iter_upload(OpenTarget("text"), "t.parquet", fh))
tracemalloc.start()
count = 0
with open(path, "rb") as fh:
    for part in record_chunks(iter_upload(OpenTarget("text"), "t.parquet", fh), 2000):
        count += len(part)
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "count": count,
                  "arrow": pa.default_memory_pool().max_memory()}))
"""


def _peak(n: int, groups: int, path) -> tuple[int, int]:
    for mode in ("write", "read"):
        out = subprocess.run([sys.executable, "-c", MEASURE, str(n), str(groups), str(path), mode], cwd=ROOT,
                             capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["count"] == n
    return result["peak"], result["arrow"]


@pytest.mark.slow
def test_parquet_parsing_memory_is_flat_in_the_file_and_row_group_size(tmp_path):
    """The traced peak of Python's allocations and pyarrow's pool's peak, for 20k rows in 4 row
    groups and 300k rows in one: ten times the rows, one row group 60 times larger, the same
    memory (pyarrow's pre-buffering would read the whole file at once)."""
    small, small_arrow = _peak(20_000, 4, tmp_path / "small.parquet")
    big, big_arrow = _peak(300_000, 1, tmp_path / "big.parquet")
    assert big < 1.25 * small + 2**20, (small, big)
    assert big_arrow < 8 * 2**20, (small_arrow, big_arrow)
    assert big_arrow < (tmp_path / "big.parquet").stat().st_size * 3, big_arrow


def test_an_image_project_reads_prodigy_data_uris_and_refuses_urls():
    import base64

    uri = "data:image/png;base64," + base64.b64encode(b"\x89PNG-bytes").decode()
    records = parse_upload(OpenTarget("image"), "i.jsonl", _lines(
        {"image": uri, "label": "3", "answer": "accept", "meta": {"file": "dir/a.png"}},
        {"image": uri, "answer": "reject", "label": "3"}))
    assert [(r.raw, r.filename, r.gold) for r in records] == [
        (b"\x89PNG-bytes", "a.png", "3"), (b"\x89PNG-bytes", "line-2", None)]
    with pytest.raises(IngestError, match="line 1: an image project needs 'image' as a data: URI"):
        parse_upload(OpenTarget("image"), "i.jsonl", _lines({"image": "https://x/a.png", "answer": "accept"}))
    with pytest.raises(IngestError, match="line 1: an image project's JSONL lines are Prodigy tasks"):
        parse_upload(OpenTarget("image"), "i.jsonl", _lines({"text": "not an image"}))
