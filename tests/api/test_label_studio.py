"""Label Studio: a JSON export uploaded as a project's items with their labels, the project
exported as Label Studio tasks, and the ML-backend routes (through the Django test client).
The real Label Studio server is driven by tests/api/test_label_studio_live.py."""

from __future__ import annotations

import io
import json

import pytest

from annotator.labelling.annotation.invariants import violations
from annotator.labelling.annotation.label_studio import backend_token
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import run_job
from annotator.labelling.models import (
    ImportChunk,
    ImportJob,
    Item,
    Label,
    LabelStudioTask,
    LearnerState,
    Membership,
    Project,
)
from annotator.labelling.reporting.label_studio import labeling_config
from annotator.labelling.worker import tasks as worker_tasks
from tests.support.app import SPAM, member, text_project

pytestmark = pytest.mark.django_db


def choices(value: str, kind: str = "choices") -> list[dict]:
    key = "labels" if kind == "labels" else "choices"
    return [{"from_name": "label", "to_name": "text", "type": kind, "value": {key: [value]}}]


def export_file(tasks: list[dict]) -> io.BytesIO:
    data = io.BytesIO(json.dumps(tasks).encode())
    data.name = "project-1-at-2026.json"
    return data


def ls_tasks() -> list[dict]:
    return [
        {"id": 11, "data": {"text": "win a free prize now"},
         "annotations": [{"id": 1, "completed_by": {"id": 1, "email": "alice@example.com"},
                          "result": choices("spam")},
                         {"id": 2, "completed_by": 2, "result": choices("spam")}],
         "predictions": [{"model_version": "theirs", "score": 0.9, "result": choices("spam")}]},
        {"id": 12, "data": {"text": "see you at the station"},
         "annotations": [{"id": 3, "created_username": "bob@example.com, 2", "result": choices("ham")}]},
        {"id": 13, "data": {"text": "are we still on for lunch"},
         "annotations": [{"id": 4, "completed_by": 1, "was_cancelled": True, "result": []}]},
        {"id": 14, "data": {"text": "call me when you get home"}},
    ]


def upload(client, project: Project, tasks: list[dict]):
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    return client.post(f"/projects/{project.pk}/upload", {"file": export_file(tasks)})


def import_as_uploaded(job: ImportJob) -> ImportJob:
    """Run the upload's import as the workers do (``tasks.import_upload``, then one
    ``tasks.import_chunk`` per chunk it staged): every record goes through the staged chunks."""
    worker_tasks.import_upload(job.pk)
    for index in ImportChunk.objects.filter(job=job).order_by("index").values_list("index", flat=True):
        worker_tasks.import_chunk(job.pk, index)
    job.refresh_from_db()
    return job


@pytest.mark.parametrize("path", ["upload page", "import_items command"])
def test_an_export_becomes_items_with_labels_kept_with_their_annotators(client, settings, path):
    # the upload page's import (small chunks: the first one inline, the others by import_chunk
    # tasks) and the command's (run_job) store the same labels
    settings.IMPORT_FIRST_CHUNK, settings.IMPORT_CHUNK = 1, 2
    project = text_project()
    assert upload(client, project, ls_tasks()).status_code == 302
    job = ImportJob.objects.get(project=project)
    job = import_as_uploaded(job) if path == "upload page" else run_job(job.pk)
    assert job.status == "done" and job.known == 2
    items = list(Item.objects.filter(project=project).order_by("seq"))
    assert [i.text for i in items] == [t["data"]["text"] for t in ls_tasks()]
    labels = list(Label.objects.filter(project=project).order_by("id")
                  .values_list("item__seq", "value", "annotator__username", "primary", "drawn"))
    assert labels == [(0, "spam", "labelstudio+alice@example.com", True, False),
                      (0, "spam", "labelstudio+user_2", False, False),
                      (1, "ham", "labelstudio+bob@example.com", True, False)]
    assert not get_user(labels[0][2]).is_active  # an account that can never log in
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert state.version == 2  # both primary labels taught, one model version each
    items = {i.seq: i for i in Item.objects.filter(project=project)}
    assert items[0].status == items[1].status == Item.Status.LABELLED
    assert items[0].query_prob == 0.0 and items[0].queried is False  # left out of the estimates
    coverage = client.get(f"/api/projects/{project.pk}/metrics").json()["coverage"]
    assert coverage["unasked_by_cause"] == {"labelled": 2} and coverage["held_by_cap"] == 0  # and said so
    assert items[2].status != Item.Status.PENDING and not items[2].labels.exists()
    assert violations(project) == []
    # the dataset export names the annotator
    body = b"".join(client.get(f"/api/projects/{project.pk}/dataset").streaming_content)
    rows = [json.loads(line) for line in body.splitlines()]
    assert rows[1]["annotator"] == "labelstudio+bob@example.com" and rows[1]["label"] == "ham"


def get_user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)


@pytest.mark.parametrize("case,needle", [
    ("span", "task 1 (Label Studio id 12), annotation 0: a 'labels' result (a span control, <Labels>)"),
    ("class", "task 1 (Label Studio id 12), annotation 0: class"),
    ("prediction", "task 0 (Label Studio id 11), prediction 0: class"),
    ("prediction bool", "task 0 (Label Studio id 11), prediction 1: expected an object or a prediction id, "
                        "got bool"),
    ("no text", "task 3 (Label Studio id 14): no data.text"),
    ("not a list", "a Label Studio export is a JSON list of tasks"),
])
def test_bad_exports_are_refused_naming_the_task_and_store_nothing(client, case, needle):
    project = text_project()
    tasks = ls_tasks()
    if case == "span":
        tasks[1]["annotations"][0]["result"] = choices("ham", kind="labels")
    elif case == "class":
        tasks[1]["annotations"][0]["result"] = choices("eggs")
    elif case == "prediction":
        tasks[0]["predictions"][0]["result"] = choices("eggs")
    elif case == "prediction bool":
        tasks[0]["predictions"] = [7, True]
    elif case == "no text":
        tasks[3]["data"] = {"image": "x"}
    response = upload(client, project, 7 if case == "not a list" else tasks)
    # refused on the form (the first records are checked there) with the task named
    assert response.status_code == 400, response.status_code
    page = response.content.decode().replace("&#x27;", "'").replace("&lt;", "<").replace("&gt;", ">")
    assert needle in page
    assert not Item.objects.filter(project=project).exists() and not Label.objects.exists()
    assert not ImportJob.objects.filter(project=project).exists()


def real_export() -> list[dict]:
    """Two tasks as a real Label Studio 1.23.2 "Export -> JSON" file writes them (every key it
    writes; predictions given by their ids, ``completed_by`` a user id)."""

    def annotation(n: int, choice: str) -> dict:
        return {"id": n, "completed_by": 1, "result": choices(choice), "was_cancelled": False,
                "ground_truth": False, "created_at": "2026-11-29T14:52:28.712928Z",
                "updated_at": "2026-11-29T14:52:28.712977Z", "draft_created_at": None, "lead_time": None,
                "prediction": {}, "result_count": 0, "unique_id": "acf43b62-da0d-497d-b310-b01267c564e0",
                "import_id": None, "last_action": None, "bulk_created": False, "task": n, "project": 1,
                "updated_by": None, "parent_prediction": None, "parent_annotation": None,
                "last_created_by": None}

    def task(n: int, text: str, done: list[dict]) -> dict:
        return {"id": n, "annotations": done, "drafts": [], "predictions": [n], "data": {"text": text},
                "meta": {}, "created_at": "2026-11-29T14:52:28.701463Z",
                "updated_at": "2026-11-29T14:52:28.701522Z", "allow_skip": True, "inner_id": n,
                "total_annotations": len(done), "cancelled_annotations": 0, "total_predictions": 1,
                "comment_count": 0, "unresolved_comment_count": 0, "last_comment_updated_at": None,
                "project": 1, "updated_by": None, "comment_authors": []}

    return [task(1, "win a free prize now", [annotation(1, "spam")]), task(2, "see you at noon", [])]


def test_a_real_label_studio_export_with_prediction_ids_is_imported(client):
    project = text_project()
    assert upload(client, project, real_export()).status_code == 302
    job = import_as_uploaded(ImportJob.objects.get(project=project))
    assert job.status == "done", job.error
    assert list(Item.objects.filter(project=project).order_by("seq").values_list("text", flat=True)) == [
        "win a free prize now", "see you at noon"]
    labels = Label.objects.filter(project=project).values_list("item__seq", "value", "annotator__username")
    assert list(labels) == [(0, "spam", "labelstudio+user_1")]


#: JSON nested past the parser's recursion limit (deep uploads: tests/web/test_bad_input.py)
DEEP = b"[" * 100_000 + b"]" * 100_000


def test_an_export_with_a_utf8_bom_is_read(client):
    project = text_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    data = io.BytesIO(b"\xef\xbb\xbf" + json.dumps(ls_tasks()).encode())
    data.name = "bom.json"
    assert client.post(f"/projects/{project.pk}/upload", {"file": data}).status_code == 302
    assert run_job(ImportJob.objects.get(project=project).pk).status == "done"
    assert Item.objects.filter(project=project).count() == len(ls_tasks())


def test_the_export_reads_back_as_the_same_labels(client):
    project = text_project(SPAM, params={"delta": 100.0})
    update_project(project.pk)
    boss = member(project, "boss", Membership.Role.ADMIN)
    from harness.chosen_labels import label_chosen

    queued = list(Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq"))
    for item in queued[:2]:
        label_chosen(project, item.pk, boss, "spam" if "free" in item.text else "ham")
    update_project(project.pk)
    url = f"/api/projects/{project.pk}/label-studio/tasks"
    assert client.get(url, HTTP_AUTHORIZATION="Token wrong").status_code == 403
    tasks = json.loads(b"".join(client.get(url, HTTP_AUTHORIZATION=f"Token {project.api_token}")
                                .streaming_content))
    assert len(tasks) == len(SPAM)
    labelled = {t["data"]["text"]: t["annotations"][0]["result"][0]["value"]["choices"][0]
                for t in tasks if t["annotations"]}
    assert labelled == {i.text: i.labels.get().value for i in queued[:2]}
    assert all(t["annotations"][0]["result"][0]["from_name"] == "label" for t in tasks if t["annotations"])
    decided = [t for t in tasks if t["predictions"]]
    assert decided and all(p["model_version"].startswith("v") and 0 <= p["score"] <= 1
                           for t in decided for p in t["predictions"])
    # the file imports into a fresh project with the same labels
    other = text_project()
    client.force_login(member(other, "boss2", Membership.Role.ADMIN))
    data = export_file(tasks)
    assert client.post(f"/projects/{other.pk}/upload", {"file": data}).status_code == 302
    assert run_job(ImportJob.objects.get(project=other).pk).status == "done"
    assert dict(Label.objects.filter(project=other).values_list("item__text", "value")) == labelled
    assert '<Choices name="label" toName="text"' in labeling_config(project)


def backend(project: Project) -> str:
    return f"/api/label-studio/{project.pk}/{backend_token(project)}"


def post(client, url: str, body) -> object:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_ml_backend_routes_need_the_project_token(client):
    project = text_project(SPAM)
    other = text_project()
    for pk, token in ((project.pk, "0" * 40), (project.pk, backend_token(other)),
                      (project.pk + 99, backend_token(project))):
        url = f"/api/label-studio/{pk}/{token}"
        assert client.get(url + "/health").status_code == 403
        response = post(client, url + "/predict", {"tasks": [{"id": 1, "data": {"text": "x"}}]})
        assert response.status_code == 403 and response.json()["error"]
        assert post(client, url + "/webhook", {"action": "ANNOTATION_CREATED"}).status_code == 403
    assert not LabelStudioTask.objects.exists()
    assert client.get(backend(project) + "/health").json()["status"] == "UP"


def test_predict_then_annotations_teach_the_learner(client):
    project = text_project(params={"delta": 1.0})
    config = labeling_config(project)
    assert post(client, backend(project) + "/setup", {"schema": config})
    tasks = [{"id": 100 + i, "data": {"text": t}} for i, t in enumerate(SPAM)]
    answer = post(client, backend(project) + "/predict", {"tasks": tasks, "label_config": config})
    assert answer.status_code == 200
    results = answer.json()["results"]
    assert len(results) == len(SPAM)
    assert all(r["result"][0]["type"] == "choices"
               and r["result"][0]["value"]["choices"][0] in ("ham", "spam")
               and 0 <= r["score"] <= 1 and r["model_version"] == "v0" for r in results)
    assert Item.objects.filter(project=project).count() == len(SPAM)
    # asked again: the same items
    post(client, backend(project) + "/predict", {"tasks": tasks[:2]})
    assert Item.objects.filter(project=project).count() == len(SPAM)
    update_project(project.pk)

    def annotate(n: int, task: dict, value: str, action: str = "ANNOTATION_CREATED"):
        return post(client, backend(project) + "/webhook", {
            "action": action, "task": task, "project": {"id": 1},
            "annotation": {"id": n, "completed_by": 7, "result": choices(value)}})

    assert annotate(1, tasks[0], "spam").json()["taught"] is True
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert state.version == 1
    item = Item.objects.get(project=project, text=SPAM[0])
    assert item.labels.get(primary=True).value == "spam"
    assert item.labels.get(primary=True).annotator.username == "labelstudio+user_7"
    # updated there: relabelled here (a new model version), deleted there: taken back here
    annotate(1, tasks[0], "ham", "ANNOTATION_UPDATED")
    update_project(project.pk)
    assert item.labels.get(primary=True, undone_at__isnull=True).value == "ham"
    assert LearnerState.objects.get(project=project).version > 1
    done = post(client, backend(project) + "/webhook", {"action": "ANNOTATIONS_DELETED",
                                                        "annotations": [{"id": 1}]}).json()
    assert done["retracted"] is True
    update_project(project.pk)
    assert not item.labels.filter(primary=True).exists()
    assert violations(project) == []
    # a task never predicted: imported on its first annotation and taught at once, even while
    # the full queue keeps the stream engine from deciding it (it never enters the queue)
    assert annotate(2, {"id": 999, "data": {"text": "a brand new message"}}, "ham").json()["taught"]
    update_project(project.pk)
    new = Item.objects.get(project=project, text="a brand new message")
    assert new.status in (Item.Status.PENDING, Item.Status.LABELLED)
    assert new.labels.get().applied_version is not None
    assert violations(project) == []


def test_tasks_exported_here_come_back_through_the_backend_as_their_own_items(client):
    # the project's tasks file imported into Label Studio, which then asks its ML backend
    # ("Retrieve predictions") and sends its annotations: each task carries meta.item_id
    project = text_project(SPAM, params={"delta": 100.0})
    update_project(project.pk)
    url = f"/api/projects/{project.pk}/label-studio/tasks"
    exported = json.loads(b"".join(client.get(url, HTTP_AUTHORIZATION=f"Token {project.api_token}")
                                   .streaming_content))
    there = [{**task, "id": 500 + n} for n, task in enumerate(exported)]  # Label Studio's ids
    items = list(Item.objects.filter(project=project).order_by("seq").values_list("pk", flat=True))
    assert [t["meta"]["item_id"] for t in there] == items
    answer = post(client, backend(project) + "/predict", {"tasks": there})
    assert answer.status_code == 200 and len(answer.json()["results"]) == len(SPAM)
    assert list(Item.objects.filter(project=project).order_by("seq").values_list("pk", flat=True)) == items
    assert dict(LabelStudioTask.objects.filter(project=project).values_list("task_id", "item_id")) == {
        t["id"]: t["meta"]["item_id"] for t in there}
    # an annotation there is the label of the item it came from (decided here: the relabel path)
    task = there[1]
    taught = post(client, backend(project) + "/webhook", {
        "action": "ANNOTATION_CREATED", "task": task,
        "annotation": {"id": 1, "completed_by": 7, "result": choices("spam")}}).json()
    assert taught == {"action": "ANNOTATION_CREATED", "item_id": task["meta"]["item_id"], "taught": True}
    assert Item.objects.get(pk=task["meta"]["item_id"]).labels.get(undone_at__isnull=True).value == "spam"
    # not honoured: an item of another project (the same text), or a task whose text is not the
    # item's (meta copied onto another task): each becomes a new item of this project
    other = text_project([SPAM[0]])
    theirs = Item.objects.get(project=other)
    strangers = [{"id": 900, "data": {"text": SPAM[0]}, "meta": {"item_id": theirs.pk}},
                 {"id": 901, "data": {"text": "a different message"}, "meta": {"item_id": items[0]}},
                 {"id": 902, "data": {"text": SPAM[2]}, "meta": {"item_id": True}}]
    assert post(client, backend(project) + "/predict", {"tasks": strangers}).status_code == 200
    made = dict(LabelStudioTask.objects.filter(project=project, task_id__gte=900)
                .values_list("task_id", "item_id"))
    assert len(set(made.values())) == 3 and not set(made.values()) & {theirs.pk, *items}
    assert Item.objects.filter(project=project).count() == len(SPAM) + 3
    assert not LabelStudioTask.objects.filter(item=theirs).exists() and not theirs.labels.exists()
    assert violations(project) == [] and violations(other) == []


def test_ml_backend_bad_input_is_a_clear_400_and_stores_nothing(client):
    project = text_project()
    url = backend(project)
    span = labeling_config(project).replace("Choices", "Labels").replace("Choice ", "Label ")
    assert "Choices" in post(client, url + "/setup", {"schema": span}).json()["error"]
    assert post(client, url + "/predict", {"tasks": []}).status_code == 400
    assert post(client, url + "/predict", {"tasks": [{"data": {"text": "x"}}]}).status_code == 400
    assert "data.text" in post(client, url + "/predict", {"tasks": [{"id": 3, "data": {}}]}).json()["error"]
    task = {"id": 5, "data": {"text": "x"}}
    bad = post(client, url + "/webhook", {"action": "ANNOTATION_CREATED", "task": task,
                                          "annotation": {"id": 9, "result": choices("eggs")}})
    assert bad.status_code == 400 and "eggs" in bad.json()["error"]
    span_result = post(client, url + "/webhook", {
        "action": "ANNOTATION_CREATED", "task": task,
        "annotation": {"id": 9, "result": choices("ham", kind="labels")}})
    assert span_result.status_code == 400 and "span" in span_result.json()["error"]
    assert client.post(url + "/webhook", b"not json", content_type="application/json").status_code == 400
    ignored = post(client, url + "/webhook", {"action": "PROJECT_UPDATED"}).json()
    assert ignored == {"ignored": "PROJECT_UPDATED"}
    assert not Item.objects.filter(project=project).exists() and not Label.objects.exists()


@pytest.mark.parametrize("route", ["setup", "predict", "webhook"])
@pytest.mark.parametrize("body", [DEEP, b'{"tasks": ' + b"[" * 5000 + b"]" * 5000 + b"}"],
                         ids=["list", "inside"])
def test_ml_backend_json_nested_too_deeply_is_a_400_and_stores_nothing(client, route, body):
    project = text_project(SPAM)
    update_project(project.pk)
    before = (Item.objects.count(), Label.objects.count(), LabelStudioTask.objects.count())
    response = client.post(f"{backend(project)}/{route}", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"error": "the body: JSON nested too deeply"}
    assert (Item.objects.count(), Label.objects.count(), LabelStudioTask.objects.count()) == before


def test_ml_backend_body_that_is_not_json_says_so(client):
    project = text_project()
    for route in ("setup", "predict", "webhook"):
        response = client.post(f"{backend(project)}/{route}", b"{not json", content_type="application/json")
        assert response.status_code == 400 and "the body: invalid JSON" in response.json()["error"]
        latin1 = client.post(f"{backend(project)}/{route}", '{"tasks": "é"}'.encode("latin-1"),
                             content_type="application/json")
        assert latin1.status_code == 400 and latin1.json()["error"] == "the body: not valid UTF-8"
    assert not Item.objects.filter(project=project).exists()


def test_setup_route_gives_the_config_and_backend_url(client):
    project = text_project()
    answer = client.get(f"/api/projects/{project.pk}/label-studio/setup",
                        HTTP_AUTHORIZATION=f"Token {project.api_token}").json()
    assert answer["ml_backend_url"].endswith(f"/api/label-studio/{project.pk}/{backend_token(project)}/")
    assert "<Choices" in answer["label_config"]


def test_image_tasks_travel_as_inline_images_and_links_are_refused(client):
    from tests.support.app import digits_project

    project = digits_project(12, params={"delta": 100.0})
    update_project(project.pk)
    boss = member(project, "boss", Membership.Role.ADMIN)
    from harness.chosen_labels import label_chosen

    item = Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq").first()
    label_chosen(project, item.pk, boss, item.gold)
    answer = client.get(f"/api/projects/{project.pk}/label-studio/tasks",
                        HTTP_AUTHORIZATION=f"Token {project.api_token}")
    tasks = json.loads(b"".join(answer.streaming_content))
    assert all(t["data"]["image"].startswith("data:image/png;base64,") for t in tasks)
    other = digits_project(0)
    client.force_login(member(other, "boss2", Membership.Role.ADMIN))
    assert client.post(f"/projects/{other.pk}/upload", {"file": export_file(tasks)}).status_code == 302
    assert run_job(ImportJob.objects.get(project=other).pk).status == "done"
    copied = Item.objects.get(project=other, seq=item.seq)
    assert bytes(copied.data) == bytes(item.data)
    assert copied.labels.get().value == item.gold  # "3" there, the int class 3 here
    # back through the ML backend: each exported task is its own item (its bytes compared)
    n = Item.objects.filter(project=project).count()
    there = [{**task, "id": 40 + i} for i, task in enumerate(tasks)]
    assert post(client, backend(project) + "/predict", {"tasks": there}).status_code == 200
    assert Item.objects.filter(project=project).count() == n
    assert LabelStudioTask.objects.get(project=project, task_id=40).item_id == tasks[0]["meta"]["item_id"]
    tasks[0]["data"]["image"] = "/data/upload/1/digit.png"
    response = client.post(f"/projects/{other.pk}/upload", {"file": export_file(tasks)})
    assert response.status_code == 400 and "task 0: data.image must be an inline" in response.content.decode()
