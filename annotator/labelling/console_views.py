"""The admin console of a project (project admins and staff) and the new-project page (staff).

The algorithm form is generated from the ``learners`` registry: only algorithms that support
the project's task, one field per parameter with its range and help, values validated by
:func:`learners.validate_params`. Every change (algorithm, a parameter, stream state,
showing predictions, memberships) is recorded by :mod:`.changes` and takes
effect for the next decision (the pipeline reads the project at every run).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

import learners
from learners.features import DEFAULT, KINDS, default_config, featurizer_names, measured_speed
from learners.uploads.input_rules import checked_text, parse_json

from . import enqueue
from .access import project_for
from .api_schema import CONTENT_KEY
from .changes import change_settings, record
from .models import Membership, Project
from .projects import checked_project_name, create_project
from .web import AppRequest

DEFAULT_ALGORITHM = {"binary": "paa-i", "multiclass": "mpaa-i", "cost-sensitive": "cspaa"}


def param_fields(algorithm: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    """Form fields of ``algorithm``'s parameters: the registry description plus the value shown
    (``values`` where given, else the default) and the HTML input type."""
    fields = []
    for p in learners.get_spec(algorithm).describe()["params"]:
        value = values.get(p["name"], p["default"])
        kind = "select" if p["choices"] else "checkbox" if p["type"] == "bool" else \
            "number" if p["type"] in ("int", "float") else "text"
        fields.append({**p, "value": value, "input": kind,
                       "step": "1" if p["type"] == "int" else "any"})
    return fields


def _form_params(algorithm: str, post: Any) -> dict[str, Any]:
    """The posted parameter values of ``algorithm`` (checkboxes absent = false), validated."""
    raw = {}
    for p in learners.get_spec(algorithm).all_params():
        if p.kind is bool:
            raw[p.name] = "true" if post.get(f"param-{p.name}") else "false"
        elif f"param-{p.name}" in post:
            raw[p.name] = post.get(f"param-{p.name}")
    return learners.validate_params(algorithm, raw)


def _apply_learner(request: AppRequest, project: Project) -> None:
    algorithm = request.POST.get("algorithm", "")
    if algorithm not in learners.names_for_task(project.task):
        raise ValueError(f"algorithm must be one of {', '.join(learners.names_for_task(project.task))} "
                         f"for a {project.task} project (got {algorithm!r})")
    change_settings(project, request.user, algorithm=algorithm, params=_form_params(algorithm, request.POST))


#: upper bounds of the console's numbers: a day's labels fit the database's 32-bit column,
#: and no label costs more than a billion (an inf or 1e400 price would break the sums)
MAX_LABELS_PER_DAY = 2_147_483_647
MAX_PRICE_PER_LABEL = 1e9


def _optional_number(post: Any, name: str, kind: type, low: float, high: float) -> Any:
    """A blank field is None (off); otherwise a finite number in [low, high]; ValueError naming
    the field."""
    text = post.get(name, "").strip()
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{name} must be {what} (got {text[:40]!r})") from None
    if not low <= value <= high:  # False for nan too
        raise ValueError(f"{name} must be between {low:g} and {high:g} (got {text[:40]!r})")
    return value


def _apply_settings(request: AppRequest, project: Project) -> None:
    """Stream state, showing the guess, the dashboard for annotators, budget and label price."""
    post = request.POST
    state = post.get("stream_state", project.stream_state)
    if state not in Project.StreamState.values:
        raise ValueError(f"stream_state must be one of {', '.join(Project.StreamState.values)}")
    ratio = _optional_number(post, "budget_ratio", float, 1e-6, 1.0)
    per_day = _optional_number(post, "budget_per_day", int, 1, MAX_LABELS_PER_DAY)
    if ratio is not None and per_day is not None:
        raise ValueError("set the budget as a query ratio or as labels per day, not both")
    new = {"stream_state": state, "show_prediction": post.get("show_prediction") == "on",
           "dashboard_for_annotators": post.get("dashboard_for_annotators") == "on",
           "budget_ratio": ratio, "budget_per_day": per_day,
           "price_per_label": _optional_number(post, "price_per_label", float, 0.0, MAX_PRICE_PER_LABEL)}
    change_settings(project, request.user, **new)


def _apply_member(request: AppRequest, project: Project) -> None:
    username = checked_text(request.POST.get("username", "").strip(), "username")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValueError(f"no user named {username!r}")
    if request.POST.get("action") == "unassign":
        deleted, _ = Membership.objects.filter(project=project, user=user).delete()
        if deleted:
            record(project, request.user, "member", username, None)
        return
    role = request.POST.get("role", Membership.Role.ANNOTATOR)
    if role not in Membership.Role.values:
        raise ValueError(f"role must be one of {', '.join(Membership.Role.values)}")
    old = Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()
    Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    record(project, request.user, "member", f"{username} ({old})" if old else None, f"{username} ({role})")


ACTIONS = {"learner": _apply_learner, "settings": _apply_settings, "assign": _apply_member,
           "unassign": _apply_member}


@login_required
def console(request: AppRequest, pk: int) -> HttpResponse:
    """The console page; POST ``action`` = learner | settings | assign | unassign."""
    project = project_for(request.user, pk, admin=True)
    error, status = "", 200
    if request.method == "POST":
        action = ACTIONS.get(request.POST.get("action", ""))
        try:
            if action is None:
                raise ValueError("unknown action")
            with transaction.atomic():
                project = Project.objects.select_for_update().get(pk=project.pk)
                action(request, project)
                enqueue.items_changed(project.pk)
        except ValueError as exc:
            error, status = str(exc), 400
            project.refresh_from_db()
        else:
            return redirect("console", pk=project.pk)
    return render(request, "labelling/console.html", _context(request, project, error), status=status)


#: one item of the project's kind as the API takes it (api_schema.CONTENT_KEY; text and URLs as in uploads);
#: the image is read from a file by the shell (base64 -w0), with its file name
API_EXAMPLE_ITEM = {
    "text": '{"text": "win a free prize now"}',
    "url": '{"url": "https://example.com/login"}',
    "vectors": '{"' + CONTENT_KEY["vectors"] + '": [[0, 0.5], [6, 1.25]]}',
    "image": '{"' + CONTENT_KEY["image"] + '": "\'"$(base64 -w0 digit.png)"\'", "filename": "digit.png"}',
}


def curl_example(project: Project, api_url: str) -> str:
    """A ``curl`` command that streams one item of the project's kind into it (the console shows it)."""
    return (f"curl -X POST {api_url} \\\n  -H 'Authorization: Token {project.api_token}' \\\n"
            f"  -H 'Content-Type: application/json' \\\n"
            f"  -d '{{\"items\": [{API_EXAMPLE_ITEM[project.item_kind]}]}}'")


def _context(request: AppRequest, project: Project, error: str) -> dict[str, Any]:
    api_url = request.build_absolute_uri(f"/api/projects/{project.pk}/items")
    featurizer = project.featurizer()
    return {
        "project": project, "error": error,
        "featurizer": featurizer,
        "featurizer_speed": speed_text(featurizer.name),
        "algorithms": [(n, learners.get_spec(n).summary) for n in learners.names_for_task(project.task)],
        "fields": param_fields(project.algorithm, project.learner_params()),
        "members": project.memberships.select_related("user").order_by("user__username"),
        "roles": Membership.Role.values, "changes": project.changes.select_related("user")[:50],
        "curl": curl_example(project, api_url),
    }


@login_required
@require_GET
def console_params(request: AppRequest, pk: int) -> HttpResponse:
    """htmx partial: the parameter fields of the algorithm picked in the form (defaults, or the
    project's values when it is the current algorithm)."""
    project = project_for(request.user, pk, admin=True)
    algorithm = request.GET.get("algorithm", project.algorithm)
    if algorithm not in learners.names_for_task(project.task):
        return HttpResponse(f"unknown algorithm {algorithm!r}", status=400, content_type="text/plain")
    values = project.learner_params() if algorithm == project.algorithm else {}
    return render(request, "labelling/_param_fields.html", {"fields": param_fields(algorithm, values)})


@login_required
def new_project(request: AppRequest) -> HttpResponse:
    """Staff create a project: name, task, item kind, classes (comma-separated); the creator
    becomes its admin. The algorithm starts as the task's default (changed in the console)."""
    if not request.user.is_staff:
        raise PermissionDenied("only staff create projects")
    error, form = "", request.POST if request.method == "POST" else {}
    if request.method == "POST":
        try:
            task = form.get("task", "")
            if task not in DEFAULT_ALGORITHM:
                raise ValueError(f"task must be one of {', '.join(DEFAULT_ALGORITHM)}")
            classes = _parse_classes(form.get("classes", ""))
            name = checked_project_name(form.get("name", "").strip())
            if not name:
                raise ValueError("name is required")
            if Project.objects.filter(name=name).exists():
                raise ValueError(f"a project named {name!r} exists already")
            kind = form.get("item_kind", "")
            if kind not in KINDS:
                raise ValueError(f"item type must be one of {', '.join(KINDS)}")
            featurizer = form.get("featurizer_name", "") or DEFAULT[kind]
            if featurizer not in featurizer_names(kind):
                raise ValueError(f"featurizer {featurizer!r} is not one for {kind} items; valid: "
                                 f"{', '.join(featurizer_names(kind))}")
            with transaction.atomic():
                project = create_project(name=name, task=task, item_kind=kind, classes=classes,
                                         algorithm=DEFAULT_ALGORITHM[task],
                                         featurizer_config={"kind": kind, "name": featurizer,
                                                            **_parse_options(form)})
                Membership.objects.create(project=project, user=request.user, role=Membership.Role.ADMIN)
            return redirect("console", pk=project.pk)
        except (ValueError, KeyError) as exc:
            error = str(exc).strip("'\"")
    return render(request, "labelling/new_project.html",
                  {"error": error, "form": form, "tasks": list(DEFAULT_ALGORITHM), "kinds": KINDS,
                   "featurizers": featurizer_choices()}, status=400 if error else 200)


def speed_text(name: str) -> str:
    """A featurizer's measured speed for people, e.g. ``"1,234 items/s"`` (benchmarks/featurizers.py)."""
    speed = measured_speed(name)
    return "speed not measured" if speed is None else f"{speed:,.0f} items/s"


def featurizer_choices() -> list[dict[str, Any]]:
    """Per item kind, each featurizer with its measured speed, default flag and default options
    (JSON text)."""
    def options(kind: str, name: str) -> str:  # as the JSON the options field takes
        return json.dumps({o: v for o, v in default_config(kind, name).items()
                           if o not in ("kind", "name", "version")})

    return [{"kind": kind, "featurizers": [
        {"name": name, "speed": speed_text(name), "default": name == DEFAULT[kind],
         "options": options(kind, name)}
        for name in featurizer_names(kind)]} for kind in KINDS]


def _parse_options(form: Any) -> dict[str, Any]:
    """The featurizer options field: a JSON object (blank = the defaults); ValueError otherwise."""
    text = form.get("featurizer", "").strip()
    if not text:
        return {}
    options = parse_json(text, "featurizer options must be a JSON object")
    if not isinstance(options, dict) or "kind" in options or "name" in options:
        raise ValueError("featurizer options must be a JSON object of options (without 'kind' or "
                         "'name': choose the featurizer in its list)")
    return options


def _parse_classes(text: str) -> list[Any]:
    """Comma-separated class values; integers when every value is an integer. ValueError if < 2."""
    values = [v.strip() for v in text.split(",") if v.strip()]
    if len(values) < 2 or len(set(values)) != len(values):
        raise ValueError("classes: give at least two distinct values, comma-separated")
    if all(v.lstrip("-").isdigit() for v in values):
        return [int(v) for v in values]
    return values
