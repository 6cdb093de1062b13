"""JSON API for streaming items into a live project and reading the decisions.

Authentication: header ``Authorization: Token <project api_token>`` (the token belongs to one
project), or a logged-in member's session (handy for the dashboard).

* ``POST /api/projects/<id>/items`` body ``{"items": [{"text": ...} | {"url": ...} |
  {"vector": [[i, v], ...]} | {"image_base64": ..., "filename": ...}, ...]}`` (each may
  carry ``"gold"``; text and URL entries follow the JSONL upload rules),
  at most ``API_MAX_BATCH`` items. The batch is validated, featurized and inserted in the
  request (bounded work) all-or-nothing; a worker decides the items afterwards. Returns
  ``201 {"items": [{"id", "seq", "status"}, ...]}`` in input order, or ``400 {"error"}``
  naming the item (``item 3: ...``, 0-based).
* ``GET /api/projects/<id>/items?ids=1,2,3`` -> ``{"items": [{"id", "seq", "status",
  "prediction", "query_prob", "queried", "model_version"}, ...]}``; decision fields are null
  until the item is decided.
* ``GET /api/projects/<id>/metrics`` -> :func:`.metrics.project_metrics`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hmac
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from learners.uploads import gold_of
from learners.uploads.tabular import row_record

from . import enqueue
from .access import project_for
from .ingest import IngestError, Record, import_records
from .metrics import project_metrics
from .models import Item, Project

CONTENT_KEY = {"vectors": "vector", "image": "image_base64"}  # text/URL: as in CSV/JSONL uploads
MAX_IDS = 1000


def _error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _authorized_project(request: HttpRequest, pk: int) -> Project:
    """The project if the request carries its token or comes from a member; 403 otherwise."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Token "):
        project = get_object_or_404(Project, pk=pk)
        if hmac.compare_digest(header[len("Token "):].strip(), project.api_token):
            return project
        raise PermissionDenied("wrong token for this project")
    if request.user.is_authenticated:
        return project_for(request.user, pk)
    raise PermissionDenied("send 'Authorization: Token <project token>'")


def _record(project: Project, entry: Any, where: str) -> Record:
    if not isinstance(entry, dict):
        raise IngestError(f"{where}: expected an object, got {type(entry).__name__}")
    if project.item_kind in (Project.Kind.TEXT, Project.Kind.URL):
        return row_record(project, {k.lower(): v for k, v in entry.items()}, where)
    key = CONTENT_KEY[project.item_kind]
    if key not in entry:
        raise IngestError(f"{where}: missing {key!r}")
    raw = entry[key]
    if key == "image_base64":
        try:
            raw = base64.b64decode(raw, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise IngestError(f"{where}: image_base64 is not valid base64") from None
    return Record(where, raw, gold_of(project, entry.get("gold"), where),
                  filename=str(entry.get("filename", "")) if key == "image_base64" else "")


def _post_items(request: HttpRequest, project: Project) -> JsonResponse:
    try:
        body = json.loads(request.body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error("the body must be JSON")
    entries = body.get("items") if isinstance(body, dict) else None
    if not isinstance(entries, list) or not entries:
        return _error("the body must be {\"items\": [...]} with at least one item")
    if len(entries) > settings.API_MAX_BATCH:
        return _error(f"at most {settings.API_MAX_BATCH} items per request, got {len(entries)}")
    try:
        records = [_record(project, e, f"item {i}") for i, e in enumerate(entries)]
        with transaction.atomic():
            items = import_records(project, records)
            enqueue.items_changed(project.pk)
    except IngestError as exc:
        return _error(str(exc))
    return JsonResponse({"items": [{"id": it.pk, "seq": it.seq, "status": it.status} for it in items]},
                        status=201)


def _get_items(request: HttpRequest, project: Project) -> JsonResponse:
    try:
        ids = [int(x) for x in request.GET.get("ids", "").split(",") if x.strip()]
    except ValueError:
        return _error("ids must be a comma-separated list of item ids")
    if len(ids) > MAX_IDS:
        return _error(f"at most {MAX_IDS} ids per request")
    rows = {r["id"]: r for r in Item.objects.filter(project=project, pk__in=ids).values(
        "id", "seq", "status", "prediction", "score", "query_prob", "queried", "model_version")}
    missing = [i for i in ids if i not in rows]
    if missing:
        return _error(f"no such item(s) in this project: {missing[:10]}", status=404)
    return JsonResponse({"items": [rows[i] for i in ids]})


def json_errors(view: Any) -> Any:
    """API views answer refusals as JSON ``{"error": ...}`` with 403, not Django's HTML page."""
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return _error(str(exc) or "forbidden", status=403)
    return wrapper


@csrf_exempt  # token-authenticated API; session callers are read-only (GET)
@require_http_methods(["GET", "POST"])
@json_errors
def items(request: HttpRequest, pk: int) -> HttpResponse:
    if request.method == "POST" and not request.headers.get("Authorization", "").startswith("Token "):
        raise PermissionDenied("posting items needs 'Authorization: Token <project token>'")
    project = _authorized_project(request, pk)
    return _post_items(request, project) if request.method == "POST" else _get_items(request, project)


@require_GET
@json_errors
def metrics(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(project_metrics(_authorized_project(request, pk)))
