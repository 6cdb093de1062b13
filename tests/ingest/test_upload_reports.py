"""What an upload is checked against and what its import tells the admin (docs/uploads.md):
the dimension of a vectors project, the columns an import ignored and the items that came with a
class, the same file uploaded twice (two tabs at once included), through the upload and import
pages."""

from __future__ import annotations

import hashlib
import io
import json
import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from annotator.labelling.ingest import (
    REPEAT_WINDOW,
    IngestError,
    RepeatedUploadError,
    fanout,
    import_notes,
    new_job,
    parse_upload,
    run_job,
    survey,
)
from annotator.labelling.models import ImportJob, Item, Membership, Project, UploadPart
from annotator.labelling.projects.creation import create_project
from annotator.labelling.web import forms
from tests.support.app import member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def vectors_project(**config: int) -> Project:
    return create_project(name="a8a", task="binary", item_kind="vectors", classes=["neg", "pos"],
                          algorithm="paa-i", featurizer_config={"kind": "vectors", **config})


def admin_client(client, project: Project):
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    return client


# ------------------------------------------------------------------ the dimension of vectors
def test_a_libsvm_index_beyond_the_dimension_is_told_in_the_apps_words():
    project = vectors_project(n_features=5)
    with pytest.raises(IngestError) as info:
        parse_upload(project, "v.libsvm", b"+1 1:0.5\n-1 2:1 7:1\n+1 9:1\n")
    message = str(info.value)
    assert message.startswith("line 2: feature index 7 is beyond this project's dimension, 5 "
                              "(LIBSVM indices 1 to 5)"), message
    assert 'featurizer options {"n_features": N}' in message and "N at least 7" in message
    assert "n_features was set" not in message  # scikit-learn's wording


def test_the_first_bad_line_is_named_whether_it_is_malformed_or_beyond_the_dimension():
    project = vectors_project(n_features=5)
    with pytest.raises(IngestError, match=r"^line 2: feature index 6 "):
        parse_upload(project, "v.svm", b"+1 1:1\n+1 6:1\n+1 x\n")
    with pytest.raises(IngestError, match=r"^line 2: (?!feature index)"):
        parse_upload(project, "v.svm", b"+1 1:1\n+1 x\n+1 6:1\n")


def test_a_file_within_the_dimension_imports_as_before():
    records = parse_upload(vectors_project(n_features=5), "v.svm", b"+1 1:0.5 5:2\n-1 3:1\n")
    assert [r.raw for r in records] == [[[0, 0.5], [4, 2.0]], [[2, 1.0]]]


def test_the_upload_form_refuses_a_file_beyond_the_dimension_and_stores_nothing(client):
    project = vectors_project()  # the default dimension, 100
    assert project.featurizer().n_features == 100
    admin_client(client, project)
    data = b"-1 3:1 11:1\n+1 5:1 101:1 123:1\n"
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile("a8a.libsvm", data)})
    assert response.status_code == 400
    assert "line 2: feature index 123 is beyond this project's dimension, 100" in parse(response.content).text
    assert not ImportJob.objects.exists() and not Item.objects.exists()


def test_the_upload_page_states_the_dimension_and_the_new_project_form_where_to_set_it(client):
    project = vectors_project(n_features=123)
    admin_client(client, project)
    page = parse(client.get(f"/projects/{project.pk}/upload").content)
    assert page.find(id="vector-dimension").text == "123"
    assert "features, numbered 1 to 123" in page.find(id="format-help").text
    get_user_model().objects.filter(username="boss").update(is_staff=True)
    form = parse(client.get("/projects/new").content)
    assert '{"n_features": N} sets their dimension' in form.text


# ------------------------------------------------------ the columns an import ignored, the classes
def upload_and_import(client, project: Project, name: str, data: bytes) -> tuple[ImportJob, list[str]]:
    """Upload ``data`` through the form, import it as the worker would, and read the notes on the
    import's page."""
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 302, response.content.decode()[:2000]
    job = run_job(ImportJob.objects.filter(project=project).latest("created").pk)
    assert job is not None and job.status == "done", job and job.error
    page = parse(client.get(response["Location"]).content)
    notes = page.find(id="import-notes")
    return job, [li.text for li in notes.find_all("li")] if notes else []


def test_a_csv_whose_class_column_has_another_name_says_it_was_ignored_and_no_class_came(client):
    project = text_project()
    admin_client(client, project)
    job, notes = upload_and_import(client, project, "no_label_col.csv",
                                   b"text,category\nhello,ham\nwin prize,spam\n")
    assert (job.known, job.ignored_columns) == (0, ["category"])
    assert notes[0] == ("Ignored columns: 'category'. A text project reads only 'text' and, for the known "
                        "class, 'label' or 'gold'.")
    assert notes[1].startswith("0 of 2 items came with a known class. A class is read from a column "
                               "named 'label' or 'gold': this file has none")
    assert not Item.objects.filter(project=project, gold__isnull=False).exists()


def test_a_csv_without_a_label_column_says_no_item_came_with_a_class(client):
    project = text_project()
    admin_client(client, project)
    job, notes = upload_and_import(client, project, "plain.csv", b"text\nhello\nwin prize\n")
    assert job.ignored_columns == [] and len(notes) == 1
    assert notes[0].startswith("0 of 2 items came with a known class.")


def test_known_classes_are_counted_and_each_ignored_key_named_once_in_file_order(client):
    project = text_project(item_kind="url", featurizer_config=None)
    admin_client(client, project)
    data = (b'{"url": "https://a.example/", "text": "a", "label": "ham", "id": 1}\n'
            b'{"URL": "https://b.example/", "Source": "crawl", "id": 2}\n'
            b'{"url": "https://c.example/", "gold": "spam", "source": "crawl"}\n')
    job, notes = upload_and_import(client, project, "u.jsonl", data)
    assert (job.total, job.known, job.ignored_columns) == (3, 2, ["text", "id", "source"])
    assert notes == ["Ignored columns: 'text', 'id', 'source'. A url project reads only 'url' or 'text' and, "
                     "for the known class, 'label' or 'gold'.", "2 of 3 items came with a known class."]


def test_a_parquet_upload_names_its_ignored_columns_through_the_fanned_out_import(client):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    project = text_project()
    admin_client(client, project)
    out = io.BytesIO()
    pq.write_table(pa.table({"Text": ["a", "b"], "Label": ["ham", None], "lang": ["en", "fr"]}), out)
    response = client.post(f"/projects/{project.pk}/upload",
                           {"file": SimpleUploadedFile("x.parquet", out.getvalue())})
    assert response.status_code == 302
    job = fanout.stage(ImportJob.objects.get(project=project).pk, lambda job_id, indexes: None)
    assert job is not None and (job.total, job.known, job.ignored_columns) == (2, 1, ["lang"])


def test_ignored_keys_are_capped_and_stored_as_text():
    project = text_project()
    lines = [json.dumps({"text": f"t{i}", f"k{i}": 1}) for i in range(40)]
    lines.append(json.dumps({"text": "nul", "a\u0000b": 1, "x" * 500: 2}))
    counted = survey(parse_upload(project, "m.jsonl", "\n".join(lines).encode()))
    assert counted["ignored_columns"][:2] == ["k0", "k1"] and len(counted["ignored_columns"]) == 21
    counted = survey(parse_upload(project, "m.jsonl", lines[-1].encode()))
    assert counted["ignored_columns"] == ["a\\x00b", "x" * 59 + "\u2026"]
    job = ImportJob(filename="m.jsonl", total=41, known=0, ignored_columns=[f"k{i}" for i in range(21)])
    assert import_notes(job, "text")[0].startswith("Ignored columns: 'k0', ")
    assert "'k19' and others." in import_notes(job, "text")[0]


# ------------------------------------------------------------------ the same file uploaded again
DUP = b"text,label\nfirst dup test message,ham\nsecond dup test win cash,spam\n"


def post(client, project: Project, data: bytes = DUP, name: str = "dup3.csv", **fields: str):
    return client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile(name, data), **fields})


def test_the_same_file_while_its_import_waits_is_refused_with_409_then_imported_if_confirmed(client):
    project = text_project()
    admin_client(client, project)
    assert "again" not in client.get(f"/projects/{project.pk}/upload").content.decode()  # no box at first
    assert post(client, project).status_code == 302
    first = ImportJob.objects.get(project=project)
    parts = UploadPart.objects.count()
    response = post(client, project)
    assert response.status_code == 409
    page = parse(response.content)
    error = page.find(id="field-file").text
    assert (f"dup3.csv: the same file (the same bytes) is still being imported (0 items stored so far): "
            f"import {first.pk}, 'dup3.csv'. Its items would be stored twice; to import it again anyway, "
            "tick 'import again' and upload it once more.") in error
    assert page.find("input", id="again").attrs["type"] == "checkbox"
    assert page.find(id="repeat-of").find("a").attrs["href"] == f"/projects/{project.pk}/imports/{first.pk}/"
    assert ImportJob.objects.count() == 1 and UploadPart.objects.count() == parts  # nothing stored
    assert post(client, project, again="on").status_code == 302
    assert ImportJob.objects.filter(project=project).count() == 2


def test_a_finished_import_refuses_its_file_for_the_window_only():
    project = text_project()
    job = run_job(new_job(project, "dup3.csv", [DUP]).pk)
    assert job is not None and (job.status, job.done) == ("done", 2)
    with pytest.raises(RepeatedUploadError, match=r"less than a minute ago \(done, 2 items stored\)"):
        new_job(project, "renamed.csv", [DUP[:10], DUP[10:]])  # the bytes count, not the name or the parts
    assert ImportJob.objects.count() == 1
    ImportJob.objects.filter(pk=job.pk).update(finished=timezone.now() - REPEAT_WINDOW - timedelta(seconds=1))
    assert new_job(project, "dup3.csv", [DUP]).sha256 == hashlib.sha256(DUP).hexdigest()


def test_another_file_another_project_or_an_import_that_stored_nothing_do_not_refuse():
    project = text_project()
    new_job(project, "dup3.csv", [DUP])
    new_job(project, "other.csv", [DUP + b"third,ham\n"])
    new_job(text_project(), "dup3.csv", [DUP])
    failed = run_job(new_job(project, "bad.csv", [b"text,label\nok,eggs\n"]).pk)
    assert failed is not None and failed.status == "failed"
    new_job(project, "bad.csv", [b"text,label\nok,eggs\n"])
    cancelled = new_job(project, "c.csv", [b"text\nc\n"])
    ImportJob.objects.filter(pk=cancelled.pk).update(status="cancelled")
    new_job(project, "c.csv", [b"text\nc\n"])
    assert ImportJob.objects.count() == 7


def test_import_items_refuses_a_repeated_file_unless_again(tmp_path):
    project = text_project()
    path = tmp_path / "dup3.csv"
    path.write_bytes(DUP)
    call_command("import_items", str(project.pk), str(path), stdout=io.StringIO())
    with pytest.raises(CommandError, match=r"was imported less than a minute ago.*pass --again"):
        call_command("import_items", str(project.pk), str(path), stdout=io.StringIO())
    call_command("import_items", str(project.pk), str(path), "--again", stdout=io.StringIO())
    assert Item.objects.filter(project=project).count() == 4


def test_two_tabs_submitting_one_file_at_once_make_exactly_one_import(transactional_db, monkeypatch):
    """Both requests pass the form's checks before either stores its file (a barrier holds the
    first at the end of its checks until the second got there): one import, one 409."""
    two_tabs_at_once(monkeypatch)


@pytest.mark.services
def test_two_tabs_at_once_on_postgresql(services, transactional_db, monkeypatch):
    """The same on PostgreSQL, where the uploads' transactions really overlap (SQLite's IMMEDIATE
    transactions run one after the other): the project row's lock decides, without a deadlock."""
    two_tabs_at_once(monkeypatch)


def two_tabs_at_once(monkeypatch) -> None:
    project = text_project()
    boss = member(project, "boss", Membership.Role.ADMIN)
    barrier = threading.Barrier(2, timeout=30)
    checked = forms.check_start

    def check_then_wait(*args, **kwargs):
        count = checked(*args, **kwargs)
        barrier.wait()
        return count

    monkeypatch.setattr(forms, "check_start", check_then_wait)
    statuses: list[int] = []
    errors: list[BaseException] = []

    def tab() -> None:
        try:
            tab_client = Client()
            tab_client.force_login(boss)
            statuses.append(post(tab_client, project).status_code)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=tab) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(statuses) == [302, 409]
    job = ImportJob.objects.get(project=project)
    assert UploadPart.objects.filter(job=job).count() == UploadPart.objects.count() == 1


# ------------------------------------------------------------------ a JSON true is not class 1
@pytest.mark.parametrize("name,row,needle", [
    ("l.jsonl", {"text": "a", "label": True}, "line 1: label true is a yes/no value (JSON boolean)"),
    ("p.jsonl", {"text": "a", "options": [{"id": True}], "accept": [True], "answer": "accept"},
     "line 1: label true is a yes/no value (JSON boolean)"),
    ("ls.json", [{"id": 4, "data": {"text": "a"}, "annotations": [{"result": [
        {"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": [True]}}]}]}],
     "task 0 (Label Studio id 4), annotation 0: class true is a yes/no value (JSON boolean)"),
    ("f.jsonl", {"text": "a", "label": 1.5}, "line 1: label 1.5 is not a whole number"),
])
def test_a_boolean_or_fractional_class_in_a_file_is_refused_naming_it(client, name, row, needle):
    # True == 1 in Python: a JSON true (or 1.0000001) must not become the class 1
    project = text_project(classes=[0, 1])
    admin_client(client, project)
    data = json.dumps(row).encode() + b"\n"
    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 400
    assert needle in parse(response.content).text, parse(response.content).text[:3000]
    assert not Item.objects.filter(project=project).exists() and not ImportJob.objects.exists()
    # the same value deep in a file: refused by the worker's first pass, nothing stored
    if name.endswith(".jsonl"):
        lines = [json.dumps({"text": f"t{i}", "label": i % 2}) for i in range(300)] + [json.dumps(row)]
        job = new_job(project, name, ["\n".join(lines).encode()])
        job = fanout.stage(job.pk, lambda *a: pytest.fail("nothing to send"))
        assert job.status == "failed" and needle.replace("line 1", "line 301") in job.error
        assert not Item.objects.filter(project=project).exists()


def test_a_whole_number_written_as_a_float_is_that_class():
    project = text_project(classes=[0, 1])
    assert project.parse_class(1.0) == 1 and project.parse_class("1") == 1 and project.parse_class(0) == 0
    for bad, message in ((True, "true is a yes/no value"), (False, "false is a yes/no value"),
                         (0.5, "0.5 is not a whole number"), (float("nan"), "NaN is not a whole number")):
        with pytest.raises(ValueError, match=message):
            project.parse_class(bad)
