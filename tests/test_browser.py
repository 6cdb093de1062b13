"""End to end in Chromium: the demo annotator labels with the keyboard only; the admin creates a
text project, uploads a CSV, changes delta, runs the delta planner and exports the model.
A real Celery worker applies labels, imports uploads and runs the planner."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from annotator.labelling.demo import create_demo
from annotator.labelling.models import Item, Label, LearnerState, PlannerRun, Project

from .apphelpers import Worker
from .browser_support import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def worker(transactional_db, tmp_path):
    w = Worker(tmp_path / "worker.log")
    yield w
    w.stop()


def _item_id(page) -> str:
    return page.get_attribute("#queue-item", "data-item") or ""


def test_annotator_labels_with_the_keyboard_then_sees_the_dashboard(live_server, worker, chromium_page):
    project, _ = create_demo(300)
    page = chromium_page
    log_in(page, live_server.url, "annotator", "annotator-demo")
    assert re.search(r"\d+\s*</b>\s*waiting", page.content())
    page.click(f"text={project.name}")
    page.wait_for_selector("#queue-item[data-item]")
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
        page.wait_for_function(f"document.querySelector('#queue-item')?.dataset.item !== '{current}'")
    assert len(set(seen)) == 20
    page.keyboard.press("u")  # undo the 20th label: its item comes back
    page.wait_for_function(f"document.querySelector('#queue-item')?.dataset.item === '{seen[-1]}'")
    page.keyboard.press(str(Item.objects.get(pk=int(seen[-1])).gold))
    page.wait_for_function(f"document.querySelector('#queue-item')?.dataset.item !== '{seen[-1]}'")
    skipped = _item_id(page)
    page.keyboard.press("s")
    page.wait_for_function(f"document.querySelector('#queue-item')?.dataset.item !== '{skipped}'")
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

    from annotator.labelling.annotation import lease_next, submit_label
    from annotator.labelling.models import Membership

    other = get_user_model().objects.create_user("second", password="pw")
    Membership.objects.create(user=other, project=project)
    for _ in range(3):
        item = lease_next(project, other)
        submit_label(project, item.pk, other, item.gold)
    page.wait_for_function("document.querySelector('#m-labels').innerText.trim() === '23'", timeout=30_000)
    page.wait_for_function("(b) => document.querySelector('#chart-query-ratio').innerHTML !== b",
                           arg=before, timeout=30_000)


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
