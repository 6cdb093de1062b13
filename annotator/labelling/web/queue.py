"""The annotator's queue: one leased item at a time, labelled with a key press, swapped by htmx.

Pages and actions (every one needs a member of the project):

* ``GET  projects/<pk>/``            the queue page (leases the next item).
* ``POST projects/<pk>/items/<item>/label``  store ``value``; answers the next item's panel.
* ``POST projects/<pk>/items/<item>/skip``   pass on the item (back to the queue for others).
* ``POST projects/<pk>/undo``        retract my last label and show that item again.
* ``POST projects/<pk>/labels/<label>/change``  change one of my last labels to ``value``
  (listed beside the item); answers the current item's panel.
* ``GET  projects/<pk>/next``        the "all caught up" panel polls this: the next item's
  panel when one waits, else 204 (htmx keeps the page as it is).
* ``POST projects/<pk>/desk``        the instant queue (static/labelling/queue.js): stores the
  labels typed since the page's last request, in order, and answers JSON with each one's
  outcome and the panels of the items the page holds (:mod:`.look_ahead`).

htmx requests (``HX-Request``) get the ``_queue_item.html`` panel (and, out of band, the list of
my last labels beside it); plain form posts (no
JavaScript) are redirected to the queue page, so the page works without htmx too.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotator.labelling.annotation.actions import (
    RECENT_LABELS,
    DuplicateLabelError,
    NotChangeableError,
    NotOfferedError,
    change_label,
    lease_next,
    needs_pipeline,
    recent_labels,
    skip_item,
    submit_label,
    undo_last_label,
    undoable,
    undoable_label,
)
from annotator.labelling.annotation.look_ahead import HELD_ITEMS, MAX_BURST, lease_ahead, submit_burst
from annotator.labelling.engine.queue_counts import why_idle
from annotator.labelling.models import Item, Label, Project
from annotator.labelling.projects.access import is_project_admin, may_review, project_for
from annotator.labelling.reporting.dashboard import waiting_for
from annotator.labelling.worker import send
from learners.uploads.input_rules import parse_json, whole_number

from .request import AppRequest, class_buttons, image_src, item_display, polled_panel, refused_panel


def progress(project: Project, user: Any) -> dict[str, int]:
    """The progress line: my labels today and in all, and the items waiting (:func:`.dashboard.waiting_for`:
    one fewer while the user holds a honeypot, as if it were the waiting item it stands in for).
    My labels are my standing opinions, what the dashboard counts as my ``labels``
    (:func:`.dashboard.annotators`): a class I decided in the review queue that no annotator
    gave (an adjudication) is a review decision, not a label of mine."""
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    mine = Label.objects.filter(project=project, annotator=user, undone_at__isnull=True,
                                kind=Label.Kind.OPINION).aggregate(
        total=Count("id"), today=Count("id", filter=Q(created__gte=today)))
    return {"today": mine["today"], "total": mine["total"], "waiting": waiting_for(project, user)}


def _lease(project: Project, user: Any) -> Item | None:
    """:func:`.actions.lease_next`, then a top-up of the queue if it runs low."""
    item = lease_next(project, user)
    send.top_up_if_low(project)
    return item


def recent_rows(project: Project, user: Any) -> list[dict[str, Any]]:
    """My last labels (:func:`.actions.recent_labels`) as the list beside the item shows them:
    the label, its item's number, ``thumb`` (an image item's ``src``, else None) and ``about``
    (the image file name, the whole text or URL, or the vector size; the page shows the start
    of a long text and the rest on demand). Image data: one query for the list."""
    labels = recent_labels(project, user)
    data = dict(Item.objects.filter(pk__in=[lab.item_id for lab in labels if lab.item.filename])
                .values_list("pk", "data"))
    rows = []
    for lab in labels:
        item, thumb = lab.item, None
        if item.filename:
            about = item.filename
            if data.get(item.pk) is not None:
                item.data = data[item.pk]
                thumb = image_src(project, item)
        elif item.vector_pairs is not None:
            about = f"{len(item.vector_pairs)} non-zero features"
        else:
            about = item.text
        rows.append({"label": lab, "seq": item.seq, "about": about, "thumb": thumb})
    return rows


def _panel(request: AppRequest, project: Project, item: Item | None, error: str = "",
           status: int = 200, can_undo: bool | None = None, saved: Any = None,
           notice: str = "") -> HttpResponse:
    """Render the item panel (or the whole page for a plain GET of the queue).

    ``can_undo``: whether the user has a label to undo, when the caller knows (None: look it up).
    ``saved``: the label value just stored (the panel says "saved"), None after anything else.
    ``notice``: a confirmation to show (a label changed).
    With no item the panel says why (:func:`.queue_counts.why_idle`).
    """
    if can_undo is None:
        can_undo = undoable_label(project, request.user) is not None
    context = {
        "project": project, "item": item, "buttons": class_buttons(project), "error": error,
        "progress": progress(project, request.user),
        "can_undo": can_undo,
        **item_display(project, item),
        "idle": why_idle(project) if item is None else None,
        "saved": saved,
        "notice": notice,
        "recent": recent_rows(project, request.user), "recent_max": RECENT_LABELS,
        "recent_oob": bool(request.htmx),  # the list beside the panel is swapped out of band
        "is_admin": not request.htmx and is_project_admin(request.user, project),  # page links only
        "is_reviewer": not request.htmx and may_review(request.user, project),
        "can_upload": item is None and is_project_admin(request.user, project),  # the empty state's link
    }
    template = "labelling/_queue_item.html" if request.htmx else "labelling/queue.html"
    return render(request, template, context, status=status)


def _next(request: AppRequest, project: Project, error: str = "", status: int = 200) -> HttpResponse:
    if not request.htmx:
        return redirect("queue", pk=project.pk)
    return _panel(request, project, _lease(project, request.user), error, status)


@never_cache
@login_required
@require_GET
def queue(request: AppRequest, pk: int) -> HttpResponse:
    """The queue page: lease the next item to the user and show it. Never cached (no-store):
    back/forward loads it again instead of showing an item already labelled."""
    project = project_for(request.user, pk)
    return _panel(request, project, _lease(project, request.user))


@login_required
@require_GET
def next_item(request: AppRequest, pk: int) -> HttpResponse:
    """Polled while nothing waits: the next item's panel, or 204 when there is still none."""
    project = project_for(request.user, pk)
    item = _lease(project, request.user)
    return polled_panel(request, item, lambda: _panel(request, project, item))


@login_required
@require_POST
def label(request: AppRequest, pk: int, item_pk: int) -> HttpResponse:
    """Store the posted ``value`` for the item, then answer the next item.

    The item must be offered to this user (:func:`.actions.offered`: their lease, live or
    expired, or one whose lease passed from them while it still takes their label; a late label
    on an item labelled since is kept as an extra opinion). Refused: any other item, with one
    answer whatever it is (409, :data:`.actions.NOT_OFFERED`), a double submission (409), a
    value that is not a class (400). For htmx the
    label and the lease of the next item are one transaction (one commit per key press).
    """
    project = project_for(request.user, pk)
    try:
        with transaction.atomic():
            saved = submit_label(project, item_pk, request.user, request.POST.get("value"))
            item = lease_next(project, request.user) if request.htmx else None
            if needs_pipeline(saved):  # apply_labels tops the queue up too: no look-ahead check
                send.labels_changed(project.pk)
            elif request.htmx:
                send.top_up_if_low(project)
    except Item.DoesNotExist:
        raise Http404("no such item in this project") from None
    except (DuplicateLabelError, NotOfferedError) as exc:
        return _refuse(request, project, str(exc), 409)
    except ValueError as exc:
        return _refuse(request, project, str(exc), 400)
    if not request.htmx:
        return redirect("queue", pk=project.pk)
    # the label just stored is the user's latest
    return _panel(request, project, item, can_undo=undoable(saved), saved=saved.value)


@login_required
@require_POST
def skip(request: AppRequest, pk: int, item_pk: int) -> HttpResponse:
    """Pass on the item: others may label it; this user is not offered it again."""
    project = project_for(request.user, pk)
    item = get_object_or_404(Item, pk=item_pk, project=project)
    try:
        skip_item(item, request.user)
    except ValueError as exc:
        return _refuse(request, project, str(exc), 409)
    return _next(request, project)


@login_required
@require_POST
def undo(request: AppRequest, pk: int) -> HttpResponse:
    """Retract my last label and show its item again (see :func:`.actions.undo_last_label`)."""
    project = project_for(request.user, pk)
    try:
        item = undo_last_label(project, request.user)
        send.labels_changed(project.pk)
    except ValueError as exc:
        return _refuse(request, project, str(exc), 409)
    if not request.htmx:
        return redirect("queue", pk=project.pk)
    return _panel(request, project, item)


@login_required
@require_POST
def change(request: AppRequest, pk: int, label_pk: int) -> HttpResponse:
    """Change one of my labels to the posted ``value`` (see :func:`.actions.change_label`:
    the learner is corrected as an undo corrects it), then show the current item again.
    Refused: a label that is not mine or not in the project (404), one changed or undone
    already or older than my last :data:`.actions.RECENT_LABELS` (409), a value that is not a
    class (400). A repeat of a change that happened answers as the change did."""
    project = project_for(request.user, pk)
    try:
        with transaction.atomic():
            new = change_label(project, request.user, label_pk, request.POST.get("value"))
            if new.pk != label_pk and needs_pipeline(new):
                send.labels_changed(project.pk)
    except Label.DoesNotExist:
        raise Http404("no such label of yours in this project") from None
    except NotChangeableError as exc:  # changed or undone already, or older than the last ones
        return _refuse(request, project, str(exc), 409)
    except ValueError as exc:
        return _refuse(request, project, str(exc), 400)
    if not request.htmx:
        return redirect("queue", pk=project.pk)
    seq = Item.objects.filter(pk=new.item_id).values_list("seq", flat=True).first()
    return _panel(request, project, _lease(project, request.user),
                  notice=f"Item {seq} is now labelled “{new.value}”.")


def _burst(raw: str | None) -> list[tuple[int, Any]]:
    """The ``labels`` field of a desk request: a JSON list of ``[item id, value]`` pairs (at most
    :data:`.look_ahead.MAX_BURST`). Raises ValueError with a message for anything else."""
    try:
        pairs = parse_json(raw or "[]", "labels")
    except ValueError as exc:  # not JSON, or nested too deeply
        raise ValueError(f"{exc}; labels must be a JSON list of [item id, value] pairs") from None
    if not isinstance(pairs, list) or len(pairs) > MAX_BURST:
        raise ValueError(f"labels must be a JSON list of at most {MAX_BURST} [item id, value] pairs")
    out = []
    for n, pair in enumerate(pairs, start=1):
        if (not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], int)
                or isinstance(pair[0], bool) or not isinstance(pair[1], (str, int))):
            raise ValueError("each entry of labels must be an [item id, value] pair")
        out.append((whole_number(pair[0], f"labels: the item id of entry {n}"), pair[1]))
    return out


@never_cache
@login_required
@require_POST
def desk(request: AppRequest, pk: int) -> HttpResponse:
    """The instant queue's one request (see static/labelling/queue.js and docs/architecture.md,
    "The instant queue"): store the posted ``labels`` in order (:func:`.look_ahead.submit_burst`),
    lease up to :data:`.look_ahead.HELD_ITEMS` items, and answer JSON::

        {"results": [{"item": id, "value": v, "ok": bool, "status": 200|400|404|409, "error": str}],
         "items": [{"id": id, "seq": n, "html": "<section id=queue-item ...>"}],
         "idle_html": panel when no item is held ("" otherwise), "can_undo": bool,
         "recent_html": the "My last labels" list, "progress": {"today", "total", "waiting"}}

    A malformed ``labels`` field is a 400 with ``{"error": ...}`` and stores nothing."""
    project = project_for(request.user, pk)
    try:
        labels = _burst(request.POST.get("labels"))
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    outcomes = submit_burst(project, request.user, labels)
    stored = [o.label for o in outcomes if o.label is not None]
    if any(needs_pipeline(lab) for lab in stored):  # apply_labels tops the queue up too
        send.labels_changed(project.pk)
    held = lease_ahead(project, request.user, HELD_ITEMS)
    send.top_up_if_low(project)
    can_undo = undoable_label(project, request.user) is not None
    # the held panels carry the undo button: the page shows the next one after a label, when
    # there is one to undo; it takes the button out while there is none ("can_undo")
    base = {"project": project, "buttons": class_buttons(project), "error": "", "notice": "",
            "progress": progress(project, request.user), "can_undo": True, "saved": None,
            "recent_oob": False, "recent": recent_rows(project, request.user), "recent_max": RECENT_LABELS}
    items = [{"id": item.pk, "seq": item.seq,
              "html": render_to_string("labelling/_queue_item.html",
                                       {**base, "item": item, **item_display(project, item)}, request)}
             for item in held]
    idle_html = "" if held else render_to_string(
        "labelling/_queue_item.html",
        {**base, "item": None, **item_display(project, None), "idle": why_idle(project),
         "can_upload": is_project_admin(request.user, project)}, request)
    return JsonResponse({
        "results": [{"item": o.item_id, "value": o.value, "ok": o.label is not None, "status": o.status,
                     "error": o.error} for o in outcomes],
        "items": items, "idle_html": idle_html, "can_undo": can_undo,
        "recent_html": render_to_string("labelling/_recent_labels.html", base, request),
        "progress": base["progress"],
    })


def _refuse(request: AppRequest, project: Project, message: str, status: int) -> HttpResponse:
    """A refused action (:func:`.request.refused_panel`), beside the next leased item for htmx."""
    return refused_panel(request, message, status, lambda error, code: _panel(
        request, project, _lease(project, request.user), error, code))
