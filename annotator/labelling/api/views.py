"""JSON API for streaming items into a live project and reading the decisions.

Authentication: header ``Authorization: Token <project api_token>`` (the token belongs to one
project), or a logged-in member's session (handy for the dashboard) for reads only: every write
(``POST``, ``PUT``, ``DELETE``) needs the token.

* ``POST /api/projects/<id>/items`` body ``{"items": [{"text": ...} | {"url": ...} |
  {"vector": [[i, v], ...]} | {"image_base64": ..., "filename": ...}, ...]}`` (each may
  carry ``"gold"``; text and URL entries follow the JSONL upload rules),
  at most ``API_MAX_BATCH`` items. The batch is validated, featurized and inserted in the
  request (bounded work) all-or-nothing; a worker decides the items afterwards. Returns
  ``201 {"items": [{"id", "seq", "status"}, ...]}`` in input order, or ``400 {"error"}``
  naming the item (``item 3: ...``, 0-based).
* ``GET /api/projects/<id>/items?ids=1,2,3`` -> ``{"items": [{"id", "seq", "status",
  "prediction", "score", "query_prob", "queried", "model_version"}, ...]}``: 1 to
  ``MAX_IDS`` ids, each a whole number from 1 to 2**63 - 1 (else 400 naming the entry; ids not
  in the project: 404 naming them); decision fields are null until the item is decided. The
  decision fields (:data:`HIDDEN_FROM_MEMBERS`) are for the project's token and its admins: an
  annotator's or reviewer's session gets them null for every item, so that no field tells a
  honeypot from a queued item (docs/teams.md).
* ``GET /api/projects/<id>/metrics`` -> :func:`.metrics.project_metrics`; 403 for an
  annotator's session when the project keeps its dashboard for admins. An annotator's or
  reviewer's session gets the figures their dashboard shows (:func:`.dashboard.annotator_figures`:
  a snapshot while the project serves honeypots or audits), the token and admins live ones.
* ``GET /api/projects/<id>/opinions?after=<label id>`` -> ``{"opinions": [...], "next"}``: every
  label of the project, undone ones too, in label order (:func:`.export.opinion_rows`), at most
  ``OPINIONS_PAGE`` per answer; ``next`` is the ``after`` of the next page (null on the last).
* ``GET /api/projects/<id>/dataset?format=csv|jsonl|parquet&provenance=...&class=...
  &min_confidence=...&max_confidence=...&min_probability=...&max_probability=...&since=...&until=...``
  -> every item of the project with its final label, provenance and calibrated probabilities
  (:mod:`.dataset_export`, docs/dataset.md), streamed; token and admins' sessions only; a bad
  filter or format: 400.
* ``GET /api/projects/<id>/labels?format=csv|jsonl|parquet|prodigy&undone=exclude|include`` ->
  the standing labels of the project (``undone=include``: every label, undone ones too) with
  their item's content, ``kind`` and ``undone_at`` (:func:`.export.label_rows`; ``prodigy``: the
  standing labels as Prodigy tasks, :mod:`.label_formats`), streamed; token and admins' sessions
  only; a bad format or ``undone``, Prodigy tasks of a vectors project or with ``undone=include``: 400.
* ``GET /api/projects/<id>/agreement`` -> :func:`.agreement.project_agreement` (Cohen's kappa
  per pair of annotators and Krippendorff's alpha, each with its number of items).
  Both are for the project's token and its admins' sessions (403 for an annotator's).
* ``GET /api/projects/<id>/quality`` -> ``{"annotators": ``:func:`.quality.annotator_quality`
  ``, "audit": ``:func:`.audit_sampling.audit_estimate```}`` (token and admins' sessions only: it tells
  which answers were checked against gold).
* ``GET /api/projects/<id>/reviews?after=<review id>`` -> ``{"reviews": [...], "next"}``: the
  review queue's items and their final decisions (:func:`.reviews.review_rows`), a page at a time;
  for the token and the sessions of its reviewers and admins (403 for an annotator's).
* ``GET /api/projects/<id>/webhooks`` -> ``{"webhooks": [...]}``: each endpoint (no secret) with
  its newest deliveries (token and admins' sessions); ``POST`` (token) ``{"url", "events"}`` ->
  ``201`` with the new endpoint and its ``secret``, shown this once; a URL that is not http(s)
  or whose host is not a public address: 400 (docs/webhooks.md).
* ``GET /api/projects/<id>/class-descriptions`` -> ``{"classes", "descriptions"}``: a text
  project's per-class descriptions, the learner's cold start (docs/algorithms/cold_start.md;
  another kind has none); ``PUT`` (token only, as every write of the API: the console page
  changes them through its own form) ``{"descriptions": {class: text, ...}}`` replaces them
  through the console's service (:func:`.settings_changes.change_class_descriptions`: validated,
  recorded, the learner rebuilt from them) and answers as GET with ``changed``; an empty text,
  one that cannot be stored (a NUL character, a lone surrogate), an unknown class, a project not
  of text or a body not of that shape: 400, nothing changed.
* ``DELETE /api/projects/<id>/webhooks/<hook>`` (token) -> 204; ``POST
  /api/projects/<id>/webhooks/<hook>/secret`` (token) -> ``{"id", "secret"}``, a new secret.

The OpenAPI 3.1 description is ``GET /api/openapi.json``, generated from the declarations in
:mod:`.schema` (whose schemas also validate the ``POST`` bodies).

Every error is JSON ``{"error": ...}`` (:mod:`.errors`). A wrong token gets the same 403
whether the project exists or not (project ids cannot be probed).
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from annotator.labelling.ingest import IngestError, Record, import_ids
from annotator.labelling.models import Item, Project, WebhookEndpoint, new_token
from annotator.labelling.projects.access import (
    is_project_admin,
    may_review,
    project_for,
    sees_dashboard,
)
from annotator.labelling.projects.settings_changes import change_class_descriptions
from annotator.labelling.reporting import dataset_export, label_formats
from annotator.labelling.reporting.dashboard import annotator_figures
from annotator.labelling.reporting.export import UNDONE_CHOICES, opinion_rows
from annotator.labelling.reporting.metrics import project_metrics
from annotator.labelling.teams import member_view
from annotator.labelling.teams.agreement import project_agreement
from annotator.labelling.teams.audit_sampling import audit_estimate
from annotator.labelling.teams.quality import annotator_quality
from annotator.labelling.teams.reviews import review_rows
from annotator.labelling.webhooks import endpoints as webhook_endpoints
from annotator.labelling.worker import send
from learners.uploads import gold_of
from learners.uploads.input_rules import BIGINT_MAX, parse_json, whole_number
from learners.uploads.records import checked_filename
from learners.uploads.tabular import row_record

from .errors import TooManyWrongTokensError
from .errors import error_response as _error
from .schema import (
    CLASS_DESCRIPTIONS,
    CLASS_DESCRIPTIONS_BODY,
    CONTENT_KEY,
    DATASET_ROW,
    ITEM_STATE,
    LABEL_ROW,
    OPINION,
    REVIEW,
    WEBHOOK,
    WEBHOOK_BODY,
    items_body,
    openapi_document,
    operation,
    validate_items_body,
)

MAX_IDS = 1000
#: the fields of an item the API answers
ITEM_FIELDS = ("id", "seq", "status", "prediction", "score", "query_prob", "queried", "model_version")
#: the decision fields an annotator's or reviewer's session never sees (null for every item): those
#: :mod:`.member_view` hides from members everywhere, and here the status and the prediction too
#: (stricter than the item browser: a status tells a labelled item from a honeypot answered, and
#: this API is open to every member, the browser only where the project opens it; docs/teams.md)
HIDDEN_FROM_MEMBERS = ("status", "prediction", *(k for k in member_view.HIDDEN if k in ITEM_FIELDS))
OPINIONS_PAGE = 1000
WRONG_TOKEN = "wrong token, or no such project"


def _authorized_project(request: HttpRequest, pk: int) -> tuple[Project, Any]:
    """``(project, user)``: ``user`` is None for a caller with the project's token (who sees
    everything), else the logged-in member. A wrong token: 403, the same for a missing project;
    a session: as :func:`.access.project_for` (404 for a non-member, as for a missing project).

    The token is checked FIRST: a right token is never refused by the wrong-token throttle, so
    wrong tokens sent from an address (behind a proxy: everyone's) lock nobody out. Only wrong
    tokens are counted, and refused with 429 once ``AXES_FAILURE_LIMIT`` of them came from the
    address within ``AXES_COOLOFF_TIME`` (docs/operations.md). A token is 256 random bits
    (:func:`.models.new_token`): guessing one is hopeless with or without the throttle, which
    keeps a flood of wrong tokens cheap to answer."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Token "):
        project = Project.objects.filter(pk=pk).first()
        expected = project.api_token if project is not None else new_token()  # same work either way
        given = header[len("Token "):].strip().encode("utf-8", "replace")  # any header bytes
        if hmac.compare_digest(given, expected.encode()) and project is not None:
            return project, None
        throttle = f"api-wrong-token:{request.META.get('REMOTE_ADDR', '')}"
        if cache.get(throttle, 0) >= settings.AXES_FAILURE_LIMIT:
            raise TooManyWrongTokensError()
        cache.add(throttle, 0, timeout=settings.AXES_COOLOFF_TIME.total_seconds())
        cache.incr(throttle)
        raise PermissionDenied(WRONG_TOKEN)
    if request.user.is_authenticated:
        return project_for(request.user, pk), request.user
    raise PermissionDenied("send 'Authorization: Token <project token>'")


def _record(project: Project, entry: dict[str, Any], where: str) -> Record:
    """The record of one item that passed :func:`.schema.validate_items_body`."""
    if project.item_kind in (Project.Kind.TEXT, Project.Kind.URL):
        return row_record(project, entry, where)
    key = CONTENT_KEY[project.item_kind]
    raw = entry[key]
    if key == "image_base64":
        try:
            raw = base64.b64decode(raw, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise IngestError(f"{where}: image_base64 is not valid base64") from None
    filename = checked_filename(entry.get("filename", ""), where) if key == "image_base64" else ""
    return Record(where, raw, gold_of(project, entry.get("gold"), where), filename=filename)


def _post_items(request: HttpRequest, project: Project) -> JsonResponse:
    try:
        body = parse_json(request.body, "the body")
    except ValueError as exc:
        return _error(str(exc))
    if isinstance(body, dict) and isinstance(body.get("items"), list):  # keys in any case, as in CSV
        body["items"] = [{k.lower(): v for k, v in e.items()} if isinstance(e, dict) else e
                         for e in body["items"]]
    try:
        validate_items_body(body, project.item_kind)
    except ValueError as exc:
        return _error(str(exc))
    entries = body["items"]
    try:
        records = [_record(project, e, f"item {i}") for i, e in enumerate(entries)]
        with transaction.atomic():
            items = import_ids(project, records)
            send.items_changed(project.pk)
    except IngestError as exc:
        return _error(str(exc))
    status = Item.Status.PENDING.value
    return JsonResponse({"items": [{"id": pk, "seq": seq, "status": status} for pk, seq in items]},
                        status=201)


def _get_items(request: HttpRequest, project: Project, user: Any) -> JsonResponse:
    raw = request.GET.get("ids", "")
    if not raw.strip():
        return _error(f"ids must be a comma-separated list of 1 to {MAX_IDS} item ids")
    parts = raw.split(",")
    if len(parts) > MAX_IDS:
        return _error(f"at most {MAX_IDS} ids per request")
    try:
        ids = [whole_number(x, f"ids: entry {n}") for n, x in enumerate(parts, start=1)]
    except ValueError as exc:
        return _error(f"{exc} (ids must be a comma-separated list of item ids)")
    found = Item.objects.filter(project=project, pk__in=ids).values(*ITEM_FIELDS)
    rows: dict[int, dict[str, Any]] = {r["id"]: dict(r) for r in found}
    missing = [i for i in ids if i not in rows]
    if missing:
        return _error(f"no such item(s) in this project: {missing[:10]}", status=404)
    if user is not None and not is_project_admin(user, project):
        for row in rows.values():  # the same for every item: nothing tells a honeypot apart
            row.update(dict.fromkeys(HIDDEN_FROM_MEMBERS))
    return JsonResponse({"items": [rows[i] for i in ids]})


IDS = {"name": "ids", "in": "query", "required": True, "schema": {"type": "string"},
       "description": f"comma-separated item ids (1 to {MAX_IDS}), each a whole number from 1 to 2**63 - 1"}
ITEMS_OUT = {"type": "object", "required": ["items"],
             "properties": {"items": {"type": "array", "items": ITEM_STATE}}}
CREATED = {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {
    "type": "object", "required": ["id", "seq", "status"],
    "properties": {"id": {"type": "integer"}, "seq": {"type": "integer"}, "status": {"type": "string"}}}}}}


@operation(
    get={"summary": "The decisions about items (prediction, score, query probability, ...)",
         "parameters": [IDS], "answers": {200: ("the items, in the order asked", ITEMS_OUT)}},
    post={"summary": "Add items to the project's stream (all or nothing); a worker decides them",
          "body": items_body,  # called when the document is made: API_MAX_BATCH may change
          "answers": {201: ("the new items, in input order", CREATED)}},
)
@csrf_exempt  # token-authenticated API; session callers are read-only (GET)
@require_http_methods(["GET", "POST"])
def items(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method == "POST" and not request.headers.get("Authorization", "").startswith("Token "):
        raise PermissionDenied("posting items needs 'Authorization: Token <project token>'")
    project, user = _authorized_project(request, pk)
    return _post_items(request, project) if request.method == "POST" else _get_items(request, project, user)


@operation(get={"summary": "The project's metrics (as on the dashboard)",
               "answers": {200: ("metrics", {"type": "object"})}})
@require_GET
def metrics(request: HttpRequest, pk: int) -> JsonResponse:
    project, user = _authorized_project(request, pk)
    if user is None or is_project_admin(user, project):
        return JsonResponse(project_metrics(project))
    if not sees_dashboard(user, project):
        raise PermissionDenied("this project's metrics are for its admins (its dashboard is hidden "
                               "from annotators)")
    return JsonResponse(annotator_figures(project)["metrics"])  # what the dashboard shows them


def _page(request: HttpRequest, key: str, id_field: str,
          rows_after: Callable[[int, int], list[dict[str, Any]]]) -> JsonResponse:
    """One page of ``key`` rows whose ``id_field`` is above the request's ``after`` (0: from the
    start): ``{key: rows, "next": the last id, or None on the last page}``; 400 for an ``after``
    that is not a whole number from 0 to 2**63 - 1
    (:func:`~learners.uploads.input_rules.whole_number`). ``rows_after(after, limit)`` reads at
    most ``limit`` rows."""
    try:
        after = whole_number(request.GET.get("after", "0"), "after", 0, BIGINT_MAX)
    except ValueError as exc:
        return _error(f"{exc} (a {id_field.removesuffix('_id')} id; 0: from the first)")
    rows = rows_after(after, OPINIONS_PAGE + 1)
    more = len(rows) > OPINIONS_PAGE
    rows = rows[:OPINIONS_PAGE]
    return JsonResponse({key: rows, "next": rows[-1][id_field] if more else None})


def _admin_project(request: HttpRequest, pk: int) -> Project:
    """The project for its token or one of its admins' sessions; 403 for an annotator's."""
    project, user = _authorized_project(request, pk)
    if user is not None and not is_project_admin(user, project):
        raise PermissionDenied("this is for the project's admins")
    return project


#: the public name other API modules use (Label Studio's routes)
admin_project = _admin_project


AFTER = {"name": "after", "in": "query", "required": False,
         "schema": {"type": "integer", "minimum": 0, "maximum": BIGINT_MAX},
         "description": "label id to start after (0, the default: from the first label)"}
OPINIONS_OUT = {"type": "object", "required": ["opinions", "next"], "properties": {
    "opinions": {"type": "array", "items": OPINION},
    "next": {"type": ["integer", "null"], "description": "the 'after' of the next page; null: last page"}}}
FIGURE = {"type": ["number", "null"], "description": "null when undefined (no item, or a single class)"}
AGREEMENT_OUT = {"type": "object", "required": ["alpha", "pairs"], "properties": {
    "alpha": {"type": "object", "required": ["value", "n_items"],
              "properties": {"value": FIGURE, "n_items": {"type": "integer"}}},
    "pairs": {"type": "array", "items": {"type": "object", "required": ["annotators", "kappa", "n_items"],
              "properties": {"annotators": {"type": "array", "items": {"type": "string"}},
                             "kappa": FIGURE, "n_items": {"type": "integer"}}}}}}


@operation(get={"summary": "Every opinion (label) given in the project, undone ones too, a page at a time",
                "parameters": [AFTER], "answers": {200: ("a page of opinions in label order", OPINIONS_OUT)}})
@require_GET
def opinions(request: HttpRequest, pk: int) -> JsonResponse:
    project = _admin_project(request, pk)
    return _page(request, "opinions", "label_id",
                 lambda after, limit: list(opinion_rows(project, after=after, limit=limit)))


@operation(get={"summary": "Agreement between annotators: Cohen's kappa per pair, Krippendorff's alpha",
                "answers": {200: ("the figures, each with its number of items", AGREEMENT_OUT)}})
@require_GET
def agreement(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(project_agreement(_admin_project(request, pk)))


@operation(get={"summary": "Each annotator's accuracy against gold and consensus; the audit of the model's "
                       "own labels", "answers": {200: ("the figures, each with its number of items",
                                                      {"type": "object"})}})
@require_GET
def quality(request: HttpRequest, pk: int) -> JsonResponse:
    project = _admin_project(request, pk)
    return JsonResponse({"annotators": annotator_quality(project), "audit": audit_estimate(project)})


REVIEWS_OUT = {"type": "object", "required": ["reviews", "next"], "properties": {
    "reviews": {"type": "array", "items": REVIEW},
    "next": {"type": ["integer", "null"], "description": "the 'after' of the next page; null: last page"}}}


@operation(get={"summary": "The review queue's items (disagreements, audits) and their final decisions",
                "parameters": [AFTER | {"description": "review id to start after (0: from the first)"}],
                "answers": {200: ("a page of reviews in creation order", REVIEWS_OUT)}})
@require_GET
def reviews(request: HttpRequest, pk: int) -> JsonResponse:
    project, user = _authorized_project(request, pk)
    if user is not None and not may_review(user, project):
        raise PermissionDenied("this is for the project's reviewers and admins")
    return _page(request, "reviews", "review_id",
                 lambda after, limit: list(review_rows(project, after=after, limit=limit)))


@require_GET
def openapi(request: HttpRequest) -> JsonResponse:
    """This API's OpenAPI 3.1 description (public: it holds no data)."""
    return JsonResponse(openapi_document())


FORMAT = {"name": "format", "in": "query", "required": False,
          "schema": {"type": "string", "enum": list(dataset_export.FORMATS), "default": "jsonl"},
          "description": "csv (formula-safe cells), jsonl (values exact) or parquet (classes as JSON text)"}
DATASET_FILTERS = [
    {"name": "provenance", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "comma-separated, of " + ", ".join(dataset_export.PROVENANCES)},
    {"name": "class", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "comma-separated final labels (the project's classes)"},
    {"name": "min_confidence", "in": "query", "required": False, "schema": {"type": "number", "minimum": 0},
     "description": "least |score| (items not decided have none and are left out)"},
    {"name": "max_confidence", "in": "query", "required": False, "schema": {"type": "number", "minimum": 0},
     "description": "largest |score|"},
    {"name": "min_probability", "in": "query", "required": False,
     "schema": {"type": "number", "minimum": 0, "maximum": 1},
     "description": "least calibrated probability that the prediction is right (rows without one are "
                    "left out)"},
    {"name": "max_probability", "in": "query", "required": False,
     "schema": {"type": "number", "minimum": 0, "maximum": 1},
     "description": "largest calibrated probability that the prediction is right"},
    {"name": "since", "in": "query", "required": False, "schema": {"type": "string", "format": "date-time"},
     "description": "final label set at or after this time (with its zone)"},
    {"name": "until", "in": "query", "required": False, "schema": {"type": "string", "format": "date-time"},
     "description": "final label set at or before this time (with its zone)"}]


@operation(get={"summary": "The labelled dataset: every item with its final label and where it came from "
                           "(human, model, audited, honeypot, disputed, waiting, pending), streamed",
                "parameters": [FORMAT, *DATASET_FILTERS],
                "answers": {200: ("one row per item in arrival order (CSV, JSON Lines or Parquet)", None, {
                    dataset_export.CONTENT_TYPES["jsonl"]: DATASET_ROW,
                    dataset_export.CONTENT_TYPES["csv"]: {"type": "string"},
                    dataset_export.CONTENT_TYPES["parquet"]: {"type": "string", "contentMediaType":
                                                              dataset_export.CONTENT_TYPES["parquet"]}})}})
@require_GET
def dataset(request: HttpRequest, pk: int) -> HttpResponse | StreamingHttpResponse:
    project = _admin_project(request, pk)
    fmt = request.GET.get("format", "jsonl")
    try:
        filters = dataset_export.parse_filters(project, request.GET.dict())
        body = dataset_export.dataset_stream(project, fmt, filters)
    except ValueError as exc:
        return _error(str(exc))
    response = StreamingHttpResponse(body, content_type=dataset_export.CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="dataset-{project.pk}.{fmt}"'
    return response


WEBHOOKS_OUT = {"type": "object", "required": ["webhooks"],
                "properties": {"webhooks": {"type": "array", "items": WEBHOOK}}}
WEBHOOK_CREATED = {**WEBHOOK, "required": [*WEBHOOK["required"], "secret"], "properties": {
    **WEBHOOK["properties"],
    "secret": {"type": "string", "description": "the signing secret, shown this once"}}}
SECRET_OUT = {"type": "object", "required": ["id", "secret"], "properties": {
    "id": {"type": "integer"},
    "secret": {"type": "string", "description": "the new signing secret, shown this once"}}}


def _token_project(request: HttpRequest, pk: int, what: str) -> Project:
    """The project of the token in the request; a session gets 403 (sessions are read-only here)."""
    if not request.headers.get("Authorization", "").startswith("Token "):
        raise PermissionDenied(f"{what} needs 'Authorization: Token <project token>'")
    return _admin_project(request, pk)


def _hook(project: Project, hook_pk: int) -> WebhookEndpoint:
    found = WebhookEndpoint.objects.filter(project=project, pk=hook_pk).first()
    if found is None:
        raise Http404("no such webhook in this project")
    return found


@operation(
    get={"summary": "The project's webhooks (without their secrets), each with its newest deliveries",
         "answers": {200: ("the webhooks in creation order", WEBHOOKS_OUT)}},
    post={"summary": "Register a webhook: events posted to the URL, signed (Standard Webhooks) with a secret "
                     "shown once",
          "body": WEBHOOK_BODY,
          "answers": {201: ("the new webhook with its secret", WEBHOOK_CREATED)}},
)
@csrf_exempt  # token-authenticated API; session callers are read-only (GET)
@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest, pk: int) -> JsonResponse:
    if request.method == "GET":
        project = _admin_project(request, pk)
        return JsonResponse({"webhooks": [webhook_endpoints.describe(e)
                                          for e in webhook_endpoints.of_project(project)]})
    project = _token_project(request, pk, "registering a webhook")
    try:
        body = parse_json(request.body, "the body")
    except ValueError as exc:
        return _error(str(exc))
    if not isinstance(body, dict):
        return _error('the body must be an object {"url": ..., "events": [...]}')
    try:
        endpoint, secret = webhook_endpoints.register(project, body.get("url"), body.get("events"))
    except ValueError as exc:
        return _error(str(exc))
    return JsonResponse({**webhook_endpoints.describe(endpoint), "secret": secret}, status=201)


@operation(delete={"summary": "Delete a webhook and its delivery log",
                   "answers": {204: ("deleted", None)}})
@csrf_exempt
@require_http_methods(["DELETE"])
def webhook(request: HttpRequest, pk: int, hook_pk: int) -> HttpResponse:
    _hook(_token_project(request, pk, "deleting a webhook"), hook_pk).delete()
    return HttpResponse(status=204)


@operation(post={"summary": "Rotate a webhook's secret: deliveries sign with the new one from now on",
                 "answers": {200: ("the new secret, shown this once", SECRET_OUT)}})
@csrf_exempt
@require_http_methods(["POST"])
def webhook_secret(request: HttpRequest, pk: int, hook_pk: int) -> JsonResponse:
    endpoint = _hook(_token_project(request, pk, "rotating a webhook secret"), hook_pk)
    return JsonResponse({"id": endpoint.pk, "secret": webhook_endpoints.rotate(endpoint)})


LABELS_FORMAT = {"name": "format", "in": "query", "required": False,
                 "schema": {"type": "string", "enum": list(label_formats.LABEL_FORMATS), "default": "jsonl"},
                 "description": "csv (formula-safe cells), jsonl (values exact), parquet (label as int64 "
                                "when every class is an integer, else text) or prodigy (Prodigy tasks, JSON "
                                "Lines; not for vector items: 400)"}


LABELS_UNDONE = {"name": "undone", "in": "query", "required": False,
                 "schema": {"type": "string", "enum": list(UNDONE_CHOICES), "default": UNDONE_CHOICES[0]},
                 "description": "exclude: the standing labels only (as the dashboard counts them); include: "
                                "the undone labels too (their undone_at set; not with prodigy: 400)"}


@operation(get={"summary": "The standing labels of the project (with undone=include every label) with their "
                           "item's content, streamed (also as Parquet or Prodigy tasks)",
                "parameters": [LABELS_FORMAT, LABELS_UNDONE],
                "answers": {200: ("one row per label in label order", None, {
                    label_formats.CONTENT_TYPES["jsonl"]: LABEL_ROW,
                    label_formats.CONTENT_TYPES["csv"]: {"type": "string"},
                    label_formats.CONTENT_TYPES["parquet"]: {"type": "string", "contentMediaType":
                                                             label_formats.CONTENT_TYPES["parquet"]}})}})
@require_GET
def labels(request: HttpRequest, pk: int) -> HttpResponse | StreamingHttpResponse:
    project = _admin_project(request, pk)
    fmt = request.GET.get("format", "jsonl")
    try:
        body = label_formats.table_stream(project, "labels", fmt, request.GET.dict())
    except ValueError as exc:
        return _error(str(exc))
    response = StreamingHttpResponse(body, content_type=label_formats.CONTENT_TYPES[fmt])
    response["Content-Disposition"] = (f'attachment; filename="labels-{project.pk}.'
                                       f'{label_formats.SUFFIXES[fmt]}"')
    return response


def _descriptions(project: Project, **extra: Any) -> JsonResponse:
    return JsonResponse({"classes": project.classes, "descriptions": project.class_descriptions, **extra})


@operation(
    get={"summary": "The class descriptions a text project's learner starts from (cold start)",
         "answers": {200: ("the classes and their descriptions", CLASS_DESCRIPTIONS)}},
    put={"summary": "Replace the class descriptions of a text project; the learner is rebuilt from them and "
                    "the labels so far (as in the console)",
         "body": CLASS_DESCRIPTIONS_BODY,
         "answers": {200: ("the classes and the descriptions now, with whether they changed",
                           CLASS_DESCRIPTIONS)}},
)
@csrf_exempt  # token-authenticated API; session callers are read-only (GET)
@require_http_methods(["GET", "PUT"])
def class_descriptions(request: HttpRequest, pk: int) -> JsonResponse:
    if request.method == "GET":
        return _descriptions(_admin_project(request, pk))
    project = _token_project(request, pk, "changing the class descriptions")
    try:
        body = parse_json(request.body, "the body")
    except ValueError as exc:
        return _error(str(exc))
    if not isinstance(body, dict) or set(body) != {"descriptions"}:
        return _error('the body must be {"descriptions": {class: text, ...}} and nothing else')
    try:
        with transaction.atomic():
            locked = Project.objects.select_for_update().get(pk=project.pk)
            changed = change_class_descriptions(locked, None, body["descriptions"])  # the token: no user
            send.items_changed(project.pk)
    except ValueError as exc:
        return _error(str(exc))
    return _descriptions(locked, changed=bool(changed))
