"""The desk's page fixes in Chromium (tests/web/test_ui_desk_pages.py has the same pages through
the test client): the queue on a phone (its history reached from the title line, no empty band
above the item, no key hints on a touch screen) and the dashboard, the empty dashboard and a
rendered document and the item browser's note on a short search at a laptop's and a phone's
size, with no serious or critical axe-core violation. Screenshots under test-output/desk/."""

from __future__ import annotations

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Membership
from tests.support.app import digits_project, member, text_project
from tests.support.browser import (
    CHROMIUM,
    SIZES,
    at_size,
    axe_violations,
    log_in,
    open_demo_queue,
    require_browser,
    screenshot,
    wait_for_labels_sent,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

IN_VIEW = """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }"""


def test_phone_queue_reaches_its_history_and_leaves_no_band_above_the_item(live_server, chromium_page):
    page = chromium_page
    open_demo_queue(live_server, page, "phone")
    gap = page.evaluate("""() => document.querySelector('#queue-item').getBoundingClientRect().top
        - document.querySelector('.queue-head').getBoundingClientRect().bottom""")
    assert gap < 24  # the empty state line takes no room
    page.keyboard.press("3")
    wait_for_labels_sent(page)
    assert page.evaluate(IN_VIEW, "#to-history")  # the entry point sits beside the title
    assert not page.evaluate(IN_VIEW, "#recent-labels li")  # the history itself is below the item
    page.click("#to-history")
    page.wait_for_timeout(200)
    assert page.evaluate(IN_VIEW, "#recent-labels li")
    screenshot(page, "desk/queue-history-phone")
    page.click("#recent-labels .to-item")
    page.wait_for_timeout(200)
    assert page.evaluate(IN_VIEW, "#queue-item .labels")
    at_size(page, "laptop")  # the history beside the item: no link needed
    assert not page.is_visible("#to-history") and page.evaluate(IN_VIEW, "#recent-labels li")


def test_a_touch_screen_shows_no_key_hints_and_the_first_history_entry(live_server, monkeypatch):
    """A phone's touch screen (coarse pointer, no hover): the buttons carry no key hints, the
    key help is gone, and the item, its buttons and the newest label fit on the screen."""
    from playwright.sync_api import sync_playwright

    require_browser()
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    width, height = SIZES["phone"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": width, "height": height}, has_touch=True,
                                          is_mobile=True)
            page = context.new_page()
            open_demo_queue(live_server, page, "phone")
            assert page.evaluate("() => matchMedia('(hover: none) and (pointer: coarse)').matches")
            page.tap("#queue-item form.labels button[value='3']")
            wait_for_labels_sent(page)
            shown = page.evaluate("""() => [...document.querySelectorAll(
                '.labels kbd, .actions kbd, .keys-help, .recent-rule kbd')]
                .filter(e => e.getClientRects().length).length""")
            assert shown == 0
            assert page.evaluate(IN_VIEW, "#queue-item .labels") and page.evaluate(IN_VIEW, "#to-history")
            newest = page.evaluate("() => document.querySelector('#recent-labels li')"
                                   ".getBoundingClientRect().top")
            assert newest < height  # the newest label starts on the first screen
            screenshot(page, "desk/queue-touch-phone")
        finally:
            browser.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_dashboard_empty_dashboard_and_docs_pass_axe(live_server, axe_page, size, monkeypatch):
    from annotator.labelling.reporting import item_browser

    monkeypatch.setattr(item_browser, "SCAN_WINDOW", 10)  # a short search reads 10 items a page
    project = digits_project(40, params={"delta": 2.0}, budget_ratio=0.25)
    update_project(project.pk)
    member(project, "boss", Membership.Role.ADMIN)
    empty = text_project([], name="empty")
    member(empty, "boss", Membership.Role.ADMIN)
    page = axe_page
    at_size(page, size)
    log_in(page, live_server.url, "boss", "pw")
    found = {}
    for name, path in {"dashboard": f"/projects/{project.pk}/dashboard",
                       "dashboard-empty": f"/projects/{empty.pk}/dashboard",
                       "help-dataset": "/help/dataset", "help-index": "/help/README",
                       "items-short-search": f"/projects/{project.pk}/items/?q=zq"}.items():
        page.goto(live_server.url + path)
        found[name] = axe_violations(page)
        screenshot(page, f"desk/{name}-{size}")
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (name, overflow)  # nothing wider than the screen
    assert {name: v for name, v in found.items() if v} == {}
    page.goto(f"{live_server.url}/projects/{project.pk}/items/?q=zq")
    assert "up to #9" in page.inner_text("#search-window")
    page.click("#next-page")
    assert "up to #19" in page.inner_text("#search-window")
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard")
    assert page.inner_text("#m-budget").startswith("25.0% · ")
    page.goto(f"{live_server.url}/projects/{empty.pk}/dashboard")
    page.click("#version-upload")
    page.wait_for_url(f"{live_server.url}/projects/{empty.pk}/upload")
