"""Run the test OpenID provider: ``python -m tests.support.oidc_provider.serve PORT REDIRECT_URI``
with ``OP_DB`` and ``OP_RSA_KEY`` set. Migrates its database, creates the user ``alice``
(password ``alice-password``, ``alice@example.org``) and the confidential client ``annotator``
(secret ``annotator-secret``, RS256, no consent page) for ``REDIRECT_URI``, then serves on
127.0.0.1:PORT until killed."""

import os
import sys

USER, PASSWORD, EMAIL = "alice", "alice-password", "alice@example.org"
CLIENT_ID, CLIENT_SECRET = "annotator", "annotator-secret"


def main(port: str, redirect_uri: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.support.oidc_provider.settings"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    get_user_model().objects.create_user(USER, email=EMAIL, password=PASSWORD, first_name="Alice")
    Application.objects.create(
        name="annotator", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect_uri, algorithm=Application.RS256_ALGORITHM, skip_authorization=True)
    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, use_threading=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
