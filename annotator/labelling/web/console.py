"""The admin console of a project (project admins and staff) and the new-project page (staff).

Every input is a form of :mod:`.forms`: the learner form is generated from the ``learners``
registry (only algorithms that support the project's task, one field per parameter with its
range and help), the stream-settings form from :data:`.forms.PROJECT_SETTINGS`. A refused form
comes back (400) with each error at its field and the typed values kept; a saved one redirects
with a confirmation (Django messages). Every change (algorithm, a parameter, stream state,
showing predictions, memberships) is recorded by :mod:`.settings_changes` and takes effect for the next
decision (the pipeline reads the project at every run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

import learners
from annotator.labelling.api.schema import CONTENT_KEY
from annotator.labelling.engine import label_budget
from annotator.labelling.models import LearnerState, Membership, Project
from annotator.labelling.projects.access import project_for
from annotator.labelling.projects.creation import create_project
from annotator.labelling.projects.settings_changes import (
    change_class_descriptions,
    change_settings,
    record,
    rotate_api_token,
)
from annotator.labelling.reporting import refit_runs
from annotator.labelling.reporting.learner_evidence import below_baseline, learner_rows, no_benchmark_note
from annotator.labelling.reporting.summary import console_summary
from annotator.labelling.worker import send
from learners.features import measured_speed

from .forms import (
    DEFAULT_ALGORITHM,
    ClassDescriptionsForm,
    LearnerForm,
    MemberForm,
    NewProjectForm,
    StreamSettingsForm,
    featurizer_defaults,
)
from .request import AppRequest


def _saved(what: str, changed: list[str]) -> str:
    """The confirmation of a saved form, naming what changed."""
    return f"{what} saved: {', '.join(changed)} changed." if changed else f"{what} saved (nothing changed)."


def _save_learner(request: AppRequest, project: Project, form: Any) -> str:
    algorithm = form.cleaned_data["algorithm"]
    changed = change_settings(project, request.user, algorithm=algorithm, params=form.params())
    why = below_baseline(project.task, project.item_kind, project).get(algorithm)
    if why:  # allowed, with the warning (reporting.learner_evidence)
        messages.warning(request, f"{algorithm} does not beat the majority-class baseline (answering the "
                                  f"most frequent class every time): {why}.")
    return _saved("Learner settings", changed) + (" The next decision uses them." if changed else "")


def _save_settings(request: AppRequest, project: Project, form: Any) -> str:
    return _saved("Stream settings", change_settings(project, request.user, **form.cleaned_data))


def _save_descriptions(request: AppRequest, project: Project, form: Any) -> str:
    changed = change_class_descriptions(project, request.user, form.cleaned_data["class_descriptions"])
    return _saved("Class descriptions", changed) + (
        " The learner is rebuilt from them and the labels so far." if changed else "")


def _save_member(request: AppRequest, project: Project, form: Any) -> str:
    user, username = form.cleaned_data["username"], form.cleaned_data["username"].username
    if request.POST.get("action") == "unassign":
        deleted, _ = Membership.objects.filter(project=project, user=user).delete()
        if deleted:
            record(project, request.user, "member", username, None)
            return f"{username} removed from the project."
        return f"{username} was not a member (nothing changed)."
    role = form.cleaned_data["role"]
    old = Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()
    Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    record(project, request.user, "member", f"{username} ({old})" if old else None, f"{username} ({role})")
    return f"{username} is now {role} of the project." if old != role else f"{username} was {role} already."


#: POST ``action`` -> (the form's name on the page, its class, what saving it does)
ACTIONS: dict[str, tuple[str, Callable[..., Any], Callable[[AppRequest, Project, Any], str]]] = {
    "learner": ("learner_form", lambda project, data: _learner_form(project, data), _save_learner),
    "settings": ("settings_form", StreamSettingsForm, _save_settings),
    "descriptions": ("descriptions_form", ClassDescriptionsForm, _save_descriptions),
    "assign": ("member_form", lambda project, data: MemberForm(data), _save_member),
    "unassign": ("member_form", lambda project, data: MemberForm(data), _save_member),
}


def _start_refit(request: AppRequest, project: Project) -> HttpResponse:
    """Start the refit job on every label (:func:`.refit_runs.start`), or say that one waits or
    runs already (a double click starts one); back to the console, whose panel follows it."""
    job, created = refit_runs.start(project, request.user)
    if created:
        send.run_refit(job.pk)
        messages.info(request, "Refit on all labels started: a worker fits the batch refit on every label "
                               "and checks it against the online learner; the result appears below.")
    else:
        messages.info(request, f"A refit on all labels is {job.shown_status} already (started "
                               f"{job.created:%Y-%m-%d %H:%M:%S}): no second one was started.")
    return redirect("console", pk=project.pk)


def refit_panel(project: Project) -> dict[str, Any]:
    """What the console's refit panel shows: the project's newest refit job (``job``, None before
    the first), whether the export uses it (``current``: it is current,
    :func:`.refit_runs.current_run`), the model version now (``version``) and the labels an
    export without a current refit fits on in its request (``cap``, a string with thousands
    separators, as the card's ``why`` writes it)."""
    job = project.refit_runs.first()
    state = LearnerState.objects.get(project=project)
    current = refit_runs.current_run(project, state)
    return {"job": job, "current": job is not None and current is not None and current.pk == job.pk,
            "version": state.version, "cap": f"{settings.REFIT_REQUEST_MAX_LABELS:,}"}


def _rotate_token(request: AppRequest, project: Project) -> HttpResponse:
    """A new API token for the project (:func:`.settings_changes.rotate_api_token`, under the
    project's row lock); the old one stops working at once. Back to the console, which shows it."""
    with transaction.atomic():
        rotate_api_token(Project.objects.select_for_update().get(pk=project.pk), request.user)
    messages.success(request, "API token rotated: the old token no longer works. Give the new one to every "
                              "script and client that calls the API; a connected Label Studio project needs "
                              "the new ML-backend URL (labelling config and ML-backend URL, below).")
    return redirect("console", pk=project.pk)


@login_required
@require_GET
def console_refit(request: AppRequest, pk: int) -> HttpResponse:
    """htmx partial: the refit panel (:func:`refit_panel`), polled every second while its job
    waits or runs."""
    project = project_for(request.user, pk, admin=True)
    return render(request, "labelling/_refit_run.html", {"project": project, **refit_panel(project)})


@login_required
def console(request: AppRequest, pk: int) -> HttpResponse:
    """The console page; POST ``action`` = learner | settings | descriptions | assign | unassign
    (400 with the errors at their fields, else a redirect with a confirmation), refit (start
    the refit job on every label, :func:`_start_refit`) or rotate-token (a new API token,
    :func:`_rotate_token`)."""
    project = project_for(request.user, pk, admin=True)
    bound: dict[str, Any] = {}
    if request.method == "POST" and request.POST.get("action") == "refit":
        return _start_refit(request, project)
    if request.method == "POST" and request.POST.get("action") == "rotate-token":
        return _rotate_token(request, project)
    if request.method == "POST":
        action = ACTIONS.get(request.POST.get("action", ""))
        if action is None:
            return HttpResponse("unknown action", status=400, content_type="text/plain")
        name, make, save = action
        form = make(project, request.POST)
        if form.is_valid():
            try:
                with transaction.atomic():
                    locked = Project.objects.select_for_update().get(pk=project.pk)
                    message = save(request, locked, form)
                    send.items_changed(project.pk)
            except ValueError as exc:  # e.g. a learner that cannot be built on these features
                form.add_error(None, str(exc))
            else:
                messages.success(request, message)
                return redirect("console", pk=project.pk)
        bound[name] = form
        project.refresh_from_db()
    context = _context(request, project)
    context.update(bound)
    return render(request, "labelling/console.html", context, status=400 if bound else 200)


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


def _learner_form(project: Project, data: Any = None, algorithm: str | None = None) -> LearnerForm:
    """The learner form; changing its algorithm reloads its fields (htmx, :func:`console_params`)."""
    form = LearnerForm(project, data, algorithm=algorithm)
    form.fields["algorithm"].widget.attrs.update({
        "hx-get": reverse("console-params", args=[project.pk]), "hx-target": "#learner-fields",
        "hx-swap": "outerHTML", "hx-trigger": "change"})
    form.fields["algorithm"].help_text = form.spec.summary
    below = below_baseline(project.task, project.item_kind, project)
    algorithms = form.fields["algorithm"]
    assert isinstance(algorithms, forms.ChoiceField)
    algorithms.choices = [(n, f"{n} (does not beat the majority baseline)" if n in below else n)
                          for n in learners.names_for_task(project.task)]
    if form.initial.get("algorithm") in below:
        form.fields["algorithm"].help_text += (f" Does not beat the majority-class baseline: "
                                               f"{below[form.initial['algorithm']]}.")
    return form


def _context(request: AppRequest, project: Project) -> dict[str, Any]:
    api_url = request.build_absolute_uri(f"/api/projects/{project.pk}/items")
    featurizer = project.featurizer()
    return {
        "project": project,
        "featurizer": featurizer,
        "featurizer_speed": speed_text(featurizer.name),
        "learner_form": _learner_form(project), "settings_form": StreamSettingsForm(project),
        "learner_evidence": learner_rows(project.task, project.item_kind, project),
        "learner_evidence_note": no_benchmark_note(project.task, project.item_kind),
        "descriptions_form": (ClassDescriptionsForm(project) if project.item_kind == Project.Kind.TEXT
                              else None),
        "member_form": MemberForm(),
        "members": project.memberships.select_related("user").order_by("user__username"),
        "changes": project.changes.select_related("user")[:50],
        "curl": curl_example(project, api_url),
        "summary": console_summary(project),
        "budget_promise": label_budget.promise(project),
        "refit": refit_panel(project),
    }


@login_required
@require_GET
def console_params(request: AppRequest, pk: int) -> HttpResponse:
    """htmx partial: the learner form's fields for the algorithm picked (defaults, or the project's
    values when it is the current algorithm). It replaces the algorithm's field and every error
    with it, so that no error of the former algorithm stays on the page."""
    project = project_for(request.user, pk, admin=True)
    algorithm = request.GET.get("algorithm", project.algorithm)
    if algorithm not in learners.names_for_task(project.task):
        return HttpResponse(f"unknown algorithm {algorithm!r}", status=400, content_type="text/plain")
    return render(request, "labelling/_learner_fields.html",
                  {"project": project, "form": _learner_form(project, algorithm=algorithm)})


@login_required
def new_project(request: AppRequest) -> HttpResponse:
    """Staff create a project: name, task, item kind, classes (comma-separated), featurizer and its
    options; the creator becomes its admin. The algorithm starts as the task's default (changed
    in the console)."""
    if not request.user.is_staff:
        raise PermissionDenied("only staff create projects")
    form = NewProjectForm(request.POST if request.method == "POST" else None, speed=speed_text)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():
                project = create_project(name=data["name"], task=data["task"], item_kind=data["item_kind"],
                                         classes=data["classes"], algorithm=DEFAULT_ALGORITHM[data["task"]],
                                         featurizer_config=data["featurizer_config"],
                                         class_descriptions=data["class_descriptions"])
                Membership.objects.create(project=project, user=request.user, role=Membership.Role.ADMIN)
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Project {project.name!r} created with {project.algorithm}: upload "
                                      f"items or stream them through the API, then assign annotators.")
            return redirect("console", pk=project.pk)
    evidence = [(task, learner_rows(task, None)) for task in DEFAULT_ALGORITHM]
    return render(request, "labelling/new_project.html",
                  {"form": form, "featurizer_defaults": featurizer_defaults(), "learner_evidence": evidence},
                  status=400 if form.errors else 200)


def speed_text(name: str) -> str:
    """A featurizer's measured speed for people, e.g. ``"1,234 items/s"`` (benchmarks/featurizers.py)."""
    speed = measured_speed(name)
    return "speed not measured" if speed is None else f"{speed:,.0f} items/s"
