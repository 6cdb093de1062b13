"""Small page fixes through the Django test client: one login error, no console link for
annotators on the dashboard, history shows "not set" rather than None."""

from __future__ import annotations

import pytest
from django.test import Client

from annotator.labelling.models import Project
from annotator.labelling.projects.demo import create_demo
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def test_a_refused_login_says_so_once():
    create_demo(3)
    response = Client().post("/accounts/login/", {"username": "annotator", "password": "nope"})
    page = parse(response.content)
    assert [e.text for e in page.find_all(class_="error")] == ["Wrong user name or password."]
    assert b"errorlist" not in response.content and b"Please enter a correct" not in response.content


def test_dashboard_links_to_the_console_for_admins_only():
    project, _ = create_demo(3)
    Project.objects.filter(pk=project.pk).update(dashboard_for_annotators=True)
    links = {}
    for role in ("admin", "annotator"):
        client = Client()
        client.force_login(project.memberships.get(role=role).user)
        page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
        links[role] = [a.attrs["href"] for a in page.find("main").find_all("a")]
    console = f"/projects/{project.pk}/console"
    assert console in links["admin"] and console not in links["annotator"]


def test_history_shows_not_set_for_an_empty_setting():
    project, _ = create_demo(3)
    client = Client()
    client.force_login(project.memberships.get(role="admin").user)
    client.post(f"/projects/{project.pk}/console", {"action": "settings", "stream_state": "running",
                                                    "budget_ratio": "0.1"})
    rows = [[td.text for td in tr.find_all("td")] for tr in parse(
        client.get(f"/projects/{project.pk}/console").content).by_id("history").find_all("tr")]
    assert ["budget_ratio", "not set", "0.1"] in [r[2:] for r in rows]
    assert not any("None" in r for r in rows)
