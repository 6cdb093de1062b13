"""The OpenAPI description is generated from the code: every API route is in
it with its parameters, and the request schema it shows is the one the view validates with."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import get_resolver
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from annotator.labelling.api.schema import FAST_CHECKS, ITEM_SCHEMAS
from tests.support.app import text_project

pytestmark = pytest.mark.django_db


def _document(client: Client | None = None) -> dict:
    response = (client or Client()).get("/api/openapi.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    return response.json()


def test_every_api_route_is_described_with_its_parameters():
    doc = _document()
    assert doc["openapi"] == "3.1.0"
    routes = {str(p.pattern) for p in get_resolver().url_patterns[-1].url_patterns
              if str(p.pattern).startswith(("api/projects/", "api/label-studio/"))}
    assert {"/" + re.sub(r"<(?:int|str):(\w+)>", r"{\1}", r) for r in routes} == set(doc["paths"])
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            pk = next(p for p in op["parameters"] if p["name"] == "pk")
            assert pk == {"name": "pk", "in": "path", "required": True,
                          "schema": {"type": "integer", "minimum": 0}}, (path, method)
            assert {"200", "201", "204"} & set(op["responses"]) and "403" in op["responses"]
    assert set(doc["paths"]["/api/projects/{pk}/items"]) == {"get", "post"}


def test_the_described_body_is_the_one_the_view_validates(settings):
    settings.API_MAX_BATCH = 3
    schema = _document()["paths"]["/api/projects/{pk}/items"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    assert schema["properties"]["items"]["maxItems"] == 3  # read from the settings, not copied
    assert schema["properties"]["items"]["items"]["anyOf"] == list(ITEM_SCHEMAS.values())
    project = text_project(params={"delta": 100.0})
    auth = {"HTTP_AUTHORIZATION": f"Token {project.api_token}"}
    text_items = {"type": "object", "required": ["items"],
                  "properties": {"items": {**schema["properties"]["items"], "items": ITEM_SCHEMAS["text"]}}}
    validator = Draft202012Validator(text_items)
    bodies = [{"items": [{"text": "fine"}]}, {"items": [{"text": ""}]}, {"items": [{"text": 3}]},
              {"items": []}, {"items": [{"text": "a"}] * 4}, {"items": [{"text": "a", "gold": [1]}]},
              {"items": [{"vector": [[0, 1]]}]}, {"things": []}, [1]]
    for body in bodies:
        response = Client().post(f"/api/projects/{project.pk}/items", json.dumps(body),
                                 content_type="application/json", **auth)
        valid = validator.is_valid(body)
        assert response.status_code == (201 if valid else 400), (body, response.content)


_SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=3)
_JSON = st.recursive(_SCALARS,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                   max_size=2), max_leaves=6)
_KEYS = st.sampled_from(["text", "url", "gold", "vector", "image_base64", "filename", "other"])
_PAIRS = st.tuples(st.integers(-2, 5) | st.booleans() | st.floats(0, 3),
                   st.integers(-2, 5) | st.floats(-1, 1) | st.booleans() | st.text(max_size=1)).map(list)
_VALUES = _JSON | st.lists(_PAIRS, max_size=3) | st.text(min_size=250, max_size=260)
_ITEMS = st.dictionaries(_KEYS, _VALUES, max_size=4) | _JSON


@given(kind=st.sampled_from(sorted(ITEM_SCHEMAS)), entry=_ITEMS)
@hypothesis_settings(max_examples=1500, deadline=None)
def test_the_compiled_item_checks_never_pass_what_the_schema_refuses(kind, entry):
    """The API's fast path accepts a subset of each kind's schema, never more."""
    if FAST_CHECKS[kind](entry):
        assert Draft202012Validator(ITEM_SCHEMAS[kind]).is_valid(entry), (kind, entry)


def test_the_compiled_item_checks_pass_ordinary_items():
    """...and they do take the usual items (else the fast path would never run)."""
    ordinary = {"text": [{"text": "hi"}, {"text": "hi", "gold": "spam"}, {"text": "x", "gold": 3, "id": 1}],
                "url": [{"url": "http://a.b"}, {"text": "a.b", "gold": None}],
                "vectors": [{"vector": [[0, 1.5], [7, -2]], "gold": 1}, {"vector": []}],
                "image": [{"image_base64": "aGk=", "filename": "a.png", "gold": "3"}]}
    for kind, entries in ordinary.items():
        assert all(FAST_CHECKS[kind](e) for e in entries), kind
