"""The app's 404 page in debug mode too.

With ``DEBUG`` on (``make run``), Django answers a missing page (a project or item that does
not exist, an unknown address) with its technical debug page, which has no way back into the
app. :class:`NotFoundPageMiddleware` answers every HTML 404 outside ``/api/`` with the app's own
``404.html`` (layout and navigation) instead, so the page is the one production shows. The
API's JSON errors (:mod:`.errors`) and plain-text 404s of htmx partials are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotator.labelling.api.errors import API_PREFIX


class NotFoundPageMiddleware:
    """In debug mode, Django's technical 404 page becomes the app's 404 page (module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (settings.DEBUG and response.status_code == 404 and not request.path.startswith(API_PREFIX)
                and response.get("Content-Type", "").startswith("text/html")):
            return render(request, "404.html", {"request_path": request.path}, status=404)
        return response
