"""The labels export as Prodigy tasks and as Parquet: a Prodigy file written by the format's
documented rules goes in, is labelled, and comes back out with the same answers and input
hashes; the Parquet exports are read by pyarrow and by Hugging Face ``datasets``."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest

from annotator.labelling.ingest import new_job, run_job
from annotator.labelling.models import Item, Label, Membership
from annotator.labelling.reporting import label_formats
from annotator.labelling.reporting.dataset_export import dataset_stream
from harness.chosen_labels import label_chosen
from learners.uploads.prodigy import task_hashes
from tests.support.app import SPAM, digits_project, member, queued_digits_project, teach, text_project

pytestmark = pytest.mark.django_db
HASHED = {"kind": "text", "name": "hashed-ngrams", "n_features": 2**16}
OPTIONS = [{"id": "ham", "text": "ham"}, {"id": "spam", "text": "spam"}]


def prodigy_file(n: int) -> tuple[bytes, dict[str, dict]]:
    """``n`` annotated Prodigy tasks by the documented rules (choice interface: ``options``, the
    chosen ids in ``accept``, ``answer``; a binary ``label`` task every third line; hashes by
    ``set_hashes``' keys), and the tasks by text."""
    tasks = {}
    for i in range(n):
        text = f"{SPAM[i % len(SPAM)]} {i}"
        cls = "spam" if any(w in text for w in ("free", "prize", "cash", "draw")) else "ham"
        task = ({"text": text, "label": cls} if i % 3 == 0
                else {"text": text, "options": OPTIONS, "accept": [cls]})
        task["_input_hash"], task["_task_hash"] = task_hashes(task)
        task["answer"] = "accept"
        task["_session_id"] = "team-alice"
        tasks[text] = task
    return b"".join(json.dumps(t).encode() + b"\n" for t in tasks.values()), tasks


def _classes(task: dict) -> list:
    return task["accept"] if "accept" in task else [task["label"]]


def test_a_prodigy_file_goes_in_is_labelled_and_comes_back_out_the_same():
    data, tasks = prodigy_file(40)
    project = text_project(featurizer_config=HASHED, params={"delta": 100.0})
    job = run_job(new_job(project, "annotations.jsonl", [data]).pk)
    assert (job.status, job.done) == ("done", 40), job.error
    gold = dict(Item.objects.filter(project=project).values_list("text", "gold"))
    assert gold == {text: _classes(t)[0] for text, t in tasks.items()}

    alice = member(project, "alice", Membership.Role.ANNOTATOR)
    teach(project, alice)  # alice answers every item the learner queries with its class
    labelled = set(Label.objects.filter(project=project).values_list("item__text", flat=True))
    assert len(labelled) >= 10

    lines = "".join(label_formats.table_stream(project, "labels", "prodigy")).splitlines()
    out = [json.loads(line) for line in lines]
    assert {t["text"] for t in out} == labelled
    for task in out:
        original = tasks[task["text"]]
        assert task["answer"] == "accept" and task["accept"] == _classes(original)
        assert task["options"] == OPTIONS and task["_annotator_id"] == "alice"
        assert task["_input_hash"] == original["_input_hash"]  # one input, whatever was asked
        assert (task["_input_hash"], task["_task_hash"]) == task_hashes(task)
        assert task["meta"]["item_id"] and task["meta"]["created"]

    # and the export reads back in: the same classes
    again = text_project(featurizer_config=HASHED)
    job = run_job(new_job(again, "export.prodigy.jsonl", ["\n".join(lines).encode()]).pk)
    assert job.status == "done", job.error
    assert dict(Item.objects.filter(project=again).values_list("text", "gold")) == \
        {t["text"]: t["accept"][0] for t in out}


def test_prodigy_tasks_of_images_carry_a_data_uri(client):
    project = queued_digits_project()
    boss = member(project, "boss", Membership.Role.ADMIN)
    item = Item.objects.filter(project=project, status=Item.Status.QUEUED).first()
    label_chosen(project, item.pk, boss, project.classes[0])
    client.force_login(boss)
    response = client.get(f"/projects/{project.pk}/export/labels.prodigy.jsonl")
    assert response.status_code == 200
    assert 'filename="labels-' in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    (task,) = [json.loads(line) for line in body.decode().splitlines()]
    assert task["image"].startswith("data:image/png;base64,") and task["accept"] == [project.classes[0]]
    assert task["meta"]["file"] == item.filename

    # and back in: the same image bytes, name and class
    again = digits_project(0)
    job = run_job(new_job(again, "images.prodigy.jsonl", [body]).pk)
    assert job.status == "done", job.error
    (copy,) = Item.objects.filter(project=again)
    assert (bytes(copy.data), copy.filename) == (bytes(item.data), item.filename)
    assert copy.gold == project.classes[0]


def test_a_vectors_project_has_no_prodigy_export():
    project = text_project(item_kind="vectors", featurizer_config={"kind": "vectors", "n_features": 8})
    with pytest.raises(ValueError, match="Prodigy tasks hold texts or images"):
        label_formats.table_stream(project, "labels", "prodigy")


def _labelled_project() -> object:
    data, _ = prodigy_file(30)
    project = text_project(featurizer_config=HASHED, params={"delta": 100.0})
    run_job(new_job(project, "a.jsonl", [data]).pk)
    teach(project, member(project, "alice"))
    return project


def test_the_labels_parquet_export_and_hugging_face_datasets_read_it(tmp_path, monkeypatch):
    project = _labelled_project()
    n = Label.objects.filter(project=project).count()
    path = tmp_path / "labels.parquet"
    path.write_bytes(b"".join(label_formats.table_stream(project, "labels", "parquet")))
    table = pq.read_table(path)
    assert table.num_rows == n and table.schema.field("label").type == "string"
    assert set(table.column("label").to_pylist()) <= {"ham", "spam"}

    dataset_path = tmp_path / "dataset.parquet"
    dataset_path.write_bytes(b"".join(dataset_stream(project, "parquet")))

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    labels = datasets.load_dataset("parquet", data_files=str(path), split="train",
                                   cache_dir=str(tmp_path / "hf"))
    assert labels.num_rows == n
    assert labels.column_names[:4] == ["item_id", "seq", "content", "label"]
    assert labels[0]["annotator"] == "alice" and labels[0]["label"] in ("ham", "spam")
    items = datasets.load_dataset("parquet", data_files={"train": str(dataset_path)}, split="train",
                                  cache_dir=str(tmp_path / "hf"))
    assert items.num_rows == Item.objects.filter(project=project).count()
    assert "provenance" in items.column_names
    assert {json.loads(v) for v in items["label"] if v is not None} <= {"ham", "spam"}


def test_an_integer_class_project_exports_an_int64_label_column():
    project = text_project(featurizer_config=HASHED, classes=[0, 1], params={"delta": 100.0})
    data = b"".join(json.dumps({"text": f"{SPAM[i % 6]} {i}", "label": i % 2}).encode() + b"\n"
                    for i in range(20))
    run_job(new_job(project, "a.jsonl", [data]).pk)
    teach(project, member(project, "alice"))
    table = pq.read_table(io.BytesIO(b"".join(label_formats.labels_parquet(project))))
    assert str(table.schema.field("label").type) == "int64"
    assert set(table.column("label").to_pylist()) <= {0, 1}


def test_the_api_serves_the_labels_in_every_format(client):
    project = _labelled_project()
    auth = {"HTTP_AUTHORIZATION": f"Token {project.api_token}"}
    for fmt in label_formats.LABEL_FORMATS:
        response = client.get(f"/api/projects/{project.pk}/labels", {"format": fmt}, **auth)
        assert response.status_code == 200, fmt
        assert response["Content-Type"] == label_formats.CONTENT_TYPES[fmt]
    bad = client.get(f"/api/projects/{project.pk}/labels", {"format": "xml"}, **auth)
    assert bad.status_code == 400 and "unknown format 'xml'" in bad.json()["error"]


def test_the_console_links_the_labels_parquet_and_prodigy_exports(client):
    """docs/formats.md offers both from the console: the links are there and answer the files
    (a vectors project, which has no Prodigy form, gets the Parquet link only)."""
    from tests.support.html import parse

    project = _labelled_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    links = {a.attrs["href"]: a.text for a in parse(client.get(f"/projects/{project.pk}/console").content)
             .find_all("a") if "download" in a.attrs}
    parquet, prodigy = (f"/projects/{project.pk}/export/labels.parquet",
                        f"/projects/{project.pk}/export/labels.prodigy.jsonl")
    assert links[parquet] == "labels (.parquet)" and links[prodigy] == "labels as Prodigy tasks (.jsonl)"
    table = pq.read_table(io.BytesIO(b"".join(client.get(parquet).streaming_content)))
    assert table.num_rows == Label.objects.filter(project=project, undone_at__isnull=True).count()
    tasks = b"".join(client.get(prodigy).streaming_content).splitlines()
    assert tasks and all(json.loads(t)["answer"] == "accept" for t in tasks)
    vectors = text_project(item_kind="vectors", featurizer_config={"kind": "vectors", "n_features": 8})
    client.force_login(member(vectors, "boss", Membership.Role.ADMIN))
    page = client.get(f"/projects/{vectors.pk}/console").content.decode()
    assert f"/projects/{vectors.pk}/export/labels.parquet" in page and "labels.prodigy.jsonl" not in page
