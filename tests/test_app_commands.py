"""Management commands: demo (idempotent, real PNG digits), import_items, simulate, export_model."""

from __future__ import annotations

import gzip
import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from PIL import Image
from sklearn.datasets import load_digits

from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import ImportJob, Item, Label, LearnerState, Project, UploadPart
from annotator.labelling.projects.demo import NAME
from tests.support.app import text_project

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_demo_is_idempotent_and_holds_real_png_digits():
    first = run("demo", "--items", "30")
    assert "annotator / annotator-demo" in first and "admin / admin-demo" in first
    assert "exists" in run("demo", "--items", "30")
    project = Project.objects.get(name=NAME)
    assert project.items.count() == 30 and Project.objects.filter(name=NAME).count() == 1
    assert project.memberships.count() == 2
    assert project.items.filter(status="queued").exists()  # the queue is ready at once
    digits = load_digits()
    item = project.items.order_by("seq").first()
    image = Image.open(io.BytesIO(bytes(item.data)))
    assert image.format == "PNG" and image.size == (64, 64)
    # the featurized vector gives back the original 8x8 digit (each pixel 2x2 at 16x16)
    x = decode(item.vector, 256).toarray().reshape(16, 16)[::2, ::2].ravel()
    match = np.flatnonzero(np.all(np.abs(digits.data / 16 - x) < 1 / 255 + 1e-9, axis=1))
    assert item.gold in digits.target[match]


def test_import_items_and_errors(tmp_path):
    project = text_project()
    good = tmp_path / "a.jsonl"
    good.write_text('{"text": "hello"}\n{"text": "free prize", "label": "spam"}\n')
    assert "imported 2 items" in run("import_items", str(project.pk), str(good))
    bad = tmp_path / "b.csv"
    bad.write_text("text,label\nok,spam\nx,unknown\n")
    with pytest.raises(CommandError, match="line 3"):
        run("import_items", project.name, str(bad))
    assert Item.objects.filter(project=project).count() == 2
    with pytest.raises(CommandError, match="no project"):
        run("import_items", "nope", str(good))


def test_import_items_streams_a_file_of_several_chunks_through_the_upload_path(tmp_path):
    """More records than one chunk (learners.uploads.CHUNK), gzipped: every one stored once, in
    file order, by an import job whose stored file is dropped afterwards."""
    from learners.uploads import CHUNK

    project = text_project()
    n = 2 * CHUNK + 321
    path = tmp_path / "many.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        for i in range(n):
            fh.write(json.dumps({"text": f"message number {i}", "label": ["ham", "spam"][i % 2]}) + "\n")
    assert f"imported {n} items" in run("import_items", str(project.pk), str(path))
    rows = list(Item.objects.filter(project=project).order_by("seq").values_list("seq", "text", "gold"))
    assert [r[0] for r in rows] == list(range(n))
    assert rows[-1][1:] == (f"message number {n - 1}", ["ham", "spam"][(n - 1) % 2])
    job = ImportJob.objects.get(project=project)
    assert (job.status, job.total, job.done) == ("done", n, n)
    assert not UploadPart.objects.filter(job=job).exists()


def test_simulate_labels_every_query_from_gold(tmp_path):
    run("demo", "--items", "40")
    project = Project.objects.get(name=NAME)
    out = run("simulate", NAME)
    labels = Label.objects.filter(project=project).count()
    assert f"{labels} labels given" in out and labels > 0
    assert not project.items.filter(status__in=["pending", "queued", "leased"]).exists()
    assert LearnerState.objects.get(project=project).version == labels
    path = tmp_path / "m.npz"
    assert f"{labels} labels" in run("export_model", NAME, str(path))
    assert path.exists() and path.with_suffix(".json").exists()
