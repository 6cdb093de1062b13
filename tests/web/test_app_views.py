"""Pages and the JSON API through the Django test client: auth, membership, labelling, exports."""

from __future__ import annotations

import base64
import csv
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotator.labelling.annotation.actions import NotOfferedError, lease_next, submit_label
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import ImportJob, Item, Label, Membership
from tests.support.app import SPAM, digits_project, leased_item_id, member, text_project
from tests.support.html import error_text, parse

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    p = digits_project(20)
    update_project(p.pk)
    return p


def login(client, project, username, role=Membership.Role.ANNOTATOR):
    user = member(project, username, role)
    client.force_login(user)
    return user


def test_login_required_everywhere(client, project):
    for url in ["/", f"/projects/{project.pk}/", f"/projects/{project.pk}/upload",
                f"/projects/{project.pk}/export/labels.csv"]:
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/accounts/login/"), url
    assert client.get(f"/api/projects/{project.pk}/metrics").status_code == 403
    assert client.get("/accounts/login/").status_code == 200


def test_non_members_get_404_and_see_no_projects(client, project):
    outsider = get_user_model().objects.create_user("outsider", password="pw")
    client.force_login(outsider)
    assert project.name not in client.get("/").content.decode()
    item = Item.objects.filter(project=project).first()
    for url in [f"/projects/{project.pk}/", f"/projects/{project.pk}/items/{item.pk}/image",
                f"/api/projects/{project.pk}/metrics"]:
        assert client.get(url).status_code == 404, url  # as for a project that does not exist
    assert client.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": "1"}).status_code == 404


def test_annotator_cannot_upload_or_export(client, project):
    login(client, project, "ann")
    for url in [f"/projects/{project.pk}/upload", f"/projects/{project.pk}/export/model.npz",
                f"/projects/{project.pk}/export/labels.jsonl"]:
        assert client.get(url).status_code == 403, url


def test_queue_page_leases_shows_image_and_takes_a_label(client, project):
    user = login(client, project, "ann")
    assert project.name in client.get("/").content.decode()
    page = client.get(f"/projects/{project.pk}/")
    assert page.status_code == 200
    item_id = leased_item_id(page)
    item = Item.objects.get(pk=item_id)
    assert item.status == "leased" and item.lease_owner == user
    html = parse(page.content)
    assert {b.attrs.get("value") for b in html.find_all("button")} >= {str(c) for c in range(10)}
    assert html.by_id("waiting").text.isdigit()
    image = client.get(f"/projects/{project.pk}/items/{item_id}/image")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert image.content == bytes(item.data)
    assert leased_item_id(client.get(f"/projects/{project.pk}/")) == item_id  # same lease again
    assert client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": "11"}).status_code == 400
    response = client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": str(item.gold)})
    assert response.status_code == 302
    label = Label.objects.get(item_id=item_id)
    assert (label.value, label.annotator, label.primary) == (item.gold, user, True)
    assert label.applied_version is None
    assert label.seconds is not None and label.seconds >= 0
    assert Item.objects.get(pk=item_id).status == "labelled"
    assert update_project(project.pk).applied == 1


def test_lease_expiry_returns_the_item_and_late_labels_are_kept(project):
    a, b = member(project, "a"), member(project, "b")
    first = lease_next(project, a)
    second = lease_next(project, b)
    assert first.pk != second.pk  # two annotators never get the same item
    assert lease_next(project, a).pk == first.pk  # asking again returns the same lease
    past = timezone.now() - timedelta(seconds=1)
    Item.objects.filter(pk__in=[first.pk, second.pk]).update(lease_expires=past)
    c = member(project, "c")
    again = lease_next(project, c)
    assert again.pk == first.pk and again.lease_owner == c  # the expired lease went back to the queue
    with pytest.raises(NotOfferedError):  # c holds it now: a's late label is refused
        submit_label(project, first.pk, a, first.gold)
    late = submit_label(project, second.pk, b, second.gold)  # expired, but nobody took it: accepted
    assert late.primary and late.seconds is not None
    assert submit_label(project, first.pk, c, first.gold).primary
    extra = submit_label(project, first.pk, a, first.gold)  # labelled already: an extra opinion
    assert not extra.primary and extra.seconds is None
    assert Label.objects.filter(item=first).count() == 2  # the refused label stored nothing
    assert update_project(project.pk).applied == 2
    assert Label.objects.get(pk=extra.pk).applied_version is None


def test_upload_view_refuses_a_bad_start_on_the_form_and_stores_nothing(client, project):
    login(client, project, "boss", Membership.Role.ADMIN)
    data = io.BytesIO(b"this is not a zip archive")
    data.name = "x.zip"
    response = client.post(f"/projects/{project.pk}/upload", {"file": data})
    assert response.status_code == 400 and "not a readable ZIP" in response.content.decode()
    data = io.BytesIO(b"text,label\nhi,0\n")
    data.name = "x.csv"  # a text file for an image project: the formats it takes are named
    page = client.post(f"/projects/{project.pk}/upload", {"file": data}).content
    assert ("an image project takes .zip, .jsonl, .ndjson, .parquet, .json (each also gzipped, "
            "e.g. .zip.gz), not '.csv'") in error_text(page)
    assert not ImportJob.objects.exists()


def test_upload_view_stores_a_job_then_the_worker_imports_it_or_shows_why_not(client):
    project = text_project()
    login(client, project, "boss", Membership.Role.ADMIN)
    lines = ["text\tlabel"] + [f"message {i}\tham" for i in range(30)]
    lines[27] = "\tham"  # an empty text past the rows checked on upload
    data = io.BytesIO("\n".join(lines).encode())
    data.name = "x.tsv"
    response = client.post(f"/projects/{project.pk}/upload", {"file": data})
    assert response.status_code == 302
    job = ImportJob.objects.get(project=project)
    assert job.status == "waiting" and job.filename == "x.tsv"
    from annotator.labelling.ingest import run_job

    assert run_job(job.pk).status == "failed"
    page = parse(client.get(f"/projects/{project.pk}/imports/{job.pk}/").content)
    failed = page.find("p", class_="error").text
    assert "The import failed: line 28: 'text' must be a non-empty string" in failed
    assert not page.find_all("progress")


def test_api_items_post_and_get(client):
    project = text_project(params={"delta": 0.5, "query": "all"})
    url = f"/api/projects/{project.pk}/items"
    body = {"items": [{"text": t, "gold": "spam" if "free" in t else None} for t in SPAM]}
    assert client.post(url, body, content_type="application/json").status_code == 403
    auth = {"HTTP_AUTHORIZATION": f"Token {project.api_token}"}
    assert client.post(url, body, content_type="application/json",
                       HTTP_AUTHORIZATION="Token wrong").status_code == 403
    bad = client.post(url, {"items": [{"text": "ok"}, {"text": ""}]}, content_type="application/json", **auth)
    assert bad.status_code == 400 and "item 1" in bad.json()["error"]
    assert Item.objects.filter(project=project).count() == 0
    created = client.post(url, body, content_type="application/json", **auth)
    assert created.status_code == 201
    ids = [it["id"] for it in created.json()["items"]]
    assert len(ids) == len(SPAM) and Item.objects.get(pk=ids[0]).text == SPAM[0]
    before = client.get(url, {"ids": ",".join(map(str, ids))}, **auth).json()["items"]
    assert all(it["prediction"] is None and it["queried"] is None for it in before)
    update_project(project.pk)
    after = client.get(url, {"ids": ",".join(map(str, ids))}, **auth).json()["items"]
    assert [it["id"] for it in after] == ids
    decided = [it for it in after if it["queried"] is not None]
    assert decided and all(it["query_prob"] == 1.0 and it["prediction"] in ("ham", "spam") for it in decided)
    metrics = client.get(f"/api/projects/{project.pk}/metrics", **auth).json()
    assert metrics["seen"] == len(decided)


def test_api_accepts_base64_images(client, project):
    item = Item.objects.filter(project=project).first()
    payload = {"items": [{"image_base64": base64.b64encode(bytes(item.data)).decode(), "gold": 4}]}
    response = client.post(f"/api/projects/{project.pk}/items", payload, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert response.status_code == 201
    new = Item.objects.get(pk=response.json()["items"][0]["id"])
    assert bytes(new.vector) == bytes(item.vector) and new.gold == 4


def test_label_exports(client, project):
    ann = member(project, "ann")
    item = lease_next(project, ann)
    submit_label(project, item.pk, ann, item.gold)
    login(client, project, "boss", Membership.Role.ADMIN)
    rows = list(csv.DictReader(io.StringIO(b"".join(
        client.get(f"/projects/{project.pk}/export/labels.csv").streaming_content).decode())))
    assert len(rows) == 1 and rows[0]["item_id"] == str(item.pk) and rows[0]["label"] == str(item.gold)
    lines = b"".join(client.get(f"/projects/{project.pk}/export/labels.jsonl").streaming_content).splitlines()
    assert [json.loads(line)["label"] for line in lines] == [item.gold]
    card = json.loads(client.get(f"/projects/{project.pk}/export/model.json").content)
    assert card["algorithm"] == "mpaa-i" and card["classes"] == list(range(10))
