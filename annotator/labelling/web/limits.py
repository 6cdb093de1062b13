"""Refuse oversized request bodies from their declared size, before reading a byte of them."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

#: room for the multipart envelope and the other form fields around an upload at the limit
ENVELOPE_BYTES = 1024 * 1024


class RequestSizeLimitMiddleware:
    """413 for a ``Content-Length`` above ``MAX_UPLOAD_BYTES`` (plus the envelope) for a
    multipart form, above ``MAX_BODY_BYTES`` for any other body, or a bad one.

    Django itself bounds only non-file data (``DATA_UPLOAD_MAX_MEMORY_SIZE`` =
    ``MAX_BODY_BYTES``); without this an upload would be streamed to a temporary file in full
    before the view could refuse it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        declared = request.META.get("CONTENT_LENGTH") or "0"
        try:
            size = int(declared)
        except ValueError:
            return HttpResponse(f"bad Content-Length {declared[:40]!r}", status=400,
                                content_type="text/plain")
        if request.content_type == "multipart/form-data":  # may carry an upload file
            limit = settings.MAX_UPLOAD_BYTES + ENVELOPE_BYTES
            what = f"uploads are limited to {settings.MAX_UPLOAD_BYTES}"
        else:
            limit, what = settings.MAX_BODY_BYTES, f"request bodies are limited to {settings.MAX_BODY_BYTES}"
        if size > limit:
            return HttpResponse(f"request body of {size} bytes refused: {what} bytes", status=413,
                                content_type="text/plain")
        return self.get_response(request)
