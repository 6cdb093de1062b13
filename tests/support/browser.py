"""Browser tests: Playwright driving Debian's Chromium (/usr/bin/chromium, never a downloaded
build) against pytest-django's live server, with a real Celery worker process.

``chromium_page`` fails (not skips) when Chromium or Playwright is missing and
``REQUIRE_SERVICES=1`` (CI), and skips otherwise. Screenshots go to ``test-output/``
(git-ignored).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .resources import services_required

CHROMIUM = "/usr/bin/chromium"
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"


def _missing() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} not found (Debian package chromium; `make test` installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (requirements-dev.txt)"
    return None


@pytest.fixture
def chromium_page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A fresh Chromium page at 1280x800 (closed afterwards).

    Playwright's sync API keeps an asyncio loop in this thread, so Django would refuse the
    test's own ORM calls; they are plain synchronous calls, hence DJANGO_ALLOW_ASYNC_UNSAFE.
    """
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    problem = _missing()
    if problem:
        if services_required():
            pytest.fail(f"browser tests required (REQUIRE_SERVICES=1): {problem}")
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page PNG under test-output/ and return its path."""
    OUTPUT.mkdir(exist_ok=True)
    path = OUTPUT / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def log_in(page: Any, base_url: str, username: str, password: str) -> None:
    """Log in through the login form (CSRF and all)."""
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(f"{base_url}/")
