"""Login throttling glue: the user name django-axes records for a login attempt."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

#: django-axes' AccessAttempt.username column
AXES_USERNAME_LENGTH = 255


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The attempted user name, cut to the column django-axes stores it in.

    django-axes stores the name as typed: a 10,000-character name failed its insert (a 500 on
    PostgreSQL). A name that long matches no user, so the cut changes no lockout that matters.
    """
    source = credentials if credentials else getattr(request, "data", request.POST)
    value = source.get("username")
    return value.replace("\x00", "")[:AXES_USERNAME_LENGTH] if isinstance(value, str) else value
