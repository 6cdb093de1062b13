"""The queue panel through the Django test client: why nothing waits (nothing uploaded, paused,
the model catching up, all caught up), vector items numbered as in their LIBSVM file, and the
"saved" line after a label."""

from __future__ import annotations

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import import_records, parse_upload
from annotator.labelling.models import Label, Project
from tests.support.app import leased_item_id, member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def _idle(client, project, name="ann", role="annotator"):
    client.force_login(member(project, name, role=role))
    panel = parse(client.get(f"/projects/{project.pk}/").content).by_id("queue-item")
    assert "data-item" not in panel.attrs and panel.attrs["hx-trigger"] == "every 3s"  # polls on
    return panel


def test_nothing_uploaded_yet_links_admins_to_the_upload_page(client):
    project = text_project([])
    panel = _idle(client, project)
    assert panel.attrs["data-idle"] == "empty" and panel.find("h2").text == "Nothing uploaded yet"
    assert not panel.find_all("a")  # an annotator cannot upload
    panel = _idle(client, project, "boss", role="admin")
    assert panel.find("a").attrs["href"] == f"/projects/{project.pk}/upload"


def test_paused_stream_says_so(client):
    project = text_project(["hello", "win a prize"], params={"delta": 100.0})
    Project.objects.filter(pk=project.pk).update(stream_state=Project.StreamState.PAUSED)
    project.refresh_from_db()
    update_project(project.pk)  # paused: decides nothing
    panel = _idle(client, project)
    assert panel.attrs["data-idle"] == "paused" and panel.find("h2").text == "The stream is paused"


def test_items_not_decided_yet_mean_the_model_is_catching_up(client):
    project = text_project(["hello", "win a prize"], params={"delta": 100.0})  # no worker ran
    panel = _idle(client, project)
    assert panel.attrs["data-idle"] == "catching-up" and panel.find("h2").text == "The model is catching up"


def test_a_label_not_applied_yet_means_catching_up_then_all_caught_up(client):
    project = text_project(["hello"], params={"delta": 100.0})
    update_project(project.pk)
    client.force_login(member(project, "ann"))
    item = leased_item_id(client.get(f"/projects/{project.pk}/"))
    response = client.post(f"/projects/{project.pk}/items/{item}/label", {"value": "spam"}, **HX)
    panel = parse(response.content).by_id("queue-item")
    assert panel.attrs["data-idle"] == "catching-up"  # the label waits for a worker
    assert "saved “spam”" in panel.by_id("save-state").text  # the quiet confirmation
    update_project(project.pk)  # the worker applies it; nothing is left to decide
    assert Label.objects.get().applied_version is not None
    panel = _idle(client, project)
    assert panel.attrs["data-idle"] == "caught-up" and panel.find("h2").text == "All caught up"
    assert "saved" not in panel.by_id("save-state").text  # only right after a label


def test_saving_indicator_is_in_every_item_panel(client):
    project = text_project(["hello", "win a prize", "see you"], params={"delta": 100.0})
    update_project(project.pk)
    client.force_login(member(project, "ann"))
    page = parse(client.get(f"/projects/{project.pk}/").content)
    assert page.by_id("save-state").find("span", class_="saving").text == "saving…"
    forms = [f for f in page.find_all("form") if "hx-post" in f.attrs]
    assert forms and all(f.attrs["hx-indicator"] == "#save-state" for f in forms)  # label and skip


def test_vector_items_show_the_files_feature_numbers(client):
    project = text_project(name="vec", item_kind="vectors", classes=["neg", "pos"],
                           featurizer_config={"kind": "vectors", "n_features": 8}, params={"delta": 100.0})
    records = parse_upload(project, "v.libsvm", b"+1 1:0.5 7:-2.25\n")
    import_records(project, records)
    assert records[0].raw == [[0, 0.5], [6, -2.25]]  # stored from 0
    update_project(project.pk)
    client.force_login(member(project, "ann"))
    panel = parse(client.get(f"/projects/{project.pk}/").content).by_id("queue-item")
    grid = panel.find("dl", class_="vector-grid")
    assert [(dt.text, dd.text) for dt, dd in zip(grid.find_all("dt"), grid.find_all("dd"), strict=True)] == [
        ("1", "0.5"), ("7", "-2.25")]  # as in the file
    assert "2 non-zero features" in panel.find("p", class_="vector-count").text



def test_the_queue_page_is_never_cached(client):
    project = text_project(["hello"], params={"delta": 100.0})
    update_project(project.pk)
    client.force_login(member(project, "ann"))
    assert "no-store" in client.get(f"/projects/{project.pk}/")["Cache-Control"]
