"""Refuse a request body from the headers, before reading a byte of it (docs/operations.md,
"Request bodies"): its declared size, who sends it and where.

Runs after the session and authentication middleware (they read cookies only) and before
anything reads the body: Django's CSRF check reads ``request.POST`` of every form post before the
view, and Django bounds only non-file data (``DATA_UPLOAD_MAX_MEMORY_SIZE`` = ``MAX_BODY_BYTES``);
without this an upload would be streamed to a temporary file in full, by anyone, before the
view's role check could refuse it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from annotator.labelling.projects.access import project_for

#: room for the multipart envelope and the other form fields around an upload at the limit
ENVELOPE_BYTES = 1024 * 1024
#: the largest body a client without a session reads into the server (a login form is a few
#: hundred bytes; the API's token callers are exempt: their views check the token first)
ANONYMOUS_BODY_BYTES = 256 * 1024
#: the one route whose body may exceed MAX_BODY_BYTES: a project admin's upload
UPLOAD_ROUTE = "upload"


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain")


class RequestSizeLimitMiddleware:
    """Answer from the headers alone, in this order:

    * 411 for a body sent with ``Transfer-Encoding`` (chunked): bodies must declare their
      ``Content-Length`` (Django would read a chunked body as empty);
    * 400 for a bad ``Content-Length``;
    * a ``POST`` to the upload route: the role check of the view, on the session cookie
      (anonymous: the login redirect; not the project's admin: 403; not a member: 404), then
      413 above ``MAX_UPLOAD_BYTES`` plus the envelope;
    * 413 for any other body above ``MAX_BODY_BYTES``;
    * 413 for a body above :data:`ANONYMOUS_BODY_BYTES` from a client without a session (an
      API call with ``Authorization: Token`` excepted: the API checks the token before it
      reads the body).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refused = self.refusal(request)
        return refused if refused is not None else self.get_response(request)

    def refusal(self, request: HttpRequest) -> HttpResponse | None:
        """The answer refusing ``request``'s body, or None when it may be read."""
        encoding = request.META.get("HTTP_TRANSFER_ENCODING", "").strip().lower()
        if encoding and encoding != "identity":
            return _text(f"Transfer-Encoding {encoding[:40]!r} is not accepted: send the body with a "
                         "Content-Length", 411)
        declared = request.META.get("CONTENT_LENGTH") or "0"
        try:
            size = int(declared)
        except ValueError:
            return _text(f"bad Content-Length {declared[:40]!r}", 400)
        if size < 0:
            return _text(f"bad Content-Length {declared[:40]!r}", 400)
        if request.method == "POST" and self._route(request) == UPLOAD_ROUTE:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            try:  # answered here: the error pages' views check CSRF, which reads the body
                project_for(request.user, int(resolve(request.path_info).kwargs["pk"]), admin=True)
            except PermissionDenied:
                return _text("only the project's admins may upload", 403)
            except Http404:
                return _text("no such project", 404)
            limit = settings.MAX_UPLOAD_BYTES + ENVELOPE_BYTES
            if size > limit:
                return _text(f"request body of {size} bytes refused: uploads are limited to "
                             f"{settings.MAX_UPLOAD_BYTES} bytes", 413)
            return None
        if size > settings.MAX_BODY_BYTES:
            return _text(f"request body of {size} bytes refused: request bodies are limited to "
                         f"{settings.MAX_BODY_BYTES} bytes (uploads: on a project's upload page)", 413)
        token_call = (request.path_info.startswith("/api/")
                      and request.headers.get("Authorization", "").startswith("Token "))
        if size > ANONYMOUS_BODY_BYTES and not request.user.is_authenticated and not token_call:
            return _text(f"request body of {size} bytes refused: without a session, bodies are "
                         f"limited to {ANONYMOUS_BODY_BYTES} bytes", 413)
        return None

    @staticmethod
    def _route(request: HttpRequest) -> str | None:
        try:
            return resolve(request.path_info).url_name
        except Resolver404:
            return None
