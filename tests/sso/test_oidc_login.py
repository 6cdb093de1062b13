"""Single sign-on against a real OpenID provider: django-oauth-toolkit with OIDC on, run by the
test as its own process on 127.0.0.1 (its own SQLite file, an RSA key made here), and Chromium
following the real redirects: the login page's button, the provider's login form, the code
exchange (PKCE), the ID token checked against the provider's JWKS, and the user created without
rights. Without the settings there is no button, the SSO routes answer 404, and the password
login works as before."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.test import Client

from annotator.labelling.models import Membership, SsoIdentity
from tests.support.browser import screenshot
from tests.support.oidc_provider.serve import CLIENT_ID, CLIENT_SECRET, EMAIL, PASSWORD, USER

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def provider(live_server, tmp_path: Path) -> Iterator[str]:
    """The provider's base URL, its client registered for this live server's callback."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(OP_DB=str(tmp_path / "provider.sqlite3"), OP_RSA_KEY=pem, PYTHONPATH=str(ROOT))
    log = (tmp_path / "provider.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.oidc_provider.serve", str(port),
                             f"{live_server.url}/accounts/sso/callback"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{base}/o/.well-known/openid-configuration", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the provider did not start: "
                                     + (tmp_path / "provider.log").read_text()[-3000:])
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture
def sso_settings(settings, provider: str) -> str:
    """The app configured for the provider, as the OIDC_* environment variables would."""
    discovery = requests.get(f"{provider}/o/.well-known/openid-configuration", timeout=5).json()
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = discovery["authorization_endpoint"]
    settings.OIDC_OP_TOKEN_ENDPOINT = discovery["token_endpoint"]
    settings.OIDC_OP_USER_ENDPOINT = discovery["userinfo_endpoint"]
    settings.OIDC_OP_JWKS_ENDPOINT = discovery["jwks_uri"]
    settings.OIDC_PROVIDER_NAME = "Test provider"
    return provider


def _login_through_the_provider(page, live_server) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("link", name="Sign in with Test provider").click()
    page.wait_for_selector("#op-username")
    page.fill("#op-username", USER)
    page.fill("#op-password", PASSWORD)
    page.click("#op-login")
    page.wait_for_url(f"{live_server.url}/", timeout=20_000)


@pytest.mark.django_db(transaction=True)
def test_login_through_a_real_provider_creates_a_user_without_rights(sso_settings, live_server,
                                                                     chromium_page):
    page = chromium_page
    password_user = get_user_model().objects.create_user("bob", password="bob-password-1")
    page.goto(f"{live_server.url}/accounts/login/")
    screenshot(page, "sso-login-page")
    _login_through_the_provider(page, live_server)
    screenshot(page, "sso-logged-in")
    assert USER in page.content()  # the header names the logged-in user
    user = get_user_model().objects.get(username=USER)
    assert (user.email, user.is_staff, user.is_superuser, user.has_usable_password()) == (
        EMAIL, False, False, False)
    assert not Membership.objects.filter(user=user).exists()
    identity = SsoIdentity.objects.get(user=user)
    assert identity.issuer.startswith(sso_settings) and identity.subject
    # a second login finds the same user (by subject), creates none
    page.context.clear_cookies()
    _login_through_the_provider(page, live_server)
    assert get_user_model().objects.filter(sso_identity__isnull=False).count() == 1
    # the password login still works beside it
    client = Client()
    response = client.post("/accounts/login/", {"username": "bob", "password": "bob-password-1"})
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(password_user.pk)


@pytest.mark.django_db
def test_without_settings_no_button_and_no_routes():
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with" not in page
    assert Client().get("/accounts/sso/start").status_code == 404
    assert Client().get("/accounts/sso/callback?code=x&state=y").status_code == 404
    get_user_model().objects.create_user("bob", password="bob-password-1")
    client = Client()
    response = client.post("/accounts/login/", {"username": "bob", "password": "bob-password-1"})
    assert response.status_code == 302


@pytest.mark.django_db
def test_a_failed_sso_login_says_so(settings):
    settings.OIDC_RP_CLIENT_ID = "x"
    settings.OIDC_OP_JWKS_ENDPOINT = "http://127.0.0.1:9/jwks"
    settings.OIDC_PROVIDER_NAME = "Acme"
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with Acme" in page
    response = Client().get("/accounts/sso/callback?code=x&state=y")  # no state in this session
    assert response.status_code == 302 and response.url == "/accounts/login/?sso=failed"
    assert "Single sign-on did not log you in" in Client().get(response.url).content.decode()
