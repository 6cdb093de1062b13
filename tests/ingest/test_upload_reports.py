"""What an upload is checked against and what its import tells the admin (docs/uploads.md):
the dimension of a vectors project, through the upload page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.labelling.ingest import IngestError, parse_upload
from annotator.labelling.models import ImportJob, Item, Membership, Project
from annotator.labelling.projects.creation import create_project
from tests.support.app import member
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
