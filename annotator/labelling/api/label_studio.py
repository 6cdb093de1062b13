"""Label Studio: the project's tasks out, and the ML-backend routes a Label Studio install calls
(docs/label_studio.md; what they do: :mod:`..annotation.label_studio`).

* ``GET /api/projects/<id>/label-studio/tasks`` -> the project as Label Studio JSON tasks
  (:mod:`..reporting.label_studio`), streamed; ``GET /api/projects/<id>/label-studio/setup`` ->
  ``{"label_config", "ml_backend_url"}``: the labelling config to paste into Label Studio and the
  URL to give it as the ML backend. Both for the project's API token and its admins' sessions.
* ``/api/label-studio/<id>/<backend token>/health`` (GET), ``/setup``, ``/predict``,
  ``/webhook`` (POST): the ML-backend protocol. The backend token is the project's
  (:func:`..annotation.label_studio.backend_token`); a wrong one is 403, the same for a missing
  project.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from annotator.labelling.annotation import label_studio as backend
from annotator.labelling.models import Project
from annotator.labelling.reporting import label_studio as ls_export
from annotator.labelling.worker import send
from learners.uploads.input_rules import parse_json

from .errors import error_response
from .schema import operation
from .views import admin_project

WRONG_BACKEND_TOKEN = "wrong ML-backend token, or no such project"
TASKS_OUT = {"type": "array", "items": {"type": "object", "required": ["data", "annotations", "predictions"]}}
SETUP_OUT = {"type": "object", "required": ["label_config", "ml_backend_url"], "properties": {
    "label_config": {"type": "string"}, "ml_backend_url": {"type": "string"}}}
PREDICT_OUT = {"type": "object", "required": ["results", "model_version"], "properties": {
    "results": {"type": "array", "items": {"type": "object",
                                           "required": ["result", "score", "model_version"]}},
    "model_version": {"type": "string"}}}


def _json_body(request: HttpRequest) -> Any:
    """The body's JSON value; None when it is not JSON (or nests too deeply: the app's JSON rule,
    :func:`learners.uploads.input_rules.parse_json`)."""
    try:
        return parse_json(request.body or b"null")
    except ValueError:
        return None


def _backend_project(request: HttpRequest, pk: int, token: str) -> Project:
    """The project whose backend token is ``token``; 403 otherwise, the same for a missing
    project. Not throttled as the API's tokens are: a backend token is 160 random-looking bits
    (an HMAC), and Label Studio retries a failing backend, which a limit per address would lock
    out for every project behind the same proxy."""
    project = Project.objects.filter(pk=pk).first()
    if backend.token_ok(project, token) and project is not None:
        return project
    raise PermissionDenied(WRONG_BACKEND_TOKEN)


def backend_url(request: HttpRequest, project: Project) -> str:
    """The URL a Label Studio install is given as this project's ML backend."""
    path = reverse("ls-ml-health", kwargs={"pk": project.pk, "token": backend.backend_token(project)})
    return request.build_absolute_uri(path.rsplit("health", 1)[0])


@operation(get={"summary": "The project as Label Studio JSON tasks: people's labels as annotations, the "
                           "model's as predictions (score: query probability), streamed",
                "answers": {200: ("a JSON list of tasks, one per item in arrival order", TASKS_OUT)}})
@require_GET
def tasks(request: HttpRequest, pk: int) -> HttpResponse | StreamingHttpResponse:
    project = admin_project(request, pk)
    try:
        body = ls_export.tasks_json(project)
    except ValueError as exc:
        return error_response(str(exc))
    response = StreamingHttpResponse(body, content_type=ls_export.CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="label-studio-{project.pk}.json"'
    return response


@operation(get={"summary": "What a Label Studio project needs: the labelling config and the ML backend URL",
                "answers": {200: ("the config and the URL (it holds the backend token)", SETUP_OUT)}})
@require_GET
def setup(request: HttpRequest, pk: int) -> HttpResponse:
    project = admin_project(request, pk)
    try:
        config = ls_export.labeling_config(project)
    except ValueError as exc:
        return error_response(str(exc))
    return JsonResponse({"label_config": config, "ml_backend_url": backend_url(request, project)})


@operation(get={"summary": "ML backend: health (Label Studio checks it before every call)",
                "answers": {200: ("up", {"type": "object"})}})
@require_GET
def ml_health(request: HttpRequest, pk: int, token: str) -> JsonResponse:
    project = _backend_project(request, pk, token)
    return JsonResponse({"status": "UP", "model_class": project.algorithm, "model_version":
                         backend.model_version(project)})


@operation(post={"summary": "ML backend: setup (the Label Studio project's labelling config)",
                 "body": {"type": "object"},
                 "answers": {200: ("the model version", {"type": "object"})}})
@csrf_exempt
@require_POST
def ml_setup(request: HttpRequest, pk: int, token: str) -> JsonResponse:
    project = _backend_project(request, pk, token)
    body = _json_body(request)
    config = body.get("schema") if isinstance(body, dict) else None
    if config is not None:
        try:
            backend.control_names(config)
        except backend.BackendError as exc:
            return error_response(str(exc))
    return JsonResponse({"model_version": backend.model_version(project)})


@operation(post={"summary": "ML backend: predictions for Label Studio tasks (score: query probability)",
                 "body": {"type": "object", "required": ["tasks"]},
                 "answers": {200: ("one prediction per task, in order", PREDICT_OUT)}})
@csrf_exempt
@require_POST
def ml_predict(request: HttpRequest, pk: int, token: str) -> JsonResponse:
    project = _backend_project(request, pk, token)
    body = _json_body(request)
    tasks_in = body.get("tasks") if isinstance(body, dict) else None
    if not isinstance(tasks_in, list) or not tasks_in or len(tasks_in) > backend.MAX_TASKS:
        return error_response(f"the body must be {{\"tasks\": [...]}} with 1 to {backend.MAX_TASKS} tasks")
    try:
        names = (backend.control_names(body["label_config"]) if body.get("label_config") is not None
                 else (ls_export.FROM_NAME, ls_export.data_key(project)))
        item_ids = backend.items_for_tasks(project, tasks_in)
    except (backend.BackendError, ValueError) as exc:
        return error_response(str(exc))
    send.items_changed(project.pk)  # new items: the stream engine decides them
    results = backend.predictions(project, item_ids, names)
    return JsonResponse({"results": results, "model_version": backend.model_version(project)})


@operation(post={"summary": "ML backend: Label Studio's webhook (annotation created, updated, deleted)",
                 "body": {"type": "object", "required": ["action"]},
                 "answers": {200: ("what the event did (other events: ignored)", {"type": "object"})}})
@csrf_exempt
@require_POST
def ml_webhook(request: HttpRequest, pk: int, token: str) -> JsonResponse:
    project = _backend_project(request, pk, token)
    try:
        done = backend.annotation_event(project, _json_body(request))
    except backend.BackendError as exc:
        return error_response(str(exc))
    if done.get("taught") or done.get("retracted"):
        send.labels_changed(project.pk)
    elif "item_id" in done:
        send.items_changed(project.pk)
    return JsonResponse(done)
