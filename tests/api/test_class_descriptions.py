"""``GET`` / ``PUT /api/projects/<id>/class-descriptions``: the console's change of a text
project's class descriptions (docs/algorithms/cold_start.md) through the API, the same
validation and rebuild; bad input is a 400 that changes nothing."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotator.labelling.engine.learner_state import stored_learner
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import LearnerState, Membership, ProjectChange
from tests.support.app import SPAM, digits_project, member, text_project

pytestmark = pytest.mark.django_db
DESCRIBED = {"ham": "a personal message to a friend: plans, meeting, coming home",
             "spam": "an advert: win a free prize, claim a cash reward"}


def _put(project, body, client: Client | None = None, **headers):
    auth = {} if client is not None else {"HTTP_AUTHORIZATION": f"Token {project.api_token}"}
    return (client or Client()).put(f"/api/projects/{project.pk}/class-descriptions",
                                    body if isinstance(body, str) else json.dumps(body),
                                    content_type="application/json", **auth, **headers)


def test_a_round_trip_sets_the_descriptions_and_rebuilds_the_learner():
    project = text_project(SPAM, look_ahead=100)
    update_project(project.pk)
    assert not stored_learner(LearnerState.objects.get(project=project)).w.any()  # zero weights
    url = f"/api/projects/{project.pk}/class-descriptions"
    got = Client().get(url, HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert got.status_code == 200 and got.json() == {"classes": ["ham", "spam"], "descriptions": {}}

    put = _put(project, {"descriptions": DESCRIBED})
    assert put.status_code == 200, put.content
    assert put.json() == {"classes": ["ham", "spam"], "descriptions": DESCRIBED, "changed": True}
    project.refresh_from_db()
    assert project.class_descriptions == DESCRIBED
    assert LearnerState.objects.get(project=project).needs_rebuild
    change = ProjectChange.objects.get(project=project, field="class_descriptions")
    assert change.new == DESCRIBED and change.user is None  # the token: no user
    update_project(project.pk)  # what the worker sent after the commit runs
    state = LearnerState.objects.get(project=project)
    assert not state.needs_rebuild and stored_learner(state).w.any()  # it starts from the descriptions
    again = Client().get(url, HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert again.json()["descriptions"] == DESCRIBED

    same = _put(project, {"descriptions": DESCRIBED})  # a repeat changes nothing
    assert same.json()["changed"] is False and ProjectChange.objects.filter(project=project).count() == 1
    assert not LearnerState.objects.get(project=project).needs_rebuild
    cleared = _put(project, {"descriptions": {}})
    assert cleared.status_code == 200 and cleared.json()["descriptions"] == {}


@pytest.mark.parametrize("body,needle", [
    ({"descriptions": {"spam": ""}}, "the description of 'spam' is empty"),
    ({"descriptions": {"spam": "   "}}, "the description of 'spam' is empty"),
    ({"descriptions": {"eggs": "breakfast"}}, "'eggs' is not one of the classes"),
    ({"descriptions": {"spam": "x" * 1001}}, "longer than 1000 characters"),
    ({"descriptions": {"spam": 5}},
     "class descriptions: the description of 'spam' must be text, got a number"),
    ({"descriptions": {"spam": ["an advert"]}}, "the description of 'spam' must be text, got a list"),
    ({"descriptions": {"spam": None}}, "the description of 'spam' must be text, got null"),
    ({"descriptions": {"spam": True}}, "the description of 'spam' must be text, got true or false"),
    ({"descriptions": {"spam": "an\u0000advert"}}, "the description of 'spam' contains a NUL character"),
    ({"descriptions": {"ham": "\u0000"}}, "the description of 'ham' contains a NUL character"),
    ({"descriptions": {"spam": "an advert \u0000"}}, "the description of 'spam' contains a NUL character"),
    ({"descriptions": {"spam": "an \ud800 advert"}}, "the description of 'spam' contains a lone surrogate"),
    ({"descriptions": ["spam", "an advert"]}, "must be an object mapping each class to a text"),
    ({"descriptions": None}, "must be an object mapping each class to a text"),
    ({"descriptions": {"spam": "an advert"}, "extra": 1}, 'the body must be {"descriptions"'),
    ({"spam": "an advert"}, 'the body must be {"descriptions"'),
    ([1, 2], 'the body must be {"descriptions"'),
    ("{not json", "the body"),
])
def test_bad_input_is_a_clear_400_that_changes_nothing(body, needle):
    project = text_project(SPAM, class_descriptions={"ham": "a friend"})
    response = _put(project, body)
    assert response.status_code == 400 and needle in response.json()["error"], response.content
    project.refresh_from_db()
    assert project.class_descriptions == {"ham": "a friend"}
    assert not ProjectChange.objects.filter(project=project).exists()
    assert not LearnerState.objects.get(project=project).needs_rebuild


def test_a_project_not_of_text_is_refused():
    project = digits_project(0)
    cleared = _put(project, {"descriptions": {}})
    assert cleared.status_code == 400
    assert cleared.json() == {"error": "class descriptions are for text projects only"}
    response = _put(project, {"descriptions": {"0": "a round digit"}})
    assert response.status_code == 400 and "for text projects only" in response.json()["error"]
    project.refresh_from_db()
    assert project.class_descriptions == {} and not ProjectChange.objects.filter(project=project).exists()


def test_sessions_read_and_only_the_token_writes():
    """Every write of the API needs the project's token (README, "Security"); the console changes
    the descriptions through its own form. An admin's session, even with the CSRF token: 403."""
    project = text_project(SPAM)
    annotator, admin = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    annotator.force_login(member(project, "ann"))
    admin.force_login(member(project, "boss", Membership.Role.ADMIN))
    url = f"/api/projects/{project.pk}/class-descriptions"
    assert annotator.get(url).status_code == 403 and admin.get(url).status_code == 200
    admin.get(f"/projects/{project.pk}/console")  # sets the csrftoken cookie
    token = admin.cookies["csrftoken"].value
    for client in (admin, annotator):
        for headers in ({}, {"HTTP_X_CSRFTOKEN": token}):
            refused = _put(project, {"descriptions": DESCRIBED}, client=client, **headers)
            assert refused.status_code == 403, refused.content
            assert "needs 'Authorization: Token <project token>'" in refused.json()["error"]
    project.refresh_from_db()
    assert project.class_descriptions == {} and not ProjectChange.objects.filter(project=project).exists()
    assert _put(project, {"descriptions": DESCRIBED}).status_code == 200  # the token


def test_the_openapi_document_describes_both_methods():
    doc = Client().get("/api/openapi.json").json()["paths"]["/api/projects/{pk}/class-descriptions"]
    assert set(doc) == {"get", "put"}
    body = doc["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["descriptions"] and body["additionalProperties"] is False
