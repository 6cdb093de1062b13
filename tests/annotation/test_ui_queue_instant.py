"""The instant queue in Chromium (docs/architecture.md, "The instant queue"): with 150 ms added
to every request of the page, a burst of 20 keys 60 ms apart stores 20 labels, in order, each on
the item that was on screen for its key; a label typed just before the tab closes is stored (by
the beacon sent on the way out, or, when nothing could leave the page, by the next load of the
page); a label the server refuses is listed on the page."""

from __future__ import annotations

import time

import pytest

from annotator.labelling.annotation.actions import NOT_OFFERED
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, Project
from annotator.labelling.projects.demo import create_demo
from harness.desk_probe import OFFLINE, RECORD_PANELS, delay_fetch
from tests.support.app import member
from tests.support.browser import log_in, screenshot, wait_for_labels_sent, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

KEYS = "3141592653589793238"  # + "4": twenty digit keys


def _demo(n_items: int, queued: int) -> Project:
    project, _ = create_demo(n_items)
    Project.objects.filter(pk=project.pk).update(look_ahead=queued)  # no worker tops up here
    update_project(project.pk)
    return Project.objects.get(pk=project.pk)


def _open_queue(page, live_server, project, scripts=(), held=True):
    for script in scripts:
        page.add_init_script(script)
    log_in(page, live_server.url, "annotator", "annotator-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    if held:  # the next items are in the page
        wait_until(page, "() => Number(document.getElementById('desk').dataset.held) > 0")


def test_a_burst_of_20_keys_60_ms_apart_is_stored_in_order_on_the_right_items(live_server, chromium_page):
    project = _demo(80, queued=40)
    page = chromium_page
    _open_queue(page, live_server, project, [delay_fetch(150), RECORD_PANELS])
    keys = KEYS + "4"
    for key in keys:
        page.keyboard.press(key)
        page.wait_for_timeout(60)
    wait_for_labels_sent(page)
    shown = [int(i) for i in page.evaluate("window.__shown")]
    labels = list(Label.objects.filter(project=project, annotator__username="annotator")
                  .order_by("pk").values_list("item_id", "value"))
    # each key labelled the item on screen when it was applied, one item each, in order
    assert labels == [(item, int(key)) for item, key in zip(shown, keys, strict=False)]
    assert len(labels) == 20 and len(set(shown[:20])) == 20
    assert page.locator("#desk-refused li").count() == 0
    assert "saved “4”" in page.inner_text("#desk-state")
    screenshot(page, "pages/queue-after-burst")


def test_a_label_typed_as_the_tab_closes_is_sent_by_the_beacon(live_server, chromium_page):
    project = _demo(30, queued=10)
    page = chromium_page
    # fetch waits 2 s: only the beacon sent on pagehide can store the label in time
    _open_queue(page, live_server, project, [delay_fetch(2000)])
    first = int(page.get_attribute("#queue-item", "data-item"))
    page.keyboard.press("7")
    page.close(run_before_unload=True)
    page.context.new_page()  # keeps the browser up while the beacon is delivered
    deadline = time.monotonic() + 5
    while not Label.objects.filter(item_id=first).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Label.objects.filter(item_id=first, value=7).count() == 1


def test_a_label_that_could_not_leave_the_page_is_sent_by_the_next_load(live_server, chromium_page):
    project = _demo(30, queued=10)
    page = chromium_page
    context = page.context
    offline = context.new_page()
    _open_queue(offline, live_server, project, [OFFLINE], held=False)
    first = int(offline.get_attribute("#queue-item", "data-item"))
    offline.keyboard.press("7")
    wait_until(offline, "() => document.getElementById('desk-state').textContent.includes('retrying')")
    offline.close(run_before_unload=True)
    assert not Label.objects.filter(item_id=first).exists()
    # the same browser opens the queue again: the pending label is sent first
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    wait_for_labels_sent(page)
    assert list(Label.objects.filter(item_id=first).values_list("value", flat=True)) == [7]
    assert page.get_attribute("#queue-item", "data-item") != str(first)


def test_a_refused_label_is_shown_not_dropped(live_server, chromium_page):
    project = _demo(30, queued=10)
    page = chromium_page
    _open_queue(page, live_server, project, [delay_fetch(500)])
    first = int(page.get_attribute("#queue-item", "data-item"))
    # while the label is on its way, someone else takes the item (its lease moved to them)
    other = member(project, "other")
    page.keyboard.press("2")
    Item.objects.filter(pk=first).update(lease_owner=other)
    wait_for_labels_sent(page)
    assert not Label.objects.filter(item_id=first).exists()
    refused = page.inner_text("#desk-refused")
    assert "Not saved: “2”" in refused and NOT_OFFERED in refused
    screenshot(page, "pages/queue-refused")
