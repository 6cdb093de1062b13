"""Page fixes of a first run as a new user (docs/architecture.md): the favicon, the new-project
form's default item type and per-type featurizer placeholders, the empty dashboard's upload link,
ratios as percentages on the dashboard. Through the Django test client."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Membership
from tests.support.app import digits_project, member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def test_every_page_names_its_icon_and_the_icon_is_served(client):
    project = text_project()
    client.force_login(member(project, "ann"))
    page = parse(client.get(f"/projects/{project.pk}/").content)
    icon = page.find("link", rel="icon")
    assert icon.attrs["href"].endswith("favicon.svg")
    assert icon.attrs["type"] == "image/svg+xml"


def test_the_new_project_form_starts_on_text_with_text_options(client):
    client.force_login(get_user_model().objects.create_user("root", password="pw", is_staff=True))
    page = parse(client.get("/projects/new").content)
    kind = page.find("select", name="item_kind")
    assert [o.attrs["value"] for o in kind.find_all("option") if "selected" in o.attrs] == ["text"]
    options = page.find("input", name="featurizer")
    placeholders = json.loads(options.attrs["data-placeholders"])
    assert options.attrs["placeholder"] == placeholders["text"]
    assert "cell" in placeholders["image"] and "cell" not in placeholders["text"]
    assert any("new_project.js" in s.attrs.get("src", "") for s in page.find_all("script"))


def test_an_empty_dashboard_says_so_and_links_the_upload(client):
    project = text_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    empty = page.by_id("dashboard-empty")
    assert f"/projects/{project.pk}/upload" in {a.attrs["href"] for a in empty.find_all("a")}


def test_dashboard_ratios_are_percentages(client):
    project = digits_project(40, params={"delta": 100.0})
    update_project(project.pk)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    assert page.by_id("m-query-ratio").text.endswith("%")
    assert not page.find_all(id="dashboard-empty")


def test_the_console_starts_with_a_summary_and_help_links_that_open(client):
    project = digits_project(40, params={"delta": 2.0})
    update_project(project.pk)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/console").content)
    summary = page.by_id("summary")
    assert page.by_id("s-items").text == "40"
    assert page.by_id("s-delta").text.split()[0] == "2.000"
    assert page.by_id("s-target").text == "off"
    assert page.by_id("s-achieved").text.split()[0].endswith("%")
    assert "a larger delta asks for more labels" in " ".join(page.by_id("delta-explained").text.split())
    links = [a.attrs["href"] for a in summary.find_all("a") if a.attrs["href"].startswith("/help/")]
    assert "/help/budget" in links and "/help/algorithms/paa" in links
    for link in links:
        shown = client.get(link)
        assert shown.status_code == 200 and b"<article class=\"doc\" id=\"doc\">" in shown.content
    assert client.get("/help/../README").status_code == 404
    assert client.get("/help/nothing").status_code == 404
