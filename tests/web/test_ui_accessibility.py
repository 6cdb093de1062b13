"""axe-core (npm package, pinned in package.json, injected by Playwright) finds no serious or
critical violation on the login, queue, console, dashboard, upload and planner pages (and the
project list, the queue's empty state and the 404 page) at a laptop's and a phone's size.

Real Tab presses reach every visible control of those pages in document order
(:func:`_tab_walk`); the queue's actions by real key presses (label, undo, change a recent
label) are tests/annotation/test_ui_keyboard.py."""

from __future__ import annotations

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import PlannerRun
from annotator.labelling.projects.demo import create_demo
from tests.support.app import member, text_project
from tests.support.browser import (
    SIZES,
    at_size,
    axe_violations,
    log_in,
    screenshot,
    wait_for_labels_sent,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize("size", list(SIZES))
def test_no_serious_or_critical_axe_violation_on_any_page(live_server, axe_page, size):
    project, _ = create_demo(40)
    update_project(project.pk)
    PlannerRun.objects.create(project=project, candidates=[{"algorithm": "mpaa-i", "delta": 1.0}],
                              status="done", source="gold", runs=2, total=2, done=2,
                              results=[{"algorithm": "mpaa-i", "delta": 1.0, "items": 40,
                                        "mean": {"accuracy": 0.8, "query_ratio": 0.3},
                                        "std": {"accuracy": 0.05, "query_ratio": 0.02}}])
    empty = text_project([], name="empty")
    member(empty, "admin")
    page = axe_page
    at_size(page, size)
    found = {}
    page.goto(f"{live_server.url}/accounts/login/")
    found["login"] = axe_violations(page)
    log_in(page, live_server.url, "admin", "admin-demo")
    pk = project.pk
    pages = {"projects": "/", "queue": f"/projects/{pk}/", "queue-empty": f"/projects/{empty.pk}/",
             "console": f"/projects/{pk}/console", "dashboard": f"/projects/{pk}/dashboard",
             "upload": f"/projects/{pk}/upload", "planner": f"/projects/{pk}/planner",
             "suspects": f"/projects/{pk}/suspects",
             "new-project": "/projects/new", "missing": "/projects/999999/"}
    held: list = []  # the label request held back to see the page while it saves
    for name, path in pages.items():
        page.goto(live_server.url + path)
        if name == "queue":
            page.wait_for_selector("#queue-item[data-ready='1']")
        found[name] = axe_violations(page)
        screenshot(page, f"pages/axe-{name}-{size}")
        if name == "queue":  # after a key press: "saved", my last labels, a change's notice
            first = page.get_attribute("#queue-item", "data-item")
            page.keyboard.press("3")
            wait_until(page, """(first) => { const p = document.querySelector('#queue-item');
                return p.dataset.item !== first && p.dataset.ready === '1'; }""", first)
            page.select_option("#recent-labels select", "4")
            page.click("#recent-labels button")
            page.wait_for_selector("#queue-item .notice")
            found["queue-after-label"] = axe_violations(page)
            # and while a key press is on its way ("sending 1 label…": the request held back)
            page.route("**/desk", lambda route: held.append(route))
            page.keyboard.press("5")
            wait_until(page, "() => document.getElementById('desk-state').textContent.includes('sending')")
            found["queue-saving"] = axe_violations(page)
            wait_until(page, "() => true")  # a turn of the event loop for the route handler
            for _ in range(250):
                if held:
                    break
                page.wait_for_timeout(20)
            for route in held:
                route.continue_()
            page.unroute("**/desk")
            wait_for_labels_sent(page)
            screenshot(page, f"pages/axe-queue-after-label-{size}")
    assert {name: v for name, v in found.items() if v} == {}
    # the check can fail: text too faint to read is a serious violation
    page.evaluate("""() => { const p = document.createElement('p'); p.textContent = 'faint';
        p.style.color = '#ddd'; p.style.background = '#fff'; document.querySelector('main').append(p); }""")
    assert any(v.startswith("color-contrast (serious)") for v in axe_violations(page))


#: what a person can act on: what Tab must reach on every page
INTERACTIVE = ("a[href], button, input:not([type=hidden]), select, textarea, summary, "
               "[tabindex]:not([tabindex='-1'])")


def _tab_walk(page) -> dict | None:
    """Press Tab from the first control of the page until focus comes back round; None when it
    reached every visible control (:data:`INTERACTIVE`) in document order, else what it missed."""
    # a radio group is one Tab stop (its checked radio; the arrow keys move within it)
    want = page.evaluate("""(sel) => [...document.querySelectorAll(sel)].filter(e =>
        !e.disabled && e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden'
        && !(e.type === 'radio' && !e.checked && e.form
             && [...e.form.elements].some(r => r.name === e.name && r.checked)))
        .map((e, i) => { e.dataset.tabCheck = i; return i; })""", INTERACTIVE)
    # start at the first control (Chromium resumes Tab from where focus last was)
    page.evaluate("() => document.querySelector('[data-tab-check=\"0\"]').focus()")
    reached = [0]
    for _ in range(len(want) + 5):
        page.keyboard.press("Tab")
        got = page.evaluate("() => document.activeElement?.dataset?.tabCheck ?? null")
        if got is None or (reached and int(got) == reached[0]):
            break
        reached.append(int(got))
    if reached == want:
        return None
    lost = sorted(set(want) - set(reached))
    return {"not reached": page.evaluate("""(lost) => lost.map(i =>
            document.querySelector(`[data-tab-check="${i}"]`).outerHTML.slice(0, 160))""", lost),
            "out of order": reached != sorted(reached)}


@pytest.mark.parametrize("size", list(SIZES))
def test_tab_reaches_every_control_of_every_page(live_server, chromium_page, size):
    """Real Tab presses from the top of each page reach every visible control, in document order
    (no control left to the mouse, no positive tabindex reordering the page)."""
    project, _ = create_demo(40)
    update_project(project.pk)
    page = chromium_page
    at_size(page, size)
    page.goto(f"{live_server.url}/accounts/login/")
    pages = {"login": None}
    pk = project.pk
    for name, path in {"projects": "/", "queue": f"/projects/{pk}/", "console": f"/projects/{pk}/console",
                       "dashboard": f"/projects/{pk}/dashboard", "upload": f"/projects/{pk}/upload",
                       "planner": f"/projects/{pk}/planner"}.items():
        pages[name] = path
    missed = {}
    for name, path in pages.items():
        if path is not None:
            page.goto(live_server.url + path)
        if name == "queue":
            page.wait_for_selector("#queue-item[data-ready='1']")
        if name == "dashboard":  # the panel is polled: stop it swapping while Tab walks it
            page.evaluate("() => document.getElementById('dashboard-panel').removeAttribute('hx-trigger')")
        problem = _tab_walk(page)
        if problem:
            missed[name] = problem
        if name == "login":
            log_in(page, live_server.url, "admin", "admin-demo")
    assert missed == {}, missed
    # the walk can fail: a button taken out of the Tab order is reported
    page.evaluate("""() => { const b = document.createElement('button'); b.textContent = 'mouse only';
        b.tabIndex = -1; document.querySelector('main').append(b); }""")
    assert "mouse only" in str(_tab_walk(page))
