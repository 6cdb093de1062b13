"""Single sign-on: OpenID Connect login through mozilla-django-oidc, off unless configured.

SSO is on when ``OIDC_RP_CLIENT_ID`` is set (the other ``OIDC_*`` settings, from the
environment, say where the provider is: docs/operations.md, "Single sign-on"). Then the login
page shows a "Sign in with <OIDC_PROVIDER_NAME>" button leading to :func:`start`, the provider
sends the browser back to :func:`callback`, and :class:`NoRightsOIDCBackend` finds or creates
the user. Off, both routes answer 404 and the backend answers nothing, so the password login is
the only one; it keeps working either way.

Users are matched by the provider's ``(iss, sub)`` pair kept in
:class:`~annotator.labelling.models.SsoIdentity`, never by e-mail (a provider may let anyone
claim any address), and are created on their first login without rights: not staff, not
superuser, no project membership, no usable password. An admin then adds them to projects as
for any user.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.views import LoginView
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from annotator.labelling.models import SsoIdentity

#: characters Django's user names allow; anything else in a claim becomes "-"
USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")
USERNAME_MAX = 150


def enabled() -> bool:
    """True when single sign-on is configured (``OIDC_RP_CLIENT_ID`` set)."""
    return bool(getattr(settings, "OIDC_RP_CLIENT_ID", ""))


def issuer(payload: dict[str, Any]) -> str:
    """The provider's issuer: the ID token's ``iss``, else ``OIDC_OP_ISSUER``, else the token
    endpoint's origin."""
    origin = urlsplit(settings.OIDC_OP_TOKEN_ENDPOINT)
    return str(payload.get("iss") or settings.OIDC_OP_ISSUER or f"{origin.scheme}://{origin.netloc}")


def free_username(claims: dict[str, Any], subject: str) -> str:
    """A user name not taken yet, from ``preferred_username``, else the e-mail's local part,
    else the subject (made safe and short, numbered on a clash)."""
    wanted = (claims.get("preferred_username") or str(claims.get("email") or "").partition("@")[0]
              or f"sso-{subject}")
    base = USERNAME_UNSAFE.sub("-", str(wanted))[:USERNAME_MAX - 8] or "sso-user"
    users = get_user_model().objects
    name, n = base, 1
    while users.filter(username__iexact=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


class NoRightsOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, inert while SSO is off, matching users by subject and
    creating them without rights (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.UserModel = get_user_model()
        self.active = enabled()
        if self.active:  # the parent reads (and checks) the provider's settings
            super().__init__(*args, **kwargs)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        """The provider's user for a callback request (its ``code`` and ``state``); None otherwise,
        and always None while SSO is off (a password login never reaches the provider)."""
        if not self.active or "password" in kwargs:
            return None
        return super().authenticate(request, **kwargs)

    def get_user(self, user_id: int) -> Any:
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        """The user of the ID token's ``(iss, sub)``, created without rights on a first login.
        The userinfo's ``sub`` must be the ID token's (OpenID Connect Core 5.3.2)."""
        claims = self.get_userinfo(access_token, id_token, payload)
        subject = str(payload.get("sub") or "")
        if not subject or str(claims.get("sub", subject)) != subject:
            raise SuspiciousOperation("the provider's userinfo is not about the ID token's subject")
        iss = issuer(payload)
        found = SsoIdentity.objects.filter(issuer=iss, subject=subject).select_related("user").first()
        if found is not None:
            return found.user if found.user.is_active else None
        try:
            with transaction.atomic():
                user = self.UserModel.objects.create_user(
                    free_username(claims, subject), email=str(claims.get("email") or ""),
                    first_name=str(claims.get("given_name") or "")[:150],
                    last_name=str(claims.get("family_name") or "")[:150])
                user.set_unusable_password()
                user.is_staff = user.is_superuser = False
                user.save()
                SsoIdentity.objects.create(user=user, issuer=iss, subject=subject)
        except IntegrityError:  # the same subject's first login twice at once: the other one won
            return SsoIdentity.objects.get(issuer=iss, subject=subject).user
        return user


def start(request: HttpRequest) -> HttpResponse:
    """``GET /accounts/sso/start``: to the provider's login (404 while SSO is off)."""
    if not enabled():
        raise Http404("single sign-on is not configured")
    return OIDCAuthenticationRequestView.as_view()(request)


def callback(request: HttpRequest) -> HttpResponse:
    """``GET /accounts/sso/callback``: the provider's answer; logged in, or back to the login
    page with ``?sso=failed`` (404 while SSO is off)."""
    if not enabled():
        raise Http404("single sign-on is not configured")
    return OIDCAuthenticationCallbackView.as_view()(request)


class LoginPage(LoginView):
    """Django's login page, with the "Sign in with ..." button when SSO is on (``sso_name``: the
    provider's name, None while off) and a message after a failed SSO login (``sso_failed``)."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs),
                "sso_name": settings.OIDC_PROVIDER_NAME if enabled() else None,
                "sso_failed": self.request.GET.get("sso") == "failed"}
