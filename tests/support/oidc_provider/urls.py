"""Routes of the test OpenID provider: its login page and django-oauth-toolkit's ``/o/`` routes
(authorize, token, userinfo, JWKS, discovery)."""

from typing import Any

from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider.oauth2_validators import OAuth2Validator


class ClaimsValidator(OAuth2Validator):
    """The claims a real provider gives besides ``sub``: e-mail and user name (by scope)."""

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        user = request.user
        return {"email": user.email, "preferred_username": user.username, "given_name": user.first_name}


urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
