"""A project's API token rotated on the console (README, "API tokens"), through Django's test
client: the old token refused at once (API and Label Studio backend URL), the new one served,
the rotation recorded without either token; only the project's admins can rotate, and only with
the CSRF token."""

from __future__ import annotations

import pytest
from django.test import Client

from annotator.labelling.annotation.label_studio import backend_token
from annotator.labelling.models import Membership, Project, ProjectChange
from tests.support.app import client_for, member, text_project

pytestmark = pytest.mark.django_db


def _api(project_pk: int, token: str):
    return Client().get(f"/api/projects/{project_pk}/metrics", HTTP_AUTHORIZATION=f"Token {token}")


def _rotate(client: Client, project: Project):
    return client.post(f"/projects/{project.pk}/console", {"action": "rotate-token"})


def test_a_rotated_token_stops_working_at_once_and_the_new_one_works():
    project = text_project(["win a free prize now"])
    old, old_backend = project.api_token, backend_token(project)
    assert _api(project.pk, old).status_code == 200
    admin = member(project, "boss", Membership.Role.ADMIN)
    console = client_for(admin)
    rotated = _rotate(console, project)
    assert rotated.status_code == 302 and rotated["Location"].endswith(f"/projects/{project.pk}/console")
    project.refresh_from_db()
    new = project.api_token
    assert new != old and len(new) >= 43
    refused = _api(project.pk, old)
    assert refused.status_code == 403 and refused.json()["error"] == "wrong token, or no such project"
    assert _api(project.pk, new).status_code == 200
    # the Label Studio backend URL is derived from the token: the old one is refused too
    assert Client().get(f"/api/label-studio/{project.pk}/{old_backend}/health").status_code == 403
    assert Client().get(f"/api/label-studio/{project.pk}/{backend_token(project)}/health").status_code == 200
    # the console shows the new token and the history the rotation, without either token
    page = console.get(f"/projects/{project.pk}/console").content.decode()
    assert new in page and old not in page and "API token rotated" in page
    change = ProjectChange.objects.get(project=project, field="api_token")
    assert change.user == admin and old not in str(change.old) + str(change.new)
    assert new not in str(change.old) + str(change.new)


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.REVIEWER])
def test_only_the_projects_admins_can_rotate(role):
    project = text_project()
    token = project.api_token
    answer = _rotate(client_for(member(project, f"who-{role}", role)), project)
    assert answer.status_code in (403, 404)
    outsider = text_project()
    admin_elsewhere = member(outsider, "boss-elsewhere", Membership.Role.ADMIN)
    assert _rotate(client_for(admin_elsewhere), project).status_code == 404
    project.refresh_from_db()
    assert project.api_token == token and not ProjectChange.objects.filter(field="api_token").exists()


def test_the_rotation_needs_the_csrf_token():
    project = text_project()
    token = project.api_token
    client = Client(enforce_csrf_checks=True)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    assert _rotate(client, project).status_code == 403
    project.refresh_from_db()
    assert project.api_token == token
