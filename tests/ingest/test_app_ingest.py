"""Ingestion: each format, and each kind of malformed file rejected whole."""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np
import pytest

from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.ingest import IngestError, import_records, new_job, parse_upload, run_job
from annotator.labelling.models import Item, Project
from annotator.labelling.projects.creation import create_project
from annotator.labelling.projects.demo import digit_png
from learners.uploads import image_zip
from learners.uploads.tabular import iter_csv
from tests.support.app import digits_project, text_project, zip_bytes

pytestmark = pytest.mark.django_db


def upload(project: Project, filename: str, data: bytes) -> list[Item]:
    return import_records(project, parse_upload(project, filename, data))


def rejected(project: Project, filename: str, data: bytes, *fragments: str) -> str:
    """Assert the upload is refused with a message containing ``fragments`` and stores nothing."""
    before = Item.objects.filter(project=project).count()
    with pytest.raises(IngestError) as info:
        upload(project, filename, data)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    assert Item.objects.filter(project=project).count() == before
    return message


def url_project() -> Project:
    return create_project(name="urls", task="binary", item_kind="url", classes=["benign", "phishing"],
                          algorithm="paa-i")


def vector_project(n_features: int = 5) -> Project:
    return create_project(name="vectors", task="binary", item_kind="vectors", classes=["neg", "pos"],
                          algorithm="paa-i", featurizer_config={"kind": "vectors", "n_features": n_features})


def digit(value: int) -> bytes:
    pixels = np.zeros(64)
    pixels[value % 64] = 16
    return digit_png(pixels)


# ------------------------------------------------------------------------------ accepted files
def test_csv_text_with_gold_is_featurized_in_order():
    project = text_project()
    items = upload(project, "spam.csv",
                   b"text,label\nwin a free prize,spam\n\"hi, see you\",ham\nno label,\n")
    assert [it.seq for it in items] == [0, 1, 2]
    assert [it.text for it in items] == ["win a free prize", "hi, see you", "no label"]
    assert [it.gold for it in items] == ["spam", "ham", None]
    featurizer = project.featurizer()
    stored = decode(Item.objects.get(pk=items[1].pk).vector, featurizer.n_features)
    assert (stored != featurizer.transform_one("hi, see you")).nnz == 0
    more = upload(project, "more.jsonl", b'{"text": "later item", "gold": "ham"}\n\n{"text": "x"}\n')
    assert [it.seq for it in more] == [3, 4] and more[0].gold == "ham"


def test_csv_of_urls_and_int_classes_from_strings():
    project = url_project()
    items = upload(project, "u.csv", b"url,gold\nhttp://paypal.com.evil.example/login,phishing\nhttps://example.org/,\n")
    assert [it.gold for it in items] == ["phishing", None]
    digits = digits_project(0)
    assert digits.parse_class("3") == 3


def test_zip_with_class_folders_and_manifest():
    project = digits_project(0)
    items = upload(project, "d.zip", zip_bytes({"3/a.png": digit(3), "7/b.png": digit(7), "c.png": digit(1),
                                                 "__MACOSX/3/._a.png": b"junk", "notes.txt": b"hi"}))
    assert [(it.filename, it.gold) for it in items] == [("a.png", 3), ("b.png", 7), ("c.png", None)]
    assert bytes(Item.objects.get(pk=items[0].pk).data) == digit(3)
    manifest = b"filename,label\nx/a.png,5\nx/b.png,\n"
    entries = {"labels.csv": manifest, "x/a.png": digit(5), "x/b.png": digit(2)}
    items = upload(project, "m.zip", zip_bytes(entries))
    assert [it.gold for it in items] == [5, None]


def test_svmlight_vectors_with_binary_label_convention():
    project = vector_project()
    items = upload(project, "v.svm", b"# comment\n+1 1:0.5 3:2\n-1 5:1.5\n")
    assert [it.gold for it in items] == ["pos", "neg"]
    assert items[0].vector_pairs == [[0, 0.5], [2, 2.0]]
    row = decode(Item.objects.get(pk=items[1].pk).vector, 5)
    assert row.toarray().tolist() == [[0, 0, 0, 0, 1.5]]


# ------------------------------------------------------------------------------ rejected files
def test_csv_rejections_name_the_line():
    project = text_project(["already here"])
    rejected(project, "a.csv", b"text,label\nok,spam\n,ham\n", "line 3", "non-empty")
    rejected(project, "b.csv", b"text,label\nok,spam\nfine,maybe\n", "line 3", "'maybe'")
    rejected(project, "c.csv", b"text,label\nok,spam\na,b,c\n", "line 3", "3 fields")
    rejected(project, "d.csv", b"body,label\nok,spam\n", "line 1", "'text'")
    rejected(project, "e.csv", b"text\nok\n\xff\xfe\n", "line 3", "UTF-8")
    rejected(project, "f.csv", b"", "empty")


def test_jsonl_rejections_name_the_line():
    project = text_project()
    rejected(project, "a.jsonl", b'{"text": "ok"}\n{"text": "bad"\n', "line 2", "invalid JSON")
    rejected(project, "b.jsonl", b'{"text": "ok"}\n["list"]\n', "line 2", "object")
    rejected(project, "c.jsonl", b'{"text": "ok"}\n\n{"txt": "x"}\n', "line 3", "'text'")


def test_zip_rejections(monkeypatch):
    project = digits_project(0)
    rejected(project, "a.zip", zip_bytes({"ok.png": digit(1), "../evil.png": digit(2)}), "../evil.png",
             "unsafe")
    rejected(project, "b.zip", zip_bytes({"/abs.png": digit(1)}), "unsafe")
    rejected(project, "c.zip", zip_bytes({"ok.png": digit(1), "bad.png": b"not an image"}), "bad.png")
    rejected(project, "d.zip", b"PK\x03\x04 this is not a zip", "not a readable ZIP")
    rejected(project, "e.zip", zip_bytes({"labels.csv": b"filename,label\nok.png,1\n", "ok.png": digit(1),
                                          "other.png": digit(2)}), "other.png", "not listed")
    rejected(project, "f.zip", zip_bytes({"labels.csv": b"filename,label\nok.png,12\n", "ok.png": digit(1)}),
             "labels.csv line 2")
    rejected(project, "g.zip", zip_bytes({"readme.txt": b"no images"}), "no images")
    # a zip bomb: the declared size is checked before anything is decompressed
    monkeypatch.setattr(image_zip, "MAX_IMAGE_BYTES", 10_000)
    rejected(project, "h.zip", zip_bytes({"ok.png": digit(1), "bomb.png": b"\0" * 50_000}), "bomb.png",
             "declared size")
    monkeypatch.setattr(image_zip, "MAX_TOTAL_BYTES", 2 * len(digit(1)))
    rejected(project, "i.zip", zip_bytes({f"{i}.png": digit(i) for i in range(5)}), "uncompressed")


def test_svmlight_rejections_name_the_line():
    project = vector_project()
    rejected(project, "a.svm", b"+1 1:0.5\n-1 2:1\n+1 3:x\n", "line 3")
    rejected(project, "b.svm", b"+1 1:0.5\n+1 9:1\n", "line 2")
    rejected(project, "c.svm", b"+1 1:0.5\n-1 0:1\n", "line 2")
    rejected(project, "d.svm", b"+1 1:0.5\n7 2:1\n", "line 2", "7")


def test_wrong_format_for_the_project_kind_and_unknown_extension():
    rejected(text_project(), "x.zip", zip_bytes({"a.png": digit(1)}), "images")
    rejected(digits_project(0), "x.csv", b"text\nhello\n", "text or URLs")
    rejected(text_project(), "x.docx", b"...", "unsupported file type")


# ------------------------------------------------------------------------------ import jobs
def test_import_job_records_progress_and_outcome():
    project = text_project()
    lines = b"".join(json.dumps({"text": f"t {i}"}).encode() + b"\n" for i in range(7))
    ok = new_job(project, "a.jsonl", [lines])
    job = run_job(ok.pk)
    assert (job.status, job.done, job.total, job.parts.exists()) == ("done", 7, 7, False)
    assert run_job(ok.pk) is None  # a second delivery of the task does nothing
    bad = new_job(project, "b.csv", [b"text\nok\n\n,\n"])
    job = run_job(bad.pk)
    assert job.status == "failed" and "line 4" in job.error
    assert Item.objects.filter(project=project).count() == 7



def _png_bytes() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (8, 8)).save(out, format="PNG")
    return out.getvalue()


def test_labels_csv_naming_a_file_twice_is_refused_with_its_line():
    data = zip_bytes({"a.png": _png_bytes(), "labels.csv": b"filename,label\na.png,0\na.png,1\n"})
    with pytest.raises(IngestError, match=r"labels\.csv line 3: .a\.png. is listed twice"):
        list(image_zip.iter_zip(digits_project(0), io.BytesIO(data)))


def test_a_zip_holding_one_entry_twice_is_refused():
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        zf.writestr("0/a.png", _png_bytes())
        zf.writestr("0/a.png", _png_bytes())
    with pytest.raises(IngestError, match=r"0/a\.png: the archive holds this entry twice"):
        list(image_zip.iter_zip(digits_project(0), io.BytesIO(buf.getvalue())))


def test_a_csv_header_naming_a_column_twice_is_refused():
    with pytest.raises(IngestError, match="line 1: the header names 'text' twice"):
        list(iter_csv(text_project(), io.BytesIO(b"text,text,label\na,b,ham\n")))
