"""Property-based fuzz of the JSON API against its own OpenAPI description.

schemathesis reads ``/api/openapi.json`` from the app (generated from the views'
declarations, :mod:`annotator.labelling.api.schema`) and sends generated requests, valid and
invalid ones, to every operation through the whole Django stack (middleware included). Most
requests carry the token of a real project of the right kind, so valid bodies reach the
import path; the rest go to missing projects or carry a wrong token. Checks: no answer is a
server error, every status is one the description declares, every answer has the declared
content type and matches its schema.
"""

from __future__ import annotations

import itertools

import pytest
import schemathesis
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotator.labelling.annotation.label_studio import backend_token
from annotator.labelling.models import Item, Label, Project
from tests.support.app import digits_project, member, text_project

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
#: generated requests per operation, half valid and half invalid by the description
EXAMPLES = 80
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
OPERATIONS = ["GET /api/projects/{pk}/items", "POST /api/projects/{pk}/items",
              "GET /api/projects/{pk}/metrics", "GET /api/projects/{pk}/opinions",
              "GET /api/projects/{pk}/agreement", "GET /api/projects/{pk}/quality",
              "GET /api/projects/{pk}/reviews", "GET /api/projects/{pk}/dataset",
              "GET /api/projects/{pk}/webhooks", "POST /api/projects/{pk}/webhooks",
              "DELETE /api/projects/{pk}/webhooks/{hook_pk}",
              "POST /api/projects/{pk}/webhooks/{hook_pk}/secret",
              "GET /api/projects/{pk}/labels",
              "GET /api/projects/{pk}/class-descriptions", "PUT /api/projects/{pk}/class-descriptions",
              "GET /api/projects/{pk}/label-studio/tasks", "GET /api/projects/{pk}/label-studio/setup",
              "GET /api/label-studio/{pk}/{token}/health", "POST /api/label-studio/{pk}/{token}/setup",
              "POST /api/label-studio/{pk}/{token}/predict", "POST /api/label-studio/{pk}/{token}/webhook"]


@pytest.fixture
def api_schema(transactional_db):
    """The app's own description, read through its WSGI application (no server)."""
    from django.core.wsgi import get_wsgi_application

    return schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application())


@pytest.fixture
def projects(transactional_db) -> list:
    """One project per item kind, with a few items, and their tokens."""
    made = [text_project(["hello there", "win cash now"], params={"delta": 100.0}),
            text_project(name="fuzz urls", item_kind="url"),
            text_project(name="fuzz vectors", item_kind="vectors", classes=[0, 1],
                         featurizer_config={"kind": "vectors", "n_features": 64}),
            digits_project(3)]
    items = list(Item.objects.filter(project=made[0]))  # opinions (one undone) for the opinion answers
    users = [member(made[0], "ann"), member(made[0], "bob")]
    for i, (item, user) in enumerate(itertools.product(items, users)):
        Label.objects.create(item=item, project=made[0], annotator=user, value=["ham", "spam"][i % 3 == 0],
                             primary=i % 2 == 0, undone_at=timezone.now() if i == 3 else None)
    return [(p.item_kind, p.pk, p.api_token) for p in made]


#: the item key that tells a body's item kind
KIND_KEY = {"text": "text", "url": "url", "vector": "vectors", "image_base64": "image"}


def _send(case, projects: list) -> None:
    """Send ``case`` mostly to a real project (of the kind its items are, for bodies) with its
    token, else to the generated id with a wrong token; check the answer."""
    pk = case.path_parameters.get("pk") if case.path_parameters else None
    token = "not-the-token"
    if isinstance(pk, int) and pk % 5 != 4:  # 4 in 5: a real project and its token
        kind, case.path_parameters["pk"], token = projects[pk % len(projects)]
        entries = case.body.get("items") if isinstance(case.body, dict) else None
        if isinstance(entries, list) and entries and isinstance(entries[0], dict):
            kind = next((KIND_KEY[k] for k in entries[0] if k in KIND_KEY), kind)
            _, case.path_parameters["pk"], token = next(p for p in projects if p[0] == kind)
            if pk % 2:  # a random gold is rarely one of the classes: half the bodies go without
                for entry in entries:
                    if isinstance(entry, dict):
                        entry.pop("gold", None)
    if "token" in (case.path_parameters or {}) and token != "not-the-token":  # Label Studio's backend
        case.path_parameters["token"] = backend_token(Project.objects.get(pk=case.path_parameters["pk"]))
    ids = (case.query or {}).get("ids")
    if isinstance(ids, str) and isinstance(pk, int) and pk % 7 == 0:  # sometimes items that exist
        case.query["ids"] = ",".join(map(str, Item.objects.values_list("pk", flat=True)[:5]))
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)


@pytest.mark.parametrize("label", OPERATIONS)
def test_the_api_never_answers_a_server_error(api_schema, projects, label):
    operations = {op.label: op for op in (r.ok() for r in api_schema.get_all_operations())}
    assert sorted(operations) == sorted(OPERATIONS)  # a new operation needs its line here
    operation = operations[label]
    strategy = st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                         operation.as_strategy(GenerationMode.NEGATIVE))

    @given(case=strategy)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def fuzz(case):
        _send(case, projects)

    fuzz()
