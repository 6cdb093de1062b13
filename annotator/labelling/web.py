"""Helpers shared by the view modules (view modules never import each other)."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AppRequest(HttpRequest):
    """The request a view of the app receives, for the type checker: its user is logged in
    (``login_required``) and django-htmx's middleware set ``htmx``."""

    user: User
    htmx: HtmxDetails


def image_type(filename: str) -> str:
    """The MIME type of an image file name (application/octet-stream when unknown)."""
    suffix = Path(filename).suffix.lower().lstrip(".")
    return {"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif",
            "bmp": "image/bmp", "webp": "image/webp", "tif": "image/tiff", "tiff": "image/tiff",
            }.get(suffix, "application/octet-stream")
