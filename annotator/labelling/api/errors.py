"""Every answer under ``/api/`` that is an error is JSON ``{"error": message}``.

:class:`ApiErrorMiddleware` turns the refusals views raise (``Http404``, ``PermissionDenied``,
``BadRequest``) into JSON with their message, and rewrites any other non-JSON error answer
under the prefix (an unknown URL's 404, a 405, the 500 page of an uncaught exception) into JSON
with the status's reason (a plain-text refusal, such as the body limits' 411 and 413, with its
own text). A 500 is still logged with its
traceback by Django (``django.request``) before it is rewritten.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/"
#: a plain-text refusal (the size limits') keeps its message, cut to this many characters
MESSAGE_CHARS = 500
#: exception -> status, for the refusals answered with the exception's own message
REFUSALS: tuple[tuple[type[Exception], int], ...] = (
    (Http404, 404), (PermissionDenied, 403), (BadRequest, 400), (SuspiciousOperation, 400))


class TooManyWrongTokensError(Exception):
    """An address sent ``AXES_FAILURE_LIMIT`` wrong API tokens within ``AXES_COOLOFF_TIME``
    (the login's limits, django-axes): its further wrong tokens are answered 429 until the
    cool-off ends (a right token is never refused, ``views._authorized_project``). Counted in the
    cache, per process with the default cache (docs/operations.md, "Request bodies"). The answer
    says ``Retry-After``: the cool-off in seconds."""


def error_response(message: str, status: int = 400) -> JsonResponse:
    """The API's error answer: ``{"error": message}`` with ``status``."""
    return JsonResponse({"error": message}, status=status)


class ApiErrorMiddleware:
    """JSON errors under :data:`API_PREFIX` (module docstring); other paths are untouched."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (request.path.startswith(API_PREFIX) and response.status_code >= 400
                and not response.get("Content-Type", "").startswith("application/json")):
            message = f"{response.status_code} {response.reason_phrase}".lower()
            if response.get("Content-Type", "").startswith("text/plain") and not response.streaming:
                message = response.content.decode("utf-8", "replace")[:MESSAGE_CHARS] or message
            allow = response.get("Allow")
            json_response = error_response(f"{message} (allowed: {allow})" if allow else message,
                                           response.status_code)
            if allow:
                json_response["Allow"] = allow
            return json_response
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, TooManyWrongTokensError):
            response = error_response("too many wrong tokens from this address: wait and try again", 429)
            # the cool-off's full length: an upper bound of the wait (the window began at the first miss)
            response["Retry-After"] = str(max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds())))
            return response
        for kind, status in REFUSALS:
            if isinstance(exception, kind):
                return error_response(str(exception) or HttpResponse(status=status).reason_phrase.lower(),
                                      status)
        return None  # anything else: Django logs it and answers 500, rewritten by __call__
