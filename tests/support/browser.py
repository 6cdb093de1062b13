"""Browser tests: Playwright driving Debian's Chromium (/usr/bin/chromium, never a downloaded
build) against pytest-django's live server, with a real Celery worker process.

``chromium_page`` fails (not skips) when Chromium or Playwright is missing and
``REQUIRE_SERVICES=1`` (CI), and skips otherwise. Screenshots go to ``test-output/``
(git-ignored).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.resources import absent

CHROMIUM = "/usr/bin/chromium"
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
#: axe-core's browser bundle, installed by `make install` from package.json (npm, pinned)
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
#: the axe-core impacts a page must not have
AXE_BLOCKING = ("serious", "critical")


def _missing(axe: bool = False) -> str | None:
    if axe and not AXE.exists():
        return f"{AXE} not found (npm package axe-core; `make install` installs it)"
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} not found (Debian package chromium; `make test` installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (requirements-dev.txt)"
    return None


def require_browser(axe: bool = False) -> None:
    """Chromium and Playwright (and axe-core when ``axe``) are here; else skip, or fail in CI."""
    problem = _missing(axe=axe)
    if problem:
        absent(problem)


#: how Chromium's console reports a Content-Security-Policy violation
CSP_VIOLATION = "Content Security Policy"


@pytest.fixture
def chromium_page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A fresh Chromium page at 1280x800 (closed afterwards), see :func:`_chromium`."""
    yield from _chromium(monkeypatch, bypass_csp=False)


@pytest.fixture
def axe_page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """:func:`chromium_page` whose context lets the test inject axe-core (:func:`axe_violations`):
    Playwright adds a script by content, an inline script that the app's Content-Security-Policy
    refuses, so this context bypasses the policy (the app's pages are checked under it by
    every other browser test)."""
    yield from _chromium(monkeypatch, bypass_csp=True)


def _chromium(monkeypatch: pytest.MonkeyPatch, bypass_csp: bool) -> Iterator[Any]:
    """A fresh Chromium page at 1280x800 (closed afterwards).

    Every console message about a Content-Security-Policy violation is collected in
    ``page.csp_violations``; the test fails at teardown when there is one (the app serves no
    inline script, so a violation means a page that does not work under its own policy).

    Playwright's sync API keeps an asyncio loop in this thread, so Django would refuse the
    test's own ORM calls; they are plain synchronous calls, hence DJANGO_ALLOW_ASYNC_UNSAFE.
    """
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    require_browser(axe=bypass_csp)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True,
                                      bypass_csp=bypass_csp)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.csp_violations = []
        page.on("console", lambda message: page.csp_violations.append(message.text)
                if CSP_VIOLATION in message.text else None)
        try:
            yield page
        finally:
            context.close()
            browser.close()
        assert not page.csp_violations, f"CSP violations: {page.csp_violations}"


#: the two screen sizes every page is tested at: a laptop and a phone, CSS pixels
SIZES = {"laptop": (1280, 800), "phone": (390, 844)}


def at_size(page: Any, size: str) -> int:
    """Give ``page`` the screen ``SIZES[size]``; its width in CSS pixels."""
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    return width


def wait_until(page: Any, expression: str, arg: Any = None, timeout: float = 20.0) -> Any:
    """Poll the JavaScript function ``expression`` (called with ``arg``) until it returns a truthy
    value, which is returned; TimeoutError after ``timeout`` seconds.

    Playwright's own ``wait_for_function`` builds its predicate with ``eval`` inside the page,
    which the app's Content-Security-Policy refuses (no 'unsafe-eval'); ``page.evaluate`` runs
    through the DevTools protocol, which the policy does not govern.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression, arg)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expression[:80]} stayed false for {timeout} s")
        page.wait_for_timeout(50)


def wait_for_labels_sent(page: Any, timeout: float = 20.0) -> None:
    """Wait until the queue page (static/labelling/queue.js) has no label waiting to be sent or
    stored: every key pressed so far is a stored label or a refusal listed on the page."""
    wait_until(page, """() => { const d = document.getElementById('desk');
        return d && d.dataset.pending === '0' && d.dataset.waiting === '0'; }""", timeout=timeout)


def wait_for_htmx_idle(page: Any) -> None:
    """Wait until htmx has no request in flight and has settled its last swap. htmx binds the
    triggers (``hx-get`` on change, ...) of swapped-in content only when it settles, after its
    settle delay: an event fired on a new element before then is lost."""
    wait_until(page, """() => !document.querySelector(
        '.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')""")


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page PNG under test-output/ and return its path."""
    OUTPUT.mkdir(exist_ok=True)
    path = OUTPUT / f"{name}.png"
    # caret="initial": Playwright's default ("hide") injects a style that the page's CSP reports as
    # a violation when htmx swaps the focused field afterwards (the app's own pages inject none)
    page.screenshot(path=str(path), full_page=True, caret="initial")
    return path


def log_in(page: Any, base_url: str, username: str, password: str) -> None:
    """Log in through the login form (CSRF and all)."""
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(f"{base_url}/")


def axe_violations(page: Any, impacts: tuple[str, ...] = AXE_BLOCKING) -> list[str]:
    """Run axe-core (WCAG 2.0/2.1 A and AA rules and its best practices) on the page as it is
    now and describe each violation of one of ``impacts``: rule, impact, help and the first
    offending elements. Needs a page of :func:`axe_page` (the script is injected)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("""() => axe.run(document, {
        runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]},
        resultTypes: ["violations"]})""")
    return [f"{v['id']} ({v['impact']}): {v['help']} -- "
            + "; ".join(" ".join(n["target"]) + " " + n.get("failureSummary", "").replace("\n", " ")
                        for n in v["nodes"][:4])
            for v in result["violations"] if v["impact"] in impacts]


def open_demo_queue(live_server: Any, page: Any, size: str, items: int = 40) -> tuple[Any, int]:
    """A demo project of ``items`` digits with its first items decided, its queue open in ``page``
    at ``size`` for the demo annotator, the first item ready; returns (project, page width)."""
    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.projects.demo import create_demo

    project, _ = create_demo(items)
    update_project(project.pk)  # queue the first items (no worker in these tests)
    width = at_size(page, size)
    log_in(page, live_server.url, "annotator", "annotator-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    return project, width
