"""The upload page's format help and the console's curl example, per item kind, and the
403 / 404 / 500 pages (with navigation) through the Django test client. The examples are
checked by feeding them to the real parser and the real API."""

from __future__ import annotations

import base64
import json
import re

import pytest
from django.test import Client

from annotator.labelling.ingest import parse_upload
from annotator.labelling.models import Item
from annotator.labelling.projects.demo import create_demo
from annotator.labelling.web import projects
from tests.support.app import digits_project, member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def _projects():
    return {
        "text": text_project([], name="t"),
        "url": text_project([], name="u", item_kind="url", featurizer_config=None),
        "vectors": text_project([], name="v", item_kind="vectors", classes=["neg", "pos"],
                                featurizer_config={"kind": "vectors", "n_features": 16}),
        "image": digits_project(0),
    }


def _admin(client, project):
    client.force_login(member(project, "boss", role="admin"))


@pytest.mark.parametrize("kind", ["text", "url", "vectors", "image"])
def test_upload_page_examples_parse_as_the_page_says(client, kind):
    project = _projects()[kind]
    _admin(client, project)
    page = parse(client.get(f"/projects/{project.pk}/upload").content)
    help_ = page.by_id("format-help")
    accept = page.by_id("upload-file").attrs["accept"].split(",")
    examples = {pre.attrs["id"]: pre.raw_text for pre in help_.find_all("pre", class_="example")}
    if kind in ("text", "url"):
        assert set(examples) == {"example-csv", "example-jsonl", "example-label-studio"}
        assert ".csv.gz" in accept
        for name, suffix in (("example-csv", ".csv"), ("example-jsonl", ".jsonl")):
            records = parse_upload(project, "x" + suffix, examples[name].encode())
            assert [r.gold for r in records] == [project.classes[0], None]
        records = parse_upload(project, "x.json", examples["example-label-studio"].encode())
        assert [r.opinions for r in records] == [((project.classes[0], "alice@example.com"),), ()]
    elif kind == "vectors":
        assert set(examples) == {"example-libsvm"} and ".txt" in accept and ".libsvm.gz" in accept
        records = parse_upload(project, "x.libsvm", examples["example-libsvm"].encode())
        assert [r.gold for r in records] == ["neg", "pos"] and records[0].raw[0] == [0, 0.5]
        assert "-1</code> (or <code>0</code>) means <code>neg" in client.get(
            f"/projects/{project.pk}/upload").content.decode()
    else:
        assert set(examples) == {"example-folders", "example-manifest"} and accept[:2] == [".zip", ".jsonl"]
        assert ".zip.gz" in accept and ".parquet" in accept and ".json" in accept
        assert "labels.csv" in help_.text and "3/img003.png" not in examples["example-folders"]
        assert examples["example-folders"].splitlines()[1] == "├── 0/img001.png"  # the project's classes
    assert "add .gz to the name" in re.sub(r"\s+", " ", help_.text)


def test_upload_help_says_what_an_undecodable_image_does_and_the_import_does_it(client):
    """The page's help on an image that cannot be decoded matches the import: in a file of one
    batch, the upload is accepted (only the featurizer sees the fault), the import fails naming
    the image, and nothing is imported, not even the good image before it."""
    import numpy as np

    from annotator.labelling.ingest import run_job
    from annotator.labelling.models import ImportJob
    from annotator.labelling.projects.demo import digit_png
    from tests.support.app import zip_bytes

    project = digits_project(0)
    _admin(client, project)
    page = parse(client.get(f"/projects/{project.pk}/upload").content)
    help_ = page.find(class_="help").text
    assert "An image that cannot be decoded is found only when the import reaches it" in help_
    assert "from a file that fits in one batch nothing is imported" in help_
    assert "the items before it are kept" not in help_
    archive = zip_bytes({"1/good.png": digit_png(np.ones(64)), "2/bad.png": b"\x89PNG\r\n\x1a\n broken"})
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(f"/projects/{project.pk}/upload", {"file": SimpleUploadedFile("d.zip", archive)})
    assert response.status_code == 302
    job = run_job(ImportJob.objects.get(project=project).pk)
    assert job.status == "failed" and "2/bad.png" in job.error and "nothing was imported" in job.error
    assert not Item.objects.filter(project=project).exists()

@pytest.mark.parametrize("kind", ["text", "url", "vectors", "image"])
def test_console_curl_example_is_accepted_by_the_api(client, kind):
    project = _projects()[kind]
    _admin(client, project)
    curl = parse(client.get(f"/projects/{project.pk}/console").content).find("pre", class_="curl").raw_text
    body = curl.split("-d '", 1)[1].rstrip().removesuffix("'")
    if kind == "image":  # the shell reads the file: do what `base64 -w0 digit.png` does
        import numpy as np

        from annotator.labelling.projects.demo import digit_png

        png = base64.b64encode(digit_png(np.arange(64.0).reshape(8, 8) % 16)).decode()
        assert "'\"$(base64 -w0 digit.png)\"'" in body
        body = body.replace("'\"$(base64 -w0 digit.png)\"'", png)
    token = re.search(r"Token (\S+)'", curl).group(1)
    response = Client().post(f"/api/projects/{project.pk}/items", body, content_type="application/json",
                             HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 201, response.content
    assert Item.objects.filter(project=project).count() == 1


def test_error_pages_have_navigation(client, monkeypatch):
    project, _ = create_demo(5)
    client.force_login(project.memberships.get(role="annotator").user)
    missing = client.get("/projects/999999/")
    page = parse(missing.content)
    assert missing.status_code == 404 and page.by_id("error-404").find("h1").text == "Nothing here"
    assert page.find("nav", class_="error-nav").find_all("a")[0].attrs["href"] == "/"
    refused = client.get(f"/projects/{project.pk}/console")
    page = parse(refused.content)
    assert refused.status_code == 403
    assert "Only the project's admins may open this page." in page.by_id("error-403").text
    assert page.find("nav", class_="error-nav").find_all("a")[0].attrs["href"] == "/"

    def boom(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(projects, "project_for", boom)
    broken = Client(raise_request_exception=False)
    broken.force_login(project.memberships.get(role="admin").user)
    response = broken.get(f"/projects/{project.pk}/upload")
    page = parse(response.content)
    assert response.status_code == 500
    assert page.by_id("error-500").find("h1").text.startswith("Something went wrong")
    assert page.find("nav", class_="error-nav").find_all("a")[0].attrs["href"] == "/"
    assert json.loads(Client().get("/api/projects/999999/metrics").content)  # /api/ stays JSON
