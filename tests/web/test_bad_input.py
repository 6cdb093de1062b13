"""Bad input: each malformed input gets a clear message, a 4xx where the request is
answered at once, and stores nothing partial. Uploads are parsed by a worker: the upload request
refuses what it can see at once (size, emptiness, type); the import job (run here as the worker
runs it) fails with a message naming the file's line or entry, and no item is stored.

A property-based test feeds random bytes and random mutations of valid files to every parser."""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib

import pytest
from django.db import connection
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import new_job, run_job
from annotator.labelling.models import ImportJob, Item, Label, Membership, Project
from tests.support.app import digits_project, member, text_project, zip_bytes
from tests.support.html import error_text, parse

pytestmark = pytest.mark.django_db
#: JSON nested 100,000 deep (Python's parser gives up at ~1,000)
DEEP = "[" * 100_000 + "]" * 100_000


def png(w: int = 8, h: int = 8) -> bytes:
    buf = io.BytesIO()
    Image.new("L", (w, h), 200).save(buf, format="PNG")
    return buf.getvalue()


def png_declaring(w: int, h: int) -> bytes:
    """A PNG whose header declares w x h pixels (tiny body): an image bomb."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


def jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("L", (8, 8), 100).save(buf, format="JPEG")
    return buf.getvalue()


def zip_bomb() -> bytes:
    """One entry of 21 MB of zeros (compresses to ~20 KB): above the per-image limit."""
    return zip_bytes({"0/bomb.png": b"\0" * (21 * 1024 * 1024)})


# (case id, project kind, file name, file bytes, words the error must contain)
UPLOADS = [
    ("csv-latin1", "text", "a.csv", "text,label\ncaf\xe9 au lait,ham\n".encode("latin-1"), "not valid UTF-8"),
    ("csv-mixed-encoding", "text", "a.csv", b"text,label\nfine,ham\n" + "na\xefve,spam\n".encode("cp1252"),
     "line 3: not valid UTF-8"),
    ("csv-missing-column", "text", "a.csv", b"body,label\nhello,ham\n", "header needs a 'text'"),
    ("csv-header-only", "text", "a.csv", b"text,label\n", "nothing to import"),
    ("csv-empty-cell", "text", "a.csv", b"text,label\nhello,ham\n,spam\n", "line 3"),
    ("csv-label-outside", "text", "a.csv", b"text,label\nhello,ham\nbuy now,eggs\n", "line 3: label"),
    ("csv-ragged-row", "text", "a.csv", b"text,label\nhello,ham,extra\n", "line 2: 3 fields"),
    # read as a stream: the first line (bytes 0-10, valid UTF-8) is refused as a header before
    # the bytes that are not UTF-8 are reached
    ("csv-binary", "text", "a.csv", bytes(range(256)) * 4, "line 1: the header needs a 'text' column"),
    ("csv-binary-later", "text", "a.csv", b"text\nok\n" + bytes(range(128, 256)), "line 3: not valid UTF-8"),
    ("csv-whitespace-only", "text", "a.csv", b"   \n\n", "line 1"),
    ("csv-unclosed-quote", "text", "a.csv", b'text,label\n"never closed,ham\n', "line"),
    ("jsonl-invalid-json", "text", "a.jsonl", b'{"text": "ok"}\n{"text": oops}\n', "line 2: invalid JSON"),
    ("jsonl-array", "text", "a.jsonl", b'["text", "hello"]\n', "line 1: expected a JSON object"),
    ("jsonl-missing-field", "text", "a.jsonl", b'{"body": "hello"}\n', "line 1: no 'text' field"),
    ("jsonl-number-text", "text", "a.jsonl", b'{"text": 42}\n', "must be a non-empty string"),
    ("jsonl-label-outside", "text", "a.jsonl", b'{"text": "a", "label": "eggs"}\n', "label"),
    ("jsonl-blank-lines-only", "text", "a.jsonl", b"\n\n\n", "nothing to import"),
    ("url-csv-in-text-column-empty", "url", "u.csv", b"url\n\n", "nothing to import"),
    ("zip-corrupt", "image", "i.zip", b"PK\x03\x04 this is not really a zip", "not a readable ZIP"),
    ("zip-truncated", "image", "i.zip", zip_bytes({"1/a.png": png()})[:-30], "not a readable ZIP"),
    ("zip-truncated-png", "image", "i.zip", zip_bytes({"1/a.png": png()[:40]}), "a.png"),
    ("zip-corrupt-jpeg", "image", "i.zip", zip_bytes({"1/a.jpg": jpeg()[:20] + b"\0" * 50}), "a.jpg"),
    ("zip-not-an-image", "image", "i.zip", zip_bytes({"1/a.png": b"hello, I am text"}), "a.png"),
    ("zip-image-bomb", "image", "i.zip", zip_bytes({"1/big.png": png_declaring(100_000, 100_000)}),
     "big.png"),
    ("zip-bomb", "image", "i.zip", zip_bomb(), "declared size"),
    ("zip-path-traversal", "image", "i.zip", zip_bytes({"../evil.png": png()}), "unsafe path"),
    ("zip-absolute-path", "image", "i.zip", zip_bytes({"/etc/evil.png": png()}), "unsafe path"),
    ("zip-backslash-traversal", "image", "i.zip", zip_bytes({"..\\evil.png": png()}), "unsafe path"),
    ("zip-no-images", "image", "i.zip", zip_bytes({"readme.txt": b"hi"}), "holds no images"),
    ("zip-label-outside", "image", "i.zip",
     zip_bytes({"labels.csv": b"filename,label\na.png,11\n", "a.png": png()}), "label"),
    ("zip-image-not-in-manifest", "image", "i.zip",
     zip_bytes({"labels.csv": b"filename,label\na.png,1\n", "a.png": png(), "b.png": png()}), "not listed"),
    ("zip-manifest-bad-header", "image", "i.zip", zip_bytes({"labels.csv": b"name,cls\n", "a.png": png()}),
     "labels.csv line 1"),
    ("libsvm-malformed", "vectors", "v.svm", b"1 1:0.5\n0 2:abc\n", "line 2"),
    ("libsvm-label-outside", "vectors", "v.svm", b"1 1:0.5\n7 2:1\n", "label"),
    ("libsvm-index-too-big", "vectors", "v.svm", b"1 1:0.5 999:1\n", "line 1"),
    ("libsvm-index-overflow", "vectors", "v.svm", b"1 1:0.5\n0 99999999999999999999:1\n",
     "line 2: an index is too large"),
    ("jsonl-nested-100000", "text", "a.jsonl", b'{"text": "a", "label": ' + DEEP.encode() + b"}\n",
     "line 1: JSON nested too deeply"),
    ("ls-json-nested-100000", "text", "a.json", DEEP.encode(),
     "the Label Studio export: JSON nested too deeply"),
    ("ls-json-annotation-nested-5000", "text", "a.json",
     b'[{"id": 1, "data": {"text": "x"}, "annotations": [{"result": ' + b"[" * 5000 + b"]" * 5000
     + b"}]}]", "the Label Studio export: JSON nested too deeply"),
    ("ls-json-latin1", "text", "a.json", '[{"data": {"text": "caf\xe9"}}]'.encode("latin-1"),
     "the Label Studio export: not valid UTF-8"),
    ("jsonl-nul", "text", "a.jsonl", b'{"text": "ok"}\n{"text": "a\\u0000b"}\n',
     "line 2: 'text' contains a NUL"),
    ("jsonl-lone-surrogate", "text", "a.jsonl", b'{"text": "a\\ud800b"}\n',
     "line 1: 'text' contains a lone surrogate"),
    ("csv-nul", "text", "a.csv", b"text\nfine\na\x00b\n", "line 3: 'text' contains a NUL"),
    ("url-jsonl-surrogate", "url", "u.jsonl", b'{"url": "http://a/\\udc80"}\n',
     "'url' contains a lone surrogate"),
    ("zip-name-too-long", "image", "i.zip", zip_bytes({"1/" + "a" * 300 + ".png": png()}),
     "at most 255 allowed"),
    ("libsvm-latin1", "vectors", "v.svm", "1 1:0.5\n0 2:caf\xe9\n".encode("latin-1"), "line 2"),
    ("csv-for-image-project", "image", "a.csv", b"text\nhello\n", "an image project takes .zip"),
    ("zip-for-text-project", "text", "i.zip", zip_bytes({"a/a.png": png()}),
     "a text project takes .csv, .tsv, .jsonl, .ndjson"),
]


def _project(kind: str) -> Project:
    if kind == "image":
        return digits_project(0)
    if kind == "vectors":
        return text_project(name=f"vec {Project.objects.count()}", item_kind="vectors",
                            featurizer_config={"kind": "vectors", "n_features": 8}, classes=[0, 1])
    if kind == "url":
        return text_project(name=f"url {Project.objects.count()}", item_kind="url")
    return text_project()


def _admin_client(project: Project) -> Client:
    client = Client()
    client.force_login(member(project, f"admin{project.pk}", Membership.Role.ADMIN))
    return client


#: malformed files whose fault the upload form cannot see in the first records it parses
#: (learners.uploads.check_start): no record at all, or an image that only fails to decode when
#: it is featurized; the worker's import fails on them
AT_IMPORT = {"csv-header-only", "jsonl-blank-lines-only", "url-csv-in-text-column-empty", "zip-truncated-png",
             "zip-corrupt-jpeg", "zip-not-an-image", "zip-image-bomb"}


@pytest.mark.parametrize("case,kind,name,data,needle", UPLOADS, ids=[u[0] for u in UPLOADS])
def test_malformed_upload_fails_clearly_and_stores_nothing(case, kind, name, data, needle):
    """Refused on the upload form itself (400, the reason shown, no job) when the first records
    show the fault; else the import fails with the reason on its page, and no progress bar."""
    project = _project(kind)
    client = _admin_client(project)
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile(name, data)})
    if case not in AT_IMPORT:
        shown = error_text(response.content)
        assert response.status_code == 400 and needle in shown, shown
        assert not ImportJob.objects.exists()
        return
    assert response.status_code == 302, response.content[:300]
    job = ImportJob.objects.get(project=project)
    job = run_job(job.pk)  # what the worker does
    assert job.status == "failed" and needle in job.error, job.error
    assert not Item.objects.filter(project=project).exists()
    page = client.get(f"/projects/{project.pk}/imports/{job.pk}/").content.decode()
    assert "The import failed" in page and "<progress" not in page


@pytest.mark.parametrize("name,data", [
    ("a.csv", b"text\tlabel\nhello there\tham\nwin, now\tspam\n"),
    ("a.csv", b"text;label\nhello there;ham\nwin, now;spam\n"),
    ("a.tsv", b"text\tlabel\nhello there\tham\nwin, now\tspam\n"),
    ("a.csv", b'text,label\nhello there,ham\n"win; now",spam\n'),
])
def test_tab_and_semicolon_separated_files_are_read(name, data):
    project = text_project()
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile(name, data)
    response = _admin_client(project).post(f"/projects/{project.pk}/upload", {"file": upload})
    assert response.status_code == 302
    job = run_job(ImportJob.objects.get(project=project).pk)
    assert job.status == "done", job.error
    texts = list(Item.objects.filter(project=project).order_by("seq").values_list("text", "gold"))
    assert [t for t, _ in texts] == ["hello there", "win, now" if b"win, now" in data else "win; now"]
    assert [g for _, g in texts] == ["ham", "spam"]


@pytest.mark.parametrize("name,data,needle", [
    ("empty.csv", b"", "the file is empty"),
    ("items.exe", b"MZ...", "unsupported file type"),
    ("noext", b"text\nhi\n", "unsupported file type"),
])
def test_uploads_refused_at_once(name, data, needle):
    project = text_project()
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = _admin_client(project).post(f"/projects/{project.pk}/upload",
                                           {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 400 and needle in error_text(response.content)
    assert not ImportJob.objects.exists()


def test_upload_over_the_limit_is_refused(settings):
    settings.MAX_UPLOAD_BYTES = 100
    project = text_project()
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = _admin_client(project).post(f"/projects/{project.pk}/upload",
                                           {"file": SimpleUploadedFile("a.csv", b"text\n" + b"x" * 200)})
    assert response.status_code == 400 and "larger than 100 bytes" in error_text(response.content)
    assert not ImportJob.objects.exists()


def test_a_claim_above_the_limit_is_refused_before_the_body_is_read(settings):
    project = text_project()
    client = _admin_client(project)
    response = client.generic("POST", f"/projects/{project.pk}/upload", b"tiny",
                              content_type="multipart/form-data; boundary=x",
                              CONTENT_LENGTH=str(settings.MAX_UPLOAD_BYTES + 2 * 1024 ** 2))
    assert response.status_code == 413 and b"uploads are limited to" in response.content
    # a body that is not a form (a JSON API batch, read whole) has the smaller MAX_BODY_BYTES
    json_body = client.generic("POST", f"/api/projects/{project.pk}/items", b"{}",
                               content_type="application/json",
                               CONTENT_LENGTH=str(settings.MAX_BODY_BYTES + 1))
    assert json_body.status_code == 413
    bad = client.generic("POST", f"/projects/{project.pk}/upload", b"", CONTENT_LENGTH="lots")
    assert bad.status_code == 400


# ------------------------------------------------------------------------------------- API
@pytest.fixture
def api_project():
    return text_project(params={"delta": 100.0})


def _post(project, body, token=None, raw=False):
    headers = {} if token is False else {"HTTP_AUTHORIZATION": f"Token {token or project.api_token}"}
    return Client().post(f"/api/projects/{project.pk}/items", body if raw else json.dumps(body),
                         content_type="application/json", **headers)


@pytest.mark.parametrize("body,token,status,needle", [
    ({"items": [{"text": "a"}]}, "wrong-token", 403, "wrong token"),
    ({"items": [{"text": "a"}]}, False, 403, "Authorization: Token"),
    ("{not json", None, 400, "the body: invalid JSON"),
    (DEEP, None, 400, "the body: JSON nested too deeply"),
    ('{"items": [{"text": "a", "gold": ' + DEEP + "}]}", None, 400, "the body: JSON nested too deeply"),
    ('{"items": [{"text": "a\\u0000b"}]}', None, 400, "item 0: 'text' contains a NUL character"),
    ('{"items": [{"text": "a\\ud800b"}]}', None, 400, "item 0: 'text' contains a lone surrogate"),
    ([1, 2], None, 400, "must be {\"items\""),
    ({"items": "hello"}, None, 400, "must be {\"items\""),
    ({"items": []}, None, 400, "at least one item"),
    ({"items": [{"text": "ok"}, "not an object"]}, None, 400, "item 1: expected an object"),
    ({"items": [{"text": "ok"}, {"text": ""}]}, None, 400, "item 1"),
    ({"items": [{"text": "ok", "gold": "eggs"}]}, None, 400, "label"),
    ({"items": [{"body": "ok"}]}, None, 400, "no 'text' field"),
])
def test_bad_api_calls(api_project, body, token, status, needle):
    raw = isinstance(body, str)
    response = _post(api_project, body, token, raw=raw)
    assert response.status_code == status and needle in response.json()["error"], response.content
    assert not Item.objects.filter(project=api_project).exists()


def test_oversized_api_batch(api_project, settings):
    settings.API_MAX_BATCH = 5
    response = _post(api_project, {"items": [{"text": f"t{i}"} for i in range(6)]})
    assert response.status_code == 400 and "at most 5 items" in response.json()["error"]
    assert not Item.objects.exists()


def test_bad_urls_in_the_api():
    project = text_project(name="urls", item_kind="url")
    for url, needle in [("http://a/\x00", "contains a NUL"),
                        ("http://a/\udfff", "contains a lone surrogate")]:
        response = _post(project, {"items": [{"url": url}]})
        assert response.status_code == 400 and f"item 0: 'url' {needle}" in response.json()["error"]
    assert not Item.objects.exists()


@pytest.mark.parametrize("filename,needle", [
    ("a\x00.png", "the file name contains a NUL character"),
    ("a\ud800.png", "the file name contains a lone surrogate"),
    ("a" * 300 + ".png", "'filename' is 304 characters long, at most 255 allowed"),  # the API's schema
    ({"a": 1}, "'filename' expected a string"),
])
def test_bad_image_file_names_in_the_api(filename, needle):
    project = digits_project(0)
    entry = {"image_base64": base64.b64encode(png()).decode(), "filename": filename}
    response = _post(project, {"items": [entry]})
    assert response.status_code == 400 and f"item 0: {needle}" in response.json()["error"]
    assert not Item.objects.exists()


def test_bad_base64_image_in_the_api():
    project = digits_project(0)
    response = _post(project, {"items": [{"image_base64": "%%% not base64"}]})
    assert response.status_code == 400 and "not valid base64" in response.json()["error"]
    ok = base64.b64encode(png()).decode()
    bomb = base64.b64encode(png_declaring(50_000, 50_000)).decode()
    response = _post(project, {"items": [{"image_base64": ok}, {"image_base64": bomb}]})
    assert response.status_code == 400 and "item 1" in response.json()["error"]
    assert not Item.objects.exists()


# ---------------------------------------------------------------------------------- labels
@pytest.fixture
def queued():
    project = digits_project(10, params={"delta": 100.0})
    update_project(project.pk)
    client = Client()
    user = member(project, "ann")
    client.force_login(user)
    item_id = int(client.get(f"/projects/{project.pk}/").content.split(b'data-item="')[1].split(b'"')[0])
    return project, client, item_id


@pytest.mark.parametrize("value", ["10", "-1", "", "three", "<script>", "1; DROP TABLE labelling_label"])
def test_labels_outside_the_class_set(queued, value):
    project, client, item_id = queued
    response = client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": value})
    assert response.status_code == 400 and b"is not one of the classes" in response.content
    assert not Label.objects.exists()


def test_double_submitted_label(queued):
    project, client, item_id = queued
    assert client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": "3"}).status_code == 302
    again = client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": "3"})
    assert again.status_code == 409 and b"already labelled" in again.content
    assert Label.objects.count() == 1


@pytest.mark.parametrize("field,value,needle", [
    ("budget_per_day", "1e30", "budget_per_day must be an integer >= 1 and <= 2147483647"),
    ("budget_per_day", "99999999999999999999", "budget_per_day must be an integer >= 1 and <= 2147483647"),
    ("budget_per_day", "2.5", "budget_per_day must be an integer"),
    ("budget_per_day", "0", "budget_per_day must be"),
    ("price_per_label", "inf", "price_per_label must be a number >= 0 and <= 1e+09"),
    ("price_per_label", "1e400", "price_per_label must be"),
    ("price_per_label", "nan", "price_per_label must be"),
    ("price_per_label", "-1", "price_per_label must be"),
    ("budget_ratio", "nan", "budget_ratio must be a number > 0 and <= 1"),
    ("budget_ratio", "0", "budget_ratio must be a number > 0"),
])
def test_bad_numbers_in_the_console_settings(field, value, needle):
    project = digits_project(0)
    response = _admin_client(project).post(f"/projects/{project.pk}/console",
                                           {"action": "settings", "stream_state": "running", field: value})
    assert response.status_code == 400 and needle in error_text(response.content)
    project.refresh_from_db()
    assert getattr(project, field) is None


def test_a_nul_in_a_member_name_is_refused():
    project = digits_project(0)
    response = _admin_client(project).post(f"/projects/{project.pk}/console",
                                           {"action": "assign", "username": "ann\x00"})
    field = parse(response.content).by_id("field-username")  # refused at its field
    assert response.status_code == 400 and "username contains a NUL character" in field.text


@pytest.mark.parametrize("name,classes,needle", [
    ("n" * 201, "a,b", "the project name is 201 characters long, at most 200 allowed"),
    ("a\x00b", "a,b", "the project name contains a NUL character"),
    ("fine", "a\x00,b", "contains a NUL character"),
])
def test_bad_new_project_names(name, classes, needle):
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    response = client.post("/projects/new", {"name": name, "task": "binary", "item_kind": "text",
                                             "classes": classes})
    assert response.status_code == 400 and needle in response.content.decode()
    assert not Project.objects.exists()


def test_deep_featurizer_options_are_refused():
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    response = client.post("/projects/new", {"name": "deep", "task": "binary", "item_kind": "text",
                                             "classes": "a,b", "featurizer": DEEP})
    assert response.status_code == 400
    assert "featurizer options must be a JSON object: JSON nested too deeply" in response.content.decode()


@pytest.mark.parametrize("delta", ["0", "-2", "nan", "inf", "1e400", "ten", ""])
def test_bad_delta_in_the_console(delta):
    needle = "delta must be"
    project = digits_project(0)
    response = _admin_client(project).post(f"/projects/{project.pk}/console",
                                           {"action": "learner", "algorithm": "mpaa-i", "param-delta": delta})
    assert response.status_code == 400 and needle in error_text(response.content)
    project.refresh_from_db()
    assert project.params == {"delta": 1.0}


def test_unknown_algorithm_in_the_console():
    project = digits_project(0)
    response = _admin_client(project).post(f"/projects/{project.pk}/console",
                                           {"action": "learner", "algorithm": "gradient-magic"})
    assert response.status_code == 400 and "algorithm must be one of" in error_text(response.content)


def test_sql_looking_text_is_stored_verbatim(api_project):
    text = "Robert'); DROP TABLE labelling_item;-- \" OR 1=1 --"
    assert _post(api_project, {"items": [{"text": text}]}).status_code == 201
    assert Item.objects.get(project=api_project).text == text
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM labelling_item")
        assert cursor.fetchone()[0] == 1


# ------------------------------------------------------------------------------- property
VALID = {"text": ("a.csv", b"text,label\nhello there,ham\nwin cash now,spam\n"),
         "jsonl": ("a.jsonl", b'{"text": "hello", "label": "ham"}\n{"text": "win", "label": "spam"}\n'),
         "image": ("i.zip", zip_bytes({"1/a.png": png(), "2/b.png": png()})),
         "vectors": ("v.svm", b"1 1:0.5 3:1\n0 2:0.25\n")}


def _mutations(data: bytes) -> st.SearchStrategy[bytes]:
    def mutate(ops: list[tuple[int, int]]) -> bytes:
        out = bytearray(data)
        for pos, byte in ops:
            if out:
                out[pos % len(out)] = byte
        return bytes(out)
    return st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=8).map(mutate)


@pytest.mark.parametrize("fmt", sorted(VALID))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_random_bytes_never_crash_a_parser_nor_import_partially(fmt, data):
    kind = {"text": "text", "jsonl": "text", "image": "image", "vectors": "vectors"}[fmt]
    name, valid = VALID[fmt]
    payload = data.draw(st.one_of(st.binary(max_size=2000), _mutations(valid),
                                  st.binary(max_size=200).map(lambda b: valid[:len(valid) // 2] + b)))
    project = _project(kind)
    job = run_job(new_job(project, name, [payload]).pk)  # raises on an unexpected error (a crash)
    stored = Item.objects.filter(project=project).count()
    if job.status == "failed":
        assert stored == 0 and job.error and not job.error.startswith("internal error")
    else:
        assert job.status == "done" and stored == job.total > 0
    Project.objects.filter(pk=project.pk).delete()
