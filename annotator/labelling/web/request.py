"""Helpers shared by the view modules (view modules never import each other)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django_htmx.middleware import HtmxDetails

from annotator.labelling.models import Item, Project
from learners.features.url import split_url
from learners.uploads.svmlight import FIRST_INDEX


class AppRequest(HttpRequest):
    """The request a view of the app receives, for the type checker: its user is logged in
    (``login_required``) and django-htmx's middleware set ``htmx``."""

    user: User
    htmx: HtmxDetails


# -- the one-at-a-time leased panel of the queue and the review queue (``#queue-item``, queue.js)
def polled_panel(request: AppRequest, leased: object | None,
                 panel: Callable[[], HttpResponse]) -> HttpResponse:
    """The answer to the idle panel's poll: 204 while nothing was leased (htmx keeps the page as
    it is), else ``panel()`` (a plain GET always gets the panel)."""
    if leased is None and request.htmx:
        return HttpResponse(status=204)
    return panel()


def refused_panel(request: AppRequest, message: str, status: int,
                  panel: Callable[[str, int], HttpResponse]) -> HttpResponse:
    """A refused action on the panel: the plain-text ``message`` with ``status`` for a form post;
    for htmx, ``panel(message, status)``: the current panel carrying the message (base.html
    lets htmx swap 4xx answers)."""
    if not request.htmx:
        return HttpResponse(message, status=status, content_type="text/plain")
    return panel(message, status)


def image_type(filename: str) -> str:
    """The MIME type of an image file name (application/octet-stream when unknown)."""
    suffix = Path(filename).suffix.lower().lstrip(".")
    return {"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif",
            "bmp": "image/bmp", "webp": "image/webp", "tif": "image/tiff", "tiff": "image/tiff",
            }.get(suffix, "application/octet-stream")


#: Shortcut keys of the class buttons, in class order: digits first, then letters other than
#: s (skip), u (undo) and h (into "My last labels", static/labelling/queue.js).
CLASS_KEYS = "1234567890abcdefgijklmnopqrtvwxyz"


#: images up to this size are inlined in the panel (data: URI) to save the browser a request
INLINE_IMAGE_BYTES = 64 * 1024


def item_display(project: Project, item: Item | None) -> dict[str, Any]:
    """What ``_item_content.html`` needs besides the item (the queue's and the review queue's
    panels): ``url`` (the parts the URL featurizer sees, one definition of how a URL splits),
    ``image_src`` and ``vector`` (each None when the item is not of that kind)."""
    return {
        "url": split_url(item.text) if item is not None and project.item_kind == Project.Kind.URL else None,
        "image_src": image_src(project, item) if item is not None and item.data is not None else None,
        "vector": (vector_rows(item.vector_pairs)
                   if item is not None and item.vector_pairs is not None else None),
    }


def image_src(project: Project, item: Item) -> str:
    """The panel's ``src`` for an image item: a data: URI for small images, else the image URL."""
    data = bytes(item.data or b"")
    if len(data) <= INLINE_IMAGE_BYTES:
        kind = image_type(item.filename)
        if kind.startswith("image/"):
            return f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"
    return reverse("item-image", args=[project.pk, item.pk])


def class_buttons(project: Project) -> list[tuple[Any, str]]:
    """``(class value, shortcut key or "")`` for each class of the project, in class order.

    A class written as one key character is its own key (digits 0-9: the key 3 labels the
    digit 3, whatever the class order); the others take the free keys in order (1, 2, ...,
    then letters). Classes beyond the keys have none.
    """
    own = {c: str(c).lower() for c in project.classes if len(str(c)) == 1 and str(c).lower() in CLASS_KEYS}
    if len(set(own.values())) != len(own):
        own = {}
    free = iter(k for k in CLASS_KEYS if k not in own.values())
    return [(c, own[c] if c in own else next(free, "")) for c in project.classes]


def vector_rows(pairs: list[list[Any]]) -> list[tuple[int, Any]]:
    """``(feature number, value)`` of a vector item, numbered as in LIBSVM files (from
    :data:`~learners.uploads.svmlight.FIRST_INDEX`; items store them from 0)."""
    return [(int(j) + FIRST_INDEX, v) for j, v in pairs]
