"""URL routes: Django auth (login/logout, password change), the admin, and the labelling app.

The password-reset routes exist only when mail is configured (``EMAIL_HOST``): without mail a
reset could never reach its user, and the form would only tell which addresses are known.
"""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

#: the routes of ``django.contrib.auth.urls`` that work without mail
ACCOUNT_ROUTES = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
]

urlpatterns = [
    path("accounts/", include("django.contrib.auth.urls" if settings.EMAIL_HOST else ACCOUNT_ROUTES)),
    path("admin/", admin.site.urls),
    path("", include("annotator.labelling.urls")),
]
