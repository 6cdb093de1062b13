"""Ids and other whole numbers a request gives (query strings, form fields, JSON bodies, URL
parts) that are not whole numbers within their column's range: a clear 400 (or the 404 of a
missing row), never a 500, and nothing stored. SQLite cannot bind an integer beyond 64 bits
(``OverflowError``) and PostgreSQL refuses one beyond its column; one rule refuses them first
(:func:`learners.uploads.input_rules.whole_number`). Run with ``DATABASE_URL=postgres://...`` too."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management.base import CommandError
from django.test import Client

from annotator.labelling import urls
from annotator.labelling.annotation.label_studio import backend_token
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.management.arguments import project_arg
from annotator.labelling.models import Item, Label, LabelStudioTask, Membership, Project, Review
from learners.uploads.input_rules import BIGINT_MAX, whole_number
from tests.support.app import SPAM, digits_project, member, text_project

pytestmark = pytest.mark.django_db
HUGE = "99999999999999999999999"
#: refused wherever an id is asked for: beyond 64 bits, one past the column, below 1, not a
#: whole number in ASCII digits, empty
NOT_IDS = [HUGE, str(BIGINT_MAX + 1), "-1", "0", "1e3", "", "1.0", "1_000", "\u0661"]


@pytest.mark.parametrize("value", NOT_IDS)
def test_the_rule_refuses_what_is_not_an_id_with_its_name(value):
    with pytest.raises(ValueError, match=r"^item must be a whole number from 1 to 9223372036854775807, not "):
        whole_number(value, "item")


def test_the_rule_takes_ids_and_integers_of_json():
    assert whole_number(" 42 ", "x") == 42 and whole_number(BIGINT_MAX, "x") == BIGINT_MAX
    assert whole_number("0", "after", 0, BIGINT_MAX) == 0
    for value in (True, 1.0, None, [1], 2**63, "9" * 5000):
        with pytest.raises(ValueError, match="must be a whole number"):
            whole_number(value, "x")


@pytest.fixture
def world():
    project = text_project(SPAM)
    boss = Client()
    boss.force_login(member(project, "boss", Membership.Role.ADMIN))
    annotator = Client()
    annotator.force_login(member(project, "ann"))
    return project, boss, annotator


def _token(project: Project) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Token {project.api_token}"}


@pytest.mark.parametrize("value", [*NOT_IDS, "1,,2", "1, x", " "])
def test_api_item_ids_out_of_range_are_a_400(world, value):
    project, boss, annotator = world
    url = f"/api/projects/{project.pk}/items?ids={value}"
    for answer in (Client().get(url, **_token(project)), boss.get(url), annotator.get(url)):
        assert answer.status_code == 400, answer.content
        assert "ids" in answer.json()["error"], answer.json()


def test_api_item_ids_in_range_are_found_or_named_missing(world):
    project, boss, _ = world
    pk = Item.objects.filter(project=project).values_list("pk", flat=True).first()
    found = boss.get(f"/api/projects/{project.pk}/items?ids={pk}, {pk}")
    assert found.status_code == 200 and [r["id"] for r in found.json()["items"]] == [pk, pk]
    missing = boss.get(f"/api/projects/{project.pk}/items?ids={pk},{BIGINT_MAX}")
    assert missing.status_code == 404 and str(BIGINT_MAX) in missing.json()["error"]


@pytest.mark.parametrize("route", ["opinions", "reviews"])
@pytest.mark.parametrize("value", [HUGE, str(BIGINT_MAX + 1), "-1", "1e3", "", "0x10"])
def test_api_pages_refuse_an_after_out_of_range(world, route, value):
    project, boss, _ = world
    answer = boss.get(f"/api/projects/{project.pk}/{route}?after={value}")
    assert answer.status_code == 400, answer.content
    assert "after must be a whole number from 0 to 9223372036854775807" in answer.json()["error"]


@pytest.mark.parametrize("route", ["opinions", "reviews"])
def test_api_pages_take_every_after_in_range(world, route):
    project, boss, _ = world
    for value in ("0", str(BIGINT_MAX)):
        answer = boss.get(f"/api/projects/{project.pk}/{route}?after={value}")
        assert answer.status_code == 200 and answer.json()["next"] is None


@pytest.mark.parametrize("value", NOT_IDS)
def test_sending_a_suspect_refuses_an_item_out_of_range(world, value):
    project, boss, _ = world
    answer = boss.post(f"/projects/{project.pk}/suspects/send", {"item": value})
    assert answer.status_code == 400 and "item must be a whole number" in answer.content.decode()
    assert not Review.objects.exists()


@pytest.mark.parametrize("value", [HUGE, str(BIGINT_MAX + 1), "-1", "1e3", " x"])
def test_the_item_browser_refuses_an_after_out_of_range(world, value):
    project, boss, _ = world
    answer = boss.get(f"/projects/{project.pk}/items/", {"after": value})
    assert answer.status_code == 400
    assert "after must be a whole number from 0 to 9223372036854775807" in answer.content.decode()


def test_the_item_browser_takes_an_after_in_range(world):
    project, boss, _ = world
    assert boss.get(f"/projects/{project.pk}/items/", {"after": ""}).status_code == 200
    assert boss.get(f"/projects/{project.pk}/items/", {"after": "0"}).status_code == 200
    past = boss.get(f"/projects/{project.pk}/items/", {"after": str(BIGINT_MAX)})
    assert past.status_code == 404 and "no item after seq" in past.content.decode()


@pytest.mark.parametrize("labels", [f"[[{HUGE}, 1]]", f"[[{BIGINT_MAX + 1}, 1]]", "[[-1, 1]]", "[[0, 1]]",
                                    "[[1e3, 1]]", "[" * 100_000 + "]" * 100_000])
def test_the_desk_refuses_an_item_id_out_of_range_and_stores_nothing(labels):
    project = digits_project(10, params={"delta": 100.0})
    update_project(project.pk)
    client = Client()
    client.force_login(member(project, "ann"))
    answer = client.post(f"/projects/{project.pk}/desk", {"labels": labels})
    assert answer.status_code == 400 and "labels" in answer.json()["error"], answer.content
    assert not Label.objects.exists()


def _ls_post(project: Project, route: str, body: object):
    return Client().post(f"/api/label-studio/{project.pk}/{backend_token(project)}/{route}",
                         body if isinstance(body, str) else json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("tid", [int(HUGE), BIGINT_MAX + 1, -1, 0])
def test_label_studio_task_ids_out_of_range_are_a_400_and_store_nothing(world, tid):
    project = world[0]
    before = Item.objects.filter(project=project).count()
    task = {"id": tid, "data": {"text": "a new message"}}
    for route, body in (("predict", {"tasks": [task]}),
                        ("webhook", {"action": "ANNOTATION_CREATED", "task": task,
                                     "annotation": {"id": 1, "result": []}})):
        answer = _ls_post(project, route, body)
        assert answer.status_code == 400
        assert "the task's 'id' must be a whole number" in answer.json()["error"]
    assert Item.objects.filter(project=project).count() == before and not LabelStudioTask.objects.exists()


@pytest.mark.parametrize("aid", [int(HUGE), BIGINT_MAX + 1, -1, 0])
def test_label_studio_annotation_ids_out_of_range_are_a_400_and_store_nothing(world, aid):
    project = world[0]
    before = Item.objects.filter(project=project).count()
    result = [{"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": ["spam"]}}]
    created = _ls_post(project, "webhook", {"action": "ANNOTATION_CREATED",
                                            "task": {"id": 7, "data": {"text": "win a prize"}},
                                            "annotation": {"id": aid, "result": result}})
    assert created.status_code == 400
    assert "the annotation's 'id' must be a whole number" in created.json()["error"]
    deleted = _ls_post(project, "webhook", {"action": "ANNOTATIONS_DELETED", "annotations": [{"id": aid}]})
    assert deleted.status_code == 400
    assert "annotation's 'id' must be a whole number" in deleted.json()["error"]
    assert Item.objects.filter(project=project).count() == before and not Label.objects.exists()


def test_label_studio_json_nested_too_deeply_is_a_400(world):
    project = world[0]
    answer = _ls_post(project, "webhook", "[" * 100_000 + "]" * 100_000)
    assert answer.status_code == 400 and "error" in answer.json()


def test_every_id_in_a_url_out_of_range_is_a_4xx_never_a_500(world):
    """Each ``<int:...>`` part of every route, 30 digits long, for each method, with the admin's
    session and with the token: Django's converter takes any digits, and the lookups behind it
    find no row (404) or refuse the request; none answers 5xx."""
    project, boss, _ = world
    boss.raise_request_exception = False
    seen = 0
    for pattern in urls.urlpatterns:
        route = str(pattern.pattern)
        slots = re.findall(r"<int:(\w+)>", route)
        for slot in slots:
            path = route
            for name in slots:
                path = path.replace(f"<int:{name}>", "9" * 30 if name == slot else
                                    str(project.pk) if name == "pk" else "1")
            path = "/" + re.sub(r"<\w+:\w+>", "x", path).replace("dataset.x", "dataset.csv")
            for method in ("get", "post", "put", "delete"):
                for headers in ({}, _token(project)):
                    answer = getattr(boss, method)(path, **headers)
                    assert answer.status_code < 500, (method, path, headers, answer.status_code)
                    seen += 1
    assert seen > 100


@pytest.mark.parametrize("value", [HUGE, "0", "-1", "\u0661"])
def test_a_command_names_no_project_with_an_id_out_of_range(value):
    text_project(name="named")
    with pytest.raises(CommandError, match="no project with id or name"):
        project_arg(value)
    assert project_arg("named").name == "named"
