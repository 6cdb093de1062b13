"""Streamed uploads: memory flat in the file's size, bad input mid-file.

The memory tests measure the peak of Python's allocations (``tracemalloc``) while a file is
parsed, chunked and featurized, for a file and for one ten times larger, in a fresh interpreter
each (no allocation of another test counts): the peak must not grow with the file and must stay
well under the larger file's size. They count bytes, never time.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.labelling import ingest
from annotator.labelling.ingest import new_job, run_job, upload_file
from annotator.labelling.models import ImportJob, Item, Membership, UploadPart
from learners import uploads
from learners.uploads import OpenTarget, iter_upload
from tests.support.app import ROOT, digits_project, member, text_project

HASHED = {"kind": "text", "name": "hashed-ngrams", "n_features": 2**16}

# Writes a file of `n` records of one format to `path` (before measuring), then parses,
# chunks and featurizes it as the import does and prints the peak of traced allocations.
MEASURE = r"""
import gzip, io, json, sys, tracemalloc, zipfile
import numpy as np
from learners.features import make_featurizer
from learners.uploads import OpenTarget, featurize_part, iter_upload, record_chunks

fmt, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)

def png(seed):
    from PIL import Image
    noise = np.random.default_rng(seed).integers(0, 256, (160, 160), dtype=np.uint8)  # incompressible
    out = io.BytesIO()
    Image.fromarray(noise).save(out, format="PNG")
    return out.getvalue()

words = ["free", "prize", "call", "lunch", "station", "cash", "reward", "weekly", "draw", "home"]
def text(i):
    return " ".join(words[j] for j in rng.integers(0, len(words), 12)) + f" number {i}"

if fmt == "zip":
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for i in range(n):
            zf.writestr(f"{i % 2}/img{i}.png", png(i))
    target, featurizer = OpenTarget("image"), make_featurizer({"kind": "image", "width": 16, "height": 16})
else:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as fh:
        if fmt == "csv":
            fh.write(b"text,label\n")
        for i in range(n):
            if fmt == "csv":
                fh.write(f"{text(i)},{'spam' if i % 3 else 'ham'}\n".encode())
            elif fmt == "jsonl":
                fh.write(json.dumps({"text": text(i), "label": "spam" if i % 3 else "ham"}).encode() + b"\n")
            else:
                fh.write(f"{1 if i % 3 else -1} " .encode() + " ".join(
                    f"{j + 1}:{v:.4f}" for j, v in enumerate(rng.random(40))).encode() + b"\n")
    if fmt == "svm":
        target = OpenTarget("vectors", {"n_features": 40})
        featurizer = make_featurizer({"kind": "vectors", "n_features": 40})
    else:
        target = OpenTarget("text")
        featurizer = make_featurizer({"kind": "text", "name": "hashed-ngrams", "n_features": 2**16})
name = path.rsplit("/", 1)[-1]
with open(path, "rb") as fh:  # warm-up: first-use caches are not the file's cost
    featurize_part(featurizer, [next(iter_upload(target, name, fh))])
tracemalloc.start()
count = 0
with open(path, "rb") as fh:
    for part in record_chunks(iter_upload(target, name, fh), 2000, 2**18):  # chunks of 256 KB
        featurize_part(featurizer, part)
        count += len(part)
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "count": count}))
"""


def _peak(fmt: str, n: int, path) -> int:
    out = subprocess.run([sys.executable, "-c", MEASURE, fmt, str(n), str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["count"] == n
    return result["peak"]


@pytest.mark.slow
@pytest.mark.parametrize("fmt,name,n", [("csv", "t.csv", 5000), ("jsonl", "t.jsonl.gz", 5000),
                                        ("svm", "v.svm", 2000), ("zip", "i.zip", 40)])
def test_parsing_memory_stays_flat_in_the_file_size(tmp_path, fmt, name, n):
    small = _peak(fmt, n, tmp_path / f"small-{name}")
    big_path = tmp_path / f"big-{name}"
    big = _peak(fmt, 10 * n, big_path)
    size = len(gzip.decompress(big_path.read_bytes())) if name.endswith(".gz") else big_path.stat().st_size
    # ten times the records (many chunks), about the same peak, far below the file's content
    assert big < 1.25 * small + 2**20, (small, big)
    assert big < size / 2, (big, size)


# ------------------------------------------------------------------- the app's streamed import
pytestmark = pytest.mark.django_db


def _jsonl(n: int, start: int = 0) -> bytes:
    return b"".join(json.dumps({"text": f"message number {i}", "label": "spam" if i % 2 else "ham"}).encode()
                    + b"\n" for i in range(start, start + n))


def test_an_upload_is_stored_in_parts_and_read_back_with_random_access(monkeypatch):
    monkeypatch.setattr(upload_file, "PART_BYTES", 1000)
    project = text_project(featurizer_config=HASHED)
    data = bytes(range(256)) * 20  # 5,120 bytes: parts of 1,000, the last one of 120
    job = new_job(project, "x.csv", [data[:7], data[7:3000], data[3000:]])
    assert job.size == len(data) and UploadPart.objects.filter(job=job).count() == 6
    with upload_file.open_upload(job) as fh:
        assert fh.read() == data
        fh.seek(995)
        assert fh.read(10) == data[995:1005]  # across two parts
        fh.seek(-3, io.SEEK_END)
        assert fh.read() == data[-3:]


def test_a_zip_is_read_member_by_member_across_parts(monkeypatch):
    monkeypatch.setattr(upload_file, "PART_BYTES", 500)
    project = digits_project(0)
    from annotator.labelling.projects.demo import digit_png
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(6):
            pixels = np.zeros(64)
            pixels[i] = 16
            zf.writestr(f"{i}/d{i}.png", digit_png(pixels))
    job = run_job(new_job(project, "d.zip", [archive.getvalue()]).pk)
    assert (job.status, job.done, job.total) == ("done", 6, 6), job.error
    stored = Item.objects.filter(project=project).order_by("seq")
    assert [(it.filename, it.gold) for it in stored] == [(f"d{i}.png", i) for i in range(6)]
    assert not UploadPart.objects.filter(job=job).exists()  # the file is dropped once imported


def _import_peak(n: int) -> int:
    """Traced peak of Python allocations while a worker imports a JSONL file of ``n`` items."""
    import tracemalloc

    project = text_project(featurizer_config=HASHED)
    data = _jsonl(n)
    job = new_job(project, "big.jsonl", [data[i:i + 65536] for i in range(0, len(data), 65536)])
    tracemalloc.start()
    try:
        job = run_job(job.pk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (job.status, job.done, job.total) == ("done", n, n), job.error
    assert Item.objects.filter(project=project).count() == n
    return peak


@pytest.mark.slow
def test_an_import_holds_a_part_and_a_chunk_not_the_file(monkeypatch):
    """The app's side: the file goes through the database in parts and is stored a chunk at a
    time; the traced peak of a whole import does not grow with the file."""
    monkeypatch.setattr(upload_file, "PART_BYTES", 64 * 1024)
    monkeypatch.setattr(uploads, "CHUNK", 250)
    _import_peak(500)  # warm-up: first-use caches
    small = _import_peak(1000)
    big = _import_peak(10_000)  # 40 chunks, 9 parts
    assert big < 1.25 * small + 2**19, (small, big)


def test_a_bad_line_deep_in_the_file_fails_the_job_before_anything_is_stored(client, monkeypatch):
    monkeypatch.setattr(uploads, "CHUNK", 100)
    project = text_project(featurizer_config=HASHED)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    data = _jsonl(1000) + b'{"text": "unfinished\n' + _jsonl(10, 1000)
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile("m.jsonl", data)})
    assert response.status_code == 302
    job = run_job(ImportJob.objects.get(project=project).pk)
    assert job.status == "failed" and "line 1001: invalid JSON" in job.error, job.error
    assert "nothing was imported" in job.error
    assert not Item.objects.filter(project=project).exists()
    page = client.get(f"/projects/{project.pk}/imports/{job.pk}/")
    assert page.status_code == 200 and "line 1001" in page.content.decode()


def test_an_item_the_featurizer_refuses_mid_file_keeps_the_chunks_stored_before(monkeypatch):
    """A refusal only the featurizer sees (an undecodable image) comes in the second pass: the
    chunks stored before it stay, and the message says how many."""
    monkeypatch.setattr(uploads, "CHUNK", 4)
    project = digits_project(0)
    from annotator.labelling.projects.demo import digit_png
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(10):
            pixels = np.zeros(64)
            pixels[i] = 16
            zf.writestr(f"{i}/d{i}.png", digit_png(pixels) if i != 6 else b"not an image")
    job = run_job(new_job(project, "d.zip", [archive.getvalue()]).pk)
    assert job.status == "failed" and "6/d6.png" in job.error, job.error
    assert "the 4 items before it were imported and are kept" in job.error
    assert (job.done, job.total) == (4, 10)
    stored = Item.objects.filter(project=project).order_by("seq")
    assert list(stored.values_list("gold", flat=True)) == [0, 1, 2, 3]
    assert not UploadPart.objects.filter(job=job).exists()


def test_a_restarted_import_goes_on_after_the_items_already_stored(monkeypatch):
    """What a second attempt does after a worker died between two chunks (the kill itself:
    tests/worker/test_job_faults.py): it skips the ``done`` records and stores each item once."""
    monkeypatch.setattr(uploads, "CHUNK", 3)
    project = text_project(featurizer_config=HASHED)
    job = new_job(project, "m.jsonl", [_jsonl(10)])
    first = ingest.jobs.claim(ImportJob, job.pk)
    with pytest.raises(_DiedError):
        ingest._import_chunks(first, project, on_chunk=_raise_after_first_chunk())
    assert ImportJob.objects.get(pk=job.pk).done == 3 and Item.objects.filter(project=project).count() == 3
    ImportJob.objects.filter(pk=job.pk).update(status="waiting")  # what the sweep does
    job = run_job(job.pk)
    assert (job.status, job.done, job.attempt) == ("done", 10, 2)
    texts = list(Item.objects.filter(project=project).order_by("seq").values_list("text", flat=True))
    assert texts == [f"message number {i}" for i in range(10)]


def _raise_after_first_chunk():
    def stop() -> None:
        raise _DiedError
    return stop


class _DiedError(Exception):
    pass


@pytest.mark.parametrize("name,compress", [("a.csv.gz", True), ("a.jsonl.gz", True), ("a.csv", False)])
def test_gzip_streams_and_a_gzip_bomb_is_refused_at_the_limit(monkeypatch, name, compress):
    body = b"text,label\n" + b"".join(f"item {i},spam\n".encode() for i in range(50)) if "csv" in name \
        else _jsonl(50)
    data = gzip.compress(body) if compress else body
    assert len(list(iter_upload(OpenTarget("text"), name, io.BytesIO(data)))) == 50
    if compress:
        monkeypatch.setattr(uploads, "MAX_GUNZIP_BYTES", 100)
        with pytest.raises(uploads.IngestError, match="decompresses to more than 100 bytes"):
            list(iter_upload(OpenTarget("text"), name, io.BytesIO(data)))
