"""The item browser and the dataset export (docs/dataset.md).

* ``GET  projects/<pk>/items/``                    every item, filtered, 50 a page by keyset
  (:mod:`.item_browser`); project admins, and annotators when ``items_for_annotators`` and the
  project serves no honeypots (:func:`.access.sees_items`).
* ``POST projects/<pk>/items/<item>/relabel``     an admin's relabel (:mod:`.relabel`), then
  back to the page it came from.
* ``GET  projects/<pk>/export/dataset.<fmt>``      the dataset export (:mod:`.dataset_export`),
  csv, jsonl or parquet, with its filters as query keys; project admins.

A bad filter, a page past the end, a class that is not one and an item of another project get
400, 404, 400 and 404 with a plain message, a relabel of an item whose content the retention
sweep dropped 409 (docs/operations.md, "Retention"); nothing changes then. Annotators (and reviewers) see
the model's guesses only when the project shows them, and every item as
:func:`.member_view.as_member_sees` shows it: the items the model decided alone (the honeypot
pool, audits) and the items waiting for a person are one status and one provenance, so neither a
row nor a filter tells a honeypot from a queued item; a disputed item shows as disputed, with
who said what to the admins only.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from annotator.labelling.annotation.relabel import relabel
from annotator.labelling.models import Item, Project
from annotator.labelling.projects.access import is_project_admin, project_for, sees_items, sees_predictions
from annotator.labelling.reporting import dataset_export
from annotator.labelling.reporting.item_browser import (
    BANDS,
    DISAGREEMENTS,
    SCAN_WINDOW,
    TRIGRAM,
    PastTheEndError,
    browse,
)
from annotator.labelling.teams import member_view
from annotator.labelling.teams.consensus import ContentDroppedError
from annotator.labelling.worker import send

from .request import AppRequest

#: filters that read the model's guesses (refused to an annotator who may not see them; so is
#: ``disagreement=model``)
PREDICTION_FILTERS = ("predicted", "confidence")


def _content(project: Project, row: dict[str, Any]) -> str:
    """A short text of the item for the table (text or URL, file name, the first vector pairs)."""
    if project.item_kind == Project.Kind.IMAGE:
        return str(row["filename"])
    if project.item_kind == Project.Kind.VECTORS:
        pairs = row["vector_pairs"] or []
        return " ".join(f"{j}:{v}" for j, v in pairs[:6]) + (" ..." if len(pairs) > 6 else "")
    text = str(row["text"])
    return text if len(text) <= 160 else text[:157] + "..."


@login_required
@require_GET
def item_browser(request: AppRequest, pk: int) -> HttpResponse:
    """The item browser page (module docstring)."""
    project = project_for(request.user, pk)
    if not sees_items(request.user, project):
        raise PermissionDenied("the item browser is for the project's admins")
    admin = is_project_admin(request.user, project)
    predictions = sees_predictions(request.user, project)
    guessing = [k for k in PREDICTION_FILTERS if request.GET.get(k)]
    if request.GET.get("disagreement") == "model":
        guessing.append("disagreement")
    if guessing and not predictions:
        return HttpResponse("this project does not show the model's guesses to annotators: no filter "
                            f"by {guessing[0]}", status=400, content_type="text/plain")
    try:
        page = browse(project, request.GET.dict(), member=not admin)
    except PastTheEndError as exc:
        return HttpResponse(str(exc), status=404, content_type="text/plain")
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    rows = [dict(r if admin else member_view.as_member_sees(r, predictions), content=_content(project, r))
            for r in page.rows]
    next_query = request.GET.copy()
    if page.next_after is not None:
        next_query["after"] = str(page.next_after)
    return render(request, "labelling/items.html", {
        "project": project, "rows": rows, "filters": page.filters, "is_admin": admin,
        "predictions": predictions, "bands": list(BANDS),
        "statuses": Item.Status.values if admin else member_view.shown(member_view.STATUSES),
        "provenances": dataset_export.PROVENANCES if admin else member_view.shown(member_view.PROVENANCES),
        "disagreements": DISAGREEMENTS, "first_page": "after" not in request.GET,
        "next_url": (f"{request.path}?{next_query.urlencode()}" if page.next_after is not None else None),
        "here": request.get_full_path(), "export_formats": dataset_export.FORMATS,
        "searched_to": page.searched_to, "scan_window": SCAN_WINDOW, "trigram": TRIGRAM})


@login_required
@require_POST
def item_relabel(request: AppRequest, pk: int, item_pk: int) -> HttpResponse:
    """An admin's relabel of the item to the posted ``value``; back to the posted ``back`` page."""
    project = project_for(request.user, pk, admin=True)
    try:
        relabel(project, item_pk, request.POST.get("value"), request.user)
    except Item.DoesNotExist:
        raise Http404("no such item in this project") from None
    except ContentDroppedError as exc:  # the item is there, but its content is not (409)
        return HttpResponse(str(exc), status=409, content_type="text/plain")
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    send.labels_changed(project.pk)
    back = request.POST.get("back", "")
    browser = reverse("items", args=[project.pk])
    if back.startswith(browser) and url_has_allowed_host_and_scheme(back, allowed_hosts=None):
        return redirect(back)
    return redirect(browser)


@login_required
@require_GET
def export_dataset(request: AppRequest, pk: int, fmt: str) -> HttpResponse | StreamingHttpResponse:
    """The dataset export in ``fmt`` with the query's filters (:func:`.dataset_export.parse_filters`)."""
    project = project_for(request.user, pk, admin=True)
    return dataset_response(project, fmt, request.GET.dict())


def dataset_response(project: Project, fmt: str,
                     query: dict[str, str]) -> HttpResponse | StreamingHttpResponse:
    """The streamed export as a download, or 400 with the reason for a bad filter or format."""
    try:
        filters = dataset_export.parse_filters(project, query)
        body = dataset_export.dataset_stream(project, fmt, filters)
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    response = StreamingHttpResponse(body, content_type=dataset_export.CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="dataset-{project.pk}.{fmt}"'
    return response
