"""Every page in Chromium at a laptop (1280x800) and a phone (390x844; the layout also at 375 px
wide): the stylesheet is ours (served from static/, nothing from another origin), nothing scrolls
sideways, no table hides columns to the side, buttons look like buttons and show the keyboard
focus. Full-page screenshots go to test-output/pages/ (git-ignored) to be looked at."""

from __future__ import annotations

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.projects.demo import create_demo
from tests.support.browser import SIZES, at_size, log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _pages(pk: int) -> dict[str, str]:
    return {"projects": "/", "queue": f"/projects/{pk}/", "console": f"/projects/{pk}/console",
            "dashboard": f"/projects/{pk}/dashboard", "upload": f"/projects/{pk}/upload",
            "planner": f"/projects/{pk}/planner", "new-project": "/projects/new",
            "missing": "/projects/999999/"}


#: the tables that hide columns to the side: a table scrolls inside its box (base.css), which
#: nothing on the page shows, so on a phone a wide one stacks its rows instead (table.stack)
HIDDEN_COLUMNS = """() => [...document.querySelectorAll('table')]
    .filter(t => t.offsetParent !== null && t.scrollWidth > t.clientWidth + 1)
    .map(t => `${t.id || t.className}: ${t.scrollWidth} px in ${t.clientWidth}`)"""


def _check_layout(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "sideways scrolling"
    assert page.evaluate(HIDDEN_COLUMNS) == [], "a table hides columns to the side"
    sheets = page.evaluate("[...document.styleSheets].map(s => s.href).filter(Boolean)")
    origin = page.evaluate("location.origin")
    assert any(s.endswith("/static/labelling/base.css") for s in sheets), sheets
    assert all(s.startswith(origin + "/static/") for s in sheets), sheets  # ours: no CDN
    button = page.locator("main button:visible").first
    if button.count():
        style = button.evaluate("b => { const s = getComputedStyle(b); "
                                "return [s.borderRadius, s.paddingLeft, s.cursor]; }")
        assert style[0] != "0px" and style[1] != "0px" and style[2] == "pointer", style


#: the sizes every page is checked at: SIZES and the narrowest phone, 375 px wide
PAGE_SIZES = {**SIZES, "small-phone": (375, 740)}


@pytest.mark.parametrize("size", list(PAGE_SIZES))
def test_every_page_is_styled_and_fits_the_screen(live_server, chromium_page, size):
    from annotator.labelling.projects.settings_changes import change_settings

    project, _ = create_demo(30)
    update_project(project.pk)  # queue the first items (no worker in this test)
    # the console's history has entries (its table was the widest on a phone)
    change_settings(project, None, params={**project.params, "delta": 0.25}, price_per_label=0.05)
    # long class names widen the dashboard's table of classes
    from annotator.labelling.models import Membership
    from annotator.labelling.projects.creation import create_project
    urls = create_project(name="URL classes", task="multiclass", item_kind="url",
                          classes=["benign", "defacement", "phishing", "malware"])
    admin = Membership.objects.get(project=project, role="admin").user
    Membership.objects.create(project=urls, user=admin, role=Membership.Role.ADMIN)
    page = chromium_page
    width, height = PAGE_SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{live_server.url}/accounts/login/")
    _check_layout(page, width)
    screenshot(page, f"pages/login-{size}")
    log_in(page, live_server.url, "admin", "admin-demo")
    pages = {**_pages(project.pk), "dashboard-long-classes": f"/projects/{urls.pk}/dashboard"}
    for name, path in pages.items():
        page.goto(live_server.url + path)
        if name == "queue":
            page.wait_for_selector("#queue-item[data-ready='1']")
        _check_layout(page, width)
        screenshot(page, f"pages/{name}-{size}")


def test_keyboard_focus_is_visible(live_server, chromium_page):
    project, _ = create_demo(30)
    page = chromium_page
    log_in(page, live_server.url, "admin", "admin-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    page.focus("#learner-form button[type=submit]")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # focus by keyboard: :focus-visible applies
    outline = page.evaluate("(() => { const s = getComputedStyle(document.activeElement); "
                            "return [s.outlineStyle, s.outlineWidth]; })()")
    assert outline[0] != "none" and outline[1] != "0px", outline


@pytest.mark.parametrize("size", list(SIZES))
def test_dashboard_charts_use_the_width_and_draw_the_interval_as_a_band(live_server, chromium_page, size):
    from annotator.labelling.annotation.actions import lease_next, submit_label
    from annotator.labelling.models import Membership

    project, _ = create_demo(60)
    project.params = {**project.params, "delta": 1000.0}  # every item queried
    project.save()
    update_project(project.pk)
    admin = Membership.objects.get(project=project, role="admin").user
    for _ in range(12):
        item = lease_next(project, admin)
        submit_label(project, item.pk, admin, item.gold)
        update_project(project.pk)
    page = chromium_page
    width = at_size(page, size)
    log_in(page, live_server.url, "admin", "admin-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard")
    page.wait_for_selector("#chart-accuracy svg polygon.band")
    sizes = page.evaluate("[...document.querySelectorAll('.charts > div')].map(d => "
                          "[d.clientWidth, d.querySelector('svg').getBoundingClientRect().width])")
    main_width = page.evaluate("document.querySelector('main').clientWidth")
    for box, svg in sizes:
        assert svg >= box - 20  # the chart fills its box
    assert sum(box for box, _ in sizes[:2]) >= 0.8 * main_width  # the boxes fill the page
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"pages/dashboard-data-{size}")


@pytest.mark.parametrize("size", list(SIZES))
def test_error_pages_keep_the_layout_and_lead_back(live_server, chromium_page, size):
    project, _ = create_demo(5)
    page = chromium_page
    width = at_size(page, size)
    log_in(page, live_server.url, "annotator", "annotator-demo")
    for name, path in (("403", f"/projects/{project.pk}/console"), ("404", "/projects/999999/")):
        page.goto(live_server.url + path)
        assert page.locator(f"#error-{name} h1").is_visible()
        _check_layout(page, width)
        screenshot(page, f"pages/error-{name}-{size}")
    page.click(".error-nav a >> text=Your projects")
    page.wait_for_url(f"{live_server.url}/")
