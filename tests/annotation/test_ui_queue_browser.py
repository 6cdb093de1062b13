"""The queue in Chromium at both screen sizes: the next item shows at once while a label is on
its way (held back by the test), a quiet "saved" after; the four empty states and a vector item look
right (screenshots under test-output/pages/, git-ignored)."""

from __future__ import annotations

import pytest

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import import_records, parse_upload
from annotator.labelling.models import Item, Label, Project
from annotator.labelling.projects.demo import create_demo
from tests.support.app import member, text_project
from tests.support.browser import SIZES, at_size, log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize("size", list(SIZES))
def test_a_key_press_shows_the_next_item_at_once_then_saved(live_server, chromium_page, size):
    """The instant queue: the next held item shows while the label is still on its way (the
    test holds the request back), the state line says so, then "saved"."""
    project, _ = create_demo(30)
    update_project(project.pk)
    page = chromium_page
    at_size(page, size)
    log_in(page, live_server.url, "annotator", "annotator-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    wait_until(page, "() => Number(document.getElementById('desk').dataset.held) > 0")
    first = page.get_attribute("#queue-item", "data-item")
    held = []
    page.route("**/desk", lambda route: held.append(route))  # a slow server: the request waits here
    page.keyboard.press(str(Item.objects.get(pk=int(first)).gold))
    # the next item is on screen before the label reached the server
    assert page.get_attribute("#queue-item", "data-item") != first
    assert "sending 1 label" in page.inner_text("#desk-state")
    screenshot(page, f"pages/queue-saving-{size}")
    for _ in range(250):
        if held:
            break
        page.wait_for_timeout(20)
    assert held, "the label request never reached the network"
    assert not Label.objects.filter(item_id=int(first)).exists()
    held[0].continue_()
    page.unroute("**/desk")
    wait_until(page, "() => document.getElementById('desk-state').textContent.includes('saved')")
    assert Label.objects.get(item_id=int(first)).annotator.username == "annotator"
    assert "sending" not in page.inner_text("#desk-state")
    screenshot(page, f"pages/queue-saved-{size}")
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size][0]


@pytest.mark.parametrize("size", list(SIZES))
def test_empty_states_and_vectors_look_right(live_server, chromium_page, size):
    empty = text_project([], name="empty")
    paused = text_project(["a"], name="paused")
    Project.objects.filter(pk=paused.pk).update(stream_state=Project.StreamState.PAUSED)
    catching_up = text_project(["a"], name="catching up")
    vectors = text_project(name="vectors", item_kind="vectors", classes=["neg", "pos"],
                           params={"delta": 100.0}, featurizer_config={"kind": "vectors", "n_features": 40})
    line = b"+1 " + b" ".join(f"{j}:{j / 7:.3f}".encode() for j in range(1, 40, 3)) + b"\n"
    import_records(vectors, parse_upload(vectors, "v.libsvm", line))
    update_project(vectors.pk)
    for p in (empty, paused, catching_up, vectors):
        member(p, "ann")
    page = chromium_page
    width = at_size(page, size)
    log_in(page, live_server.url, "ann", "pw")
    for p, state, heading in [(empty, "empty", "Nothing uploaded yet"),
                              (paused, "paused", "The stream is paused"),
                              (catching_up, "catching-up", "The model is catching up")]:
        page.goto(f"{live_server.url}/projects/{p.pk}/")
        assert page.get_attribute("#queue-item", "data-idle") == state
        assert page.inner_text("#queue-item h2") == heading
        screenshot(page, f"pages/queue-{state}-{size}")
    page.goto(f"{live_server.url}/projects/{vectors.pk}/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    assert page.inner_text(".vector-grid dt >> nth=0") == "1"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"pages/queue-vectors-{size}")


def test_back_and_forward_never_show_an_item_already_labelled(live_server, chromium_page):
    project, _ = create_demo(30)
    update_project(project.pk)
    page = chromium_page
    log_in(page, live_server.url, "annotator", "annotator-demo")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    first = page.get_attribute("#queue-item", "data-item")
    page.keyboard.press(str(Item.objects.get(pk=int(first)).gold))
    wait_until(page, "(first) => document.querySelector('#queue-item')?.dataset.item !== first", first)
    shown = page.get_attribute("#queue-item", "data-item")
    page.goto(f"{live_server.url}/")  # away, then back
    page.go_back()
    page.wait_for_selector("#queue-item[data-ready='1']")
    assert page.get_attribute("#queue-item", "data-item") == shown  # the current lease, not the first
