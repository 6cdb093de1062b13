"""End to end in Chromium: the demo annotator labels with the keyboard only; the admin creates a
text project, uploads a CSV, changes delta, runs the delta planner and exports the model.
A real Celery worker applies labels, imports uploads and runs the planner."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from annotator.labelling.models import Item, Label, LearnerState, PlannerRun, Project
from annotator.labelling.projects.demo import create_demo
from tests.support.app import Worker
from tests.support.browser import log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def worker(transactional_db, tmp_path):
    w = Worker(tmp_path / "worker.log")
    yield w
    w.stop()


def _item_id(page) -> str:
    return page.get_attribute("#queue-item", "data-item") or ""


def _wait_for_panel(page, *, was: str | None = None, shows: str | None = None) -> str:
    """Wait until the queue shows an item (other than ``was``; the item ``shows``) in a panel that
    takes keys (htmx processed it: ``data-ready``); returns its id."""
    condition = "p?.dataset.ready === '1' && !!p.dataset.item"
    if was is not None:
        condition += f" && p.dataset.item !== '{was}'"
    if shows is not None:
        condition += f" && p.dataset.item === '{shows}'"
    wait_until(page, f"() => {{ const p = document.querySelector('#queue-item'); return {condition}; }}")
    return _item_id(page)


def test_annotator_labels_with_the_keyboard_then_sees_the_dashboard(live_server, worker, chromium_page):
    project, _ = create_demo(300)
    page = chromium_page
    log_in(page, live_server.url, "annotator", "annotator-demo")
    assert re.search(r"\d+\s*</b>\s*waiting", page.content())
    page.click(f"text={project.name}")
    _wait_for_panel(page)
    screenshot(page, "queue")
    page.set_viewport_size({"width": 375, "height": 740})  # a phone
    screenshot(page, "queue-phone")
    assert page.evaluate("document.documentElement.scrollWidth <= 375")  # no sideways scrolling
    page.set_viewport_size({"width": 1280, "height": 800})
    seen = []
    for _ in range(20):
        current = _item_id(page)
        seen.append(current)
        gold = Item.objects.get(pk=int(current)).gold
        page.keyboard.press(str(gold))
        _wait_for_panel(page, was=current)
    assert len(set(seen)) == 20
    page.keyboard.press("u")  # undo the 20th label: its item comes back
    _wait_for_panel(page, shows=seen[-1])
    page.keyboard.press(str(Item.objects.get(pk=int(seen[-1])).gold))
    skipped = _wait_for_panel(page, was=seen[-1])
    page.keyboard.press("s")
    _wait_for_panel(page, was=skipped)
    assert Label.objects.filter(project=project, undone_at__isnull=False).count() == 1
    labels = Label.objects.filter(project=project, primary=True).select_related("item")
    assert labels.count() == 20 and all(lb.value == lb.item.gold for lb in labels)  # key 3 = digit 3
    unapplied = Label.objects.filter(project=project, primary=True, applied_version=None)
    state = LearnerState.objects.filter(project=project)
    worker.wait_for(lambda: not unapplied.exists() and not state.get().needs_rebuild, 60, "the labels")

    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard")
    page.wait_for_selector("#chart-accuracy svg")
    assert page.inner_text("#m-labels").strip() == "20"
    before = page.inner_html("#chart-query-ratio")
    screenshot(page, "dashboard")
    # another label arrives (a second annotator): the counters and curves follow without a reload
    from django.contrib.auth import get_user_model

    from annotator.labelling.annotation.actions import lease_next, submit_label
    from annotator.labelling.models import Membership
    from annotator.labelling.worker.send import labels_changed

    other = get_user_model().objects.create_user("second", password="pw")
    Membership.objects.create(user=other, project=project)
    for _ in range(3):
        item = lease_next(project, other)
        submit_label(project, item.pk, other, item.gold)
        labels_changed(project.pk)  # as the label view does
    wait_until(page, "() => document.querySelector('#m-labels').innerText.trim() === '23'", timeout=30)
    wait_until(page, "(b) => document.querySelector('#chart-query-ratio').innerHTML !== b", before,
               timeout=30)


def test_admin_creates_a_text_project_uploads_changes_delta_plans_and_exports(live_server, worker,
                                                                             chromium_page, tmp_path):
    create_demo(10)
    page = chromium_page
    log_in(page, live_server.url, "admin", "admin-demo")
    page.click("text=New project")
    page.fill("#name", "SMS spam")
    page.select_option("#task", "binary")
    page.select_option("#item_kind", "text")
    page.fill("#classes", "ham, spam")
    page.click("button:has-text('Create')")
    page.wait_for_selector("#learner-form")
    project = Project.objects.get(name="SMS spam")

    rows = ["text,label"] + [f"\"{'win free cash prize now' if i % 2 else 'see you at lunch today'} {i}\","
                             f"{'spam' if i % 2 else 'ham'}" for i in range(60)]
    csv_path = tmp_path / "sms.csv"
    csv_path.write_text("\n".join(rows) + "\n")
    page.goto(f"{live_server.url}/projects/{project.pk}/upload")
    page.set_input_files("input[type=file]", str(csv_path))
    page.click("button[type=submit]")
    page.wait_for_selector("text=done", timeout=60_000)
    assert Item.objects.filter(project=project).count() == 60

    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    page.fill("#param-delta", "0.25")
    page.click("#learner-form button[type=submit]")
    page.wait_for_selector("#history >> text=params.delta")
    project.refresh_from_db()
    assert project.params["delta"] == 0.25
    screenshot(page, "admin-console")

    page.click("text=delta planner")
    page.click("#planner-form button[type=submit]")
    page.wait_for_selector(".planner-run svg", timeout=90_000)
    assert PlannerRun.objects.get(project=project).status == "done"
    screenshot(page, "planner")

    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    with page.expect_download() as download:
        page.click("text=model (.npz)")
    data = download.value.path().read_bytes()
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        assert len(npz.files) > 1


def _poll(page, check, timeout: float = 20.0) -> None:
    """Wait until ``check()`` (a Python condition: the database, a page text) holds."""
    for _ in range(int(timeout * 10)):
        if check():
            return
        page.wait_for_timeout(100)
    raise AssertionError("the condition did not hold in time")


def test_a_failed_label_request_is_shown_retried_and_stored_once(live_server, chromium_page):
    """A key press whose request fails must not look like nothing happened, nor lose the label.
    First the network fails (the request never reaches the server): the page says it retries and
    keeps the label, nothing is stored, and once the network is back the label is stored. Then the
    server stores a label but the browser gets a 502 (a proxy that gave up): the page retries, and
    the repeat is recognised, so the item keeps exactly one label (docs/architecture.md, "The
    instant queue")."""
    from annotator.labelling.engine.pipeline import update_project

    project, _ = create_demo(30)
    update_project(project.pk)  # queue the first items (no worker in this test)
    page = chromium_page
    log_in(page, live_server.url, "annotator", "annotator-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    _wait_for_panel(page)
    state = page.locator("#desk-state")

    first = _item_id(page)
    key = str(Item.objects.get(pk=int(first)).gold)
    page.route("**/desk", lambda route: route.abort("connectionrefused"))
    page.keyboard.press(key)
    _poll(page, lambda: "cannot be reached" in state.inner_text())
    assert "your labels are kept" in state.inner_text()
    assert not Label.objects.filter(item_id=int(first)).exists()
    page.unroute("**/desk")
    _poll(page, lambda: Label.objects.filter(item_id=int(first)).count() == 1, timeout=20)
    second = _wait_for_panel(page, was=first)

    key = str(Item.objects.get(pk=int(second)).gold)
    lost = []

    def stored_then_lost(route) -> None:
        route.fetch()  # the server handles the request and commits the label...
        lost.append(1)
        route.fulfill(status=502, body="Bad Gateway")  # ...but the browser never sees its answer

    page.route("**/desk", lambda route: stored_then_lost(route) if not lost else route.continue_())
    page.keyboard.press(key)
    _poll(page, lambda: bool(lost) and Label.objects.filter(item_id=int(second)).exists(), timeout=20)
    _poll(page, lambda: "sending" not in state.inner_text() and "cannot" not in state.inner_text(),
               timeout=20)
    page.unroute("**/desk")
    assert Label.objects.filter(item_id=int(second)).count() == 1
    screenshot(page, "queue-after-a-lost-answer")


def test_a_key_pressed_as_the_next_item_appears_is_ignored(live_server, chromium_page):
    """The moment htmx swaps the next item in, before it has processed the new panel, a key press
    must not reach the new form (the browser would post the whole page): it is ignored, and the
    same key works once the panel is ready."""
    from annotator.labelling.engine.pipeline import update_project

    project, _ = create_demo(30)
    update_project(project.pk)
    page = chromium_page
    log_in(page, live_server.url, "annotator", "annotator-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    first = _wait_for_panel(page)
    documents = []
    page.on("request", lambda r: documents.append(r.url) if r.resource_type == "document" else None)
    # press "1" once, synchronously when the request ends: the next panel is in the DOM, the
    # request no longer busy, and htmx processes the new panel only after its settle delay
    page.evaluate("""() => document.addEventListener("htmx:afterRequest", () => {
        document.body.dispatchEvent(new KeyboardEvent("keydown", {key: "1", bubbles: true}));
    }, {once: true})""")
    page.keyboard.press(str(Item.objects.get(pk=int(first)).gold))
    second = _wait_for_panel(page, was=first)
    page.wait_for_timeout(300)  # a native post would have started navigating by now
    assert documents == [] and _item_id(page) == second
    assert not Label.objects.filter(item_id=int(second)).exists()
    page.keyboard.press(str(Item.objects.get(pk=int(second)).gold))
    _wait_for_panel(page, was=second)
    # the next item shows before the label's request ends (the instant queue): wait for the store
    _poll(page, lambda: Label.objects.filter(item_id=int(second)).exists(), timeout=20)
    assert Label.objects.filter(item_id=int(second)).count() == 1 and documents == []


def test_a_failed_dashboard_poll_says_it_will_retry_and_clears(live_server, chromium_page):
    """A polling panel that fails (the dashboard, every 2 s) shows the alert for a GET that
    retries by itself, and the next poll that succeeds clears it."""
    project, _ = create_demo(10)
    page = chromium_page
    log_in(page, live_server.url, "admin", "admin-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard")
    page.wait_for_selector("#dashboard-panel")
    alert = page.locator("#request-error")
    page.route("**/dashboard/panel", lambda route: route.fulfill(status=503, body="Service Unavailable"))
    alert.wait_for(state="visible")
    assert "HTTP 503" in alert.inner_text() and "it will try again" in alert.inner_text()
    assert "may not have been saved" not in alert.inner_text()
    page.unroute("**/dashboard/panel")
    alert.wait_for(state="hidden")


def test_a_failed_one_off_request_asks_to_try_again(live_server, chromium_page):
    """A GET that does not poll (the console's algorithm form) must not promise a retry."""
    project, _ = create_demo(10)
    page = chromium_page
    log_in(page, live_server.url, "admin", "admin-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    page.route("**/console/params*", lambda route: route.fulfill(status=500, body="Server Error"))
    other = page.eval_on_selector("#algorithm", "s => [...s.options].find(o => !o.selected).value")
    page.select_option("#algorithm", other)
    alert = page.locator("#request-error")
    alert.wait_for(state="visible")
    assert "HTTP 500" in alert.inner_text() and "could not be updated: try again" in alert.inner_text()
    assert "will try again" not in alert.inner_text()


def test_pages_run_under_the_content_security_policy(live_server, chromium_page):
    """Every page answers with the CSP header; the app's own scripts run under it (htmx works),
    and an inline script (what an injection would add) is refused and reported."""
    project, _ = create_demo(10)
    page = chromium_page
    response = page.goto(f"{live_server.url}/accounts/login/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    log_in(page, live_server.url, "admin", "admin-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard")
    assert page.evaluate("typeof htmx") == "object"  # the static scripts ran
    assert not page.csp_violations
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.pwned = 1';"
                  " document.body.appendChild(s); }")
    assert page.evaluate("window.pwned === undefined")
    page.wait_for_timeout(200)
    assert page.csp_violations and "inline script" in page.csp_violations[0]
    page.csp_violations.clear()  # expected here: the fixture fails a test on any other violation


def test_admin_refits_on_all_labels_from_the_console(live_server, worker, chromium_page, client):
    """The console's "Refit on all labels" starts the heavy worker's job, its panel polls until the
    result, which names the labels fitted and the model an export will use (docs/algorithms/refit.md)."""
    from annotator.labelling.models import Membership, RefitRun
    from tests.support.app import label_everything, member, queued_digits_project

    project = queued_digits_project()
    client.force_login(member(project, "admin-of-digits", role=Membership.Role.ADMIN, password="pw-digits"))
    given = label_everything(project, [client], worker)
    assert given >= 20  # enough for the refit to be tried (learners/refit.py MIN_LABELS)
    page = chromium_page
    log_in(page, live_server.url, "admin-of-digits", "pw-digits")
    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    page.click("#refit-form button[type=submit]")
    page.wait_for_selector("#refit-run .refit-used >> text=An export uses this result", timeout=90_000)
    run = RefitRun.objects.get(project=project)
    assert (run.status, run.labels) == ("done", given)
    assert page.inner_text("#refit-run .refit-labels") == str(given)
    assert page.locator("#refit-run .refit-accuracy").count() == 1  # the refit was fitted and checked
    screenshot(page, "admin-console-refit")

    # items the model then decides alone are the next refit's self-training sample: the panel says
    # how many and whether the self-trained fit was kept (docs/algorithms/refit.md)
    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.ingest import import_records
    from annotator.labelling.models import Item
    from annotator.labelling.projects.settings_changes import change_settings
    from harness.races import digit_records

    admin = project.memberships.get(role=Membership.Role.ADMIN).user
    change_settings(project, admin, params={**project.params, "delta": 0.001})
    import_records(project, digit_records(20, seed=2))
    update_project(project.pk)
    decided = Item.objects.filter(project=project, status=Item.Status.AUTO).count()
    assert decided > 0
    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    page.click("#refit-form button[type=submit]")
    page.wait_for_selector(f"#refit-run .self-training >> text=Self-training on {decided} items",
                           timeout=90_000)
    screenshot(page, "admin-console-refit-self-training")
    page.set_viewport_size({"width": 375, "height": 740})  # a phone
    screenshot(page, "admin-console-refit-phone")

