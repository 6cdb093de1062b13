"""URL routes: Django auth (login/logout, password change), single sign-on (OpenID Connect,
:mod:`annotator.sso`: its routes answer 404 while it is off), the admin, and the labelling app.

The password-reset routes exist only when mail is configured (``EMAIL_HOST``): without mail a
reset could never reach its user, and the form would only tell which addresses are known.
"""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import urls as auth_urls
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotator import sso

#: the routes of ``django.contrib.auth.urls`` that work without mail (the login page with the SSO button)
ACCOUNT_ROUTES = [
    path("login/", sso.LoginPage.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
]

#: the password-reset routes of ``django.contrib.auth.urls`` (with mail only)
RESET_ROUTES = [p for p in auth_urls.urlpatterns if str(p.pattern).startswith("password_reset")
                or str(p.pattern).startswith("reset/")]
SSO_ROUTES = [
    path("sso/start", sso.start, name="sso-start"),
    path("sso/callback", sso.callback, name="sso-callback"),
]

urlpatterns = [
    path("accounts/", include(ACCOUNT_ROUTES + SSO_ROUTES + (RESET_ROUTES if settings.EMAIL_HOST else []))),
    path("admin/", admin.site.urls),
    path("", include("annotator.labelling.urls")),
]
