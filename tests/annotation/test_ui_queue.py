"""The annotator's queue through the Django test client: htmx panels, skip, undo (and the learner
correction it causes), refusals, escaping of text and URL items, the caught-up state."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from annotator.labelling.annotation.actions import NOT_OFFERED
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import Item, Label, LearnerState, Membership, Skip
from tests.support.app import digits_project, leased_item_id, member, queued_digits_project, text_project
from tests.support.html import error_text, parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def project():
    return queued_digits_project()


def _annotator(client, project, name="ann"):
    user = member(project, name)
    client.force_login(user)
    return user


def test_queue_page_has_htmx_buttons_with_shortcuts(client, project):
    _annotator(client, project)
    page = parse(client.get(f"/projects/{project.pk}/").content)
    scripts = [s.attrs.get("src", "") for s in page.find_all("script")]
    assert "/static/htmx.min.js" in scripts and any(s.endswith("queue.js") for s in scripts)
    for value in range(10):  # digit classes are their own keys
        page.find("button", value=str(value), **{"data-key": str(value)})
    assert page.find("button", **{"data-key": "s"}).text == "s Skip"
    assert page.by_id("progress").text.startswith("Labelled today:")
    image = page.find("img", class_="item-image")
    assert image.attrs["src"].startswith("data:image/png;base64,")  # small: inlined


@pytest.mark.django_db
def test_shortcut_keys_of_other_classes():
    from annotator.labelling.web.queue import class_buttons

    def keys(classes):
        task = "binary" if len(classes) == 2 else "multiclass"
        algorithm = "paa-i" if task == "binary" else "mpaa-i"
        return [k for _, k in class_buttons(text_project(classes=classes, task=task, algorithm=algorithm))]

    assert keys(["ham", "spam"]) == ["1", "2"]
    assert keys(["b", "a", "x"]) == ["b", "a", "x"]  # one-character classes keep their letter
    assert keys(["s", "t"]) == ["1", "t"]  # s is the skip key: that class takes a free key
    assert keys([f"c{i}" for i in range(40)])[-1] == ""  # more classes than keys


def test_label_with_htmx_answers_the_next_panel(client, project):
    user = _annotator(client, project)
    first = leased_item_id(client.get(f"/projects/{project.pk}/"))
    response = client.post(f"/projects/{project.pk}/items/{first}/label", {"value": "3"}, **HX)
    assert response.status_code == 200
    body = parse(response.content)
    # a panel, not a page (and my last labels, swapped out of band: tests/annotation/test_ui_recent_labels.py)
    assert [e.tag for e in body.top_elements()] == ["section", "aside"]
    second = leased_item_id(response)
    assert second is not None and second != first
    assert Label.objects.get(item_id=first).value == 3 and Label.objects.get(item_id=first).annotator == user
    assert "my labels here: 1 ·" in body.by_id("progress").text  # progress
    body.find("button", **{"data-key": "u"})  # undo


def test_plain_post_redirects_to_the_queue(client, project):
    _annotator(client, project)
    first = leased_item_id(client.get(f"/projects/{project.pk}/"))
    response = client.post(f"/projects/{project.pk}/items/{first}/label", {"value": "3"})
    assert response.status_code == 302 and response.url == f"/projects/{project.pk}/"


def test_bad_label_is_refused_in_the_panel_and_nothing_stored(client, project):
    _annotator(client, project)
    first = leased_item_id(client.get(f"/projects/{project.pk}/"))
    response = client.post(f"/projects/{project.pk}/items/{first}/label", {"value": "eleven"}, **HX)
    assert response.status_code == 400 and "is not one of the classes" in error_text(response.content)
    assert leased_item_id(response) == first  # the same item stays on screen
    assert not Label.objects.exists()


def test_label_for_an_item_leased_to_someone_else_is_409(client, project):
    other = member(project, "other")
    from django.test import Client

    other_client = Client()
    other_client.force_login(other)
    theirs = leased_item_id(other_client.get(f"/projects/{project.pk}/"))
    _annotator(client, project)
    response = client.post(f"/projects/{project.pk}/items/{theirs}/label", {"value": "1"}, **HX)
    assert response.status_code == 409 and error_text(response.content) == NOT_OFFERED
    assert not Label.objects.filter(item_id=theirs).exists()


def test_skip_gives_the_item_to_others_not_back_to_me(client, project):
    user = _annotator(client, project)
    first = leased_item_id(client.get(f"/projects/{project.pk}/"))
    response = client.post(f"/projects/{project.pk}/items/{first}/skip", **HX)
    assert response.status_code == 200 and leased_item_id(response) not in (None, first)
    assert Skip.objects.filter(item_id=first, annotator=user).exists()
    assert Item.objects.get(pk=first).status == Item.Status.QUEUED
    from django.test import Client

    other = Client()
    other.force_login(member(project, "other"))
    assert leased_item_id(other.get(f"/projects/{project.pk}/")) == first
    assert client.post(f"/projects/{project.pk}/items/{first}/skip", **HX).status_code == 409


def test_undo_restores_the_item_and_rebuilds_the_learner_without_the_label(client, project):
    _annotator(client, project)
    ids = []
    item = leased_item_id(client.get(f"/projects/{project.pk}/"))
    for value in ("1", "2", "3"):
        ids.append(item)
        response = client.post(f"/projects/{project.pk}/items/{item}/label", {"value": value}, **HX)
        item = leased_item_id(response)
    update_project(project.pk)  # the worker applies the three labels
    assert LearnerState.objects.get(project=project).version == 3
    response = client.post(f"/projects/{project.pk}/undo", **HX)
    assert response.status_code == 200 and leased_item_id(response) == ids[-1]
    undone = Label.objects.get(item_id=ids[-1])
    assert undone.undone_at is not None and not undone.primary
    assert LearnerState.objects.get(project=project).needs_rebuild
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert not state.needs_rebuild and state.version == 4  # a new model version
    got = learners.from_bytes(bytes(state.blob))
    want = project.new_learner(got.n_features)  # the two remaining labels, in order
    for pk, value in zip(ids[:2], (1, 2), strict=True):
        want.learn(decode(Item.objects.get(pk=pk).vector, got.n_features), value)
    np.testing.assert_array_equal(got.get_state()["arrays"]["W"], want.get_state()["arrays"]["W"])
    # only one step back: the label before is not undoable now, and the item can be relabelled
    assert client.post(f"/projects/{project.pk}/undo", **HX).status_code == 409
    response = client.post(f"/projects/{project.pk}/items/{ids[-1]}/label", {"value": "7"}, **HX)
    assert response.status_code == 200
    assert Label.objects.get(item_id=ids[-1], primary=True).value == 7


def test_text_and_urls_are_escaped_and_urls_never_links(client):
    project = text_project(["<script>alert(1)</script>\nline two"], params={"delta": 100.0})
    update_project(project.pk)
    _annotator(client, project)
    body = client.get(f"/projects/{project.pk}/").content.decode()
    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    urls = text_project(name="urls", item_kind="url", featurizer_config=None, params={"delta": 100.0})
    from annotator.labelling.ingest import Record, import_records

    import_records(urls, [Record("u", "http://evil.example.com/a/b?x=<b>1</b>&y=2")])
    update_project(urls.pk)
    member(urls, "ann")
    panel = parse(client.get(f"/projects/{urls.pk}/").content).by_id("queue-item")
    assert not panel.find_all("a") and not panel.find_all(has="href")
    codes = [c.text for c in panel.find_all("code")]
    for part in ("http", "evil.example.com", "/a/b", "x=<b>1</b>&y=2"):  # text, so escaped
        assert part in codes


def test_the_queue_splits_a_url_as_the_featurizer_does(client):
    """A scheme-less URL shows its host as the host (one rule: learners.features.url.split_url)."""
    from annotator.labelling.ingest import Record, import_records

    urls = text_project(name="urls", item_kind="url", featurizer_config=None, params={"delta": 100.0})
    import_records(urls, [Record("u", "login.paypa1.example:8080/verify?id=7")])
    update_project(urls.pk)
    _annotator(client, urls)
    panel = parse(client.get(f"/projects/{urls.pk}/").content).by_id("queue-item")
    shown = {part.find("span", class_="url-label").text: part.find("code").text
             for part in panel.find_all("span", class_="url-part")}
    assert shown == {"scheme": "", "host": "login.paypa1.example", "port": "8080", "path": "/verify",
                     "query": "id=7", "as given": "login.paypa1.example:8080/verify?id=7"}


def test_caught_up_state_polls_and_gets_204_until_an_item_arrives(client):
    project = text_project([], params={"delta": 100.0})
    _annotator(client, project)
    panel = parse(client.get(f"/projects/{project.pk}/").content).by_id("queue-item")
    assert panel.find("h2").text == "Nothing uploaded yet" and panel.attrs["hx-trigger"] == "every 3s"
    assert client.get(f"/projects/{project.pk}/next", **HX).status_code == 204
    from annotator.labelling.ingest import Record, import_records

    import_records(project, [Record("a", "hello there")])
    update_project(project.pk)
    response = client.get(f"/projects/{project.pk}/next", **HX)
    assert response.status_code == 200 and leased_item_id(response) is not None


def test_queue_actions_need_membership(client, project):
    outsider = member(digits_project(0), "outsider")
    client.force_login(outsider)
    item = Item.objects.filter(project=project).first()
    for method, url in (("get", f"/projects/{project.pk}/"), ("get", f"/projects/{project.pk}/next"),
                        ("post", f"/projects/{project.pk}/undo"),
                        ("post", f"/projects/{project.pk}/items/{item.pk}/skip"),
                        ("post", f"/projects/{project.pk}/items/{item.pk}/label")):
        assert getattr(client, method)(url).status_code == 404, url  # as for no such project
    client.logout()
    assert client.get(f"/projects/{project.pk}/next").status_code == 302
    assert Membership.objects.filter(project=project).count() == 0
