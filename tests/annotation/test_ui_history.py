""""My last labels" fixes mistakes, in Chromium at both screen sizes: a thumbnail for each image,
the whole text of a long one on demand, `h` to jump in and Esc back, a change by keyboard alone
(screenshots under test-output/pages/)."""

from __future__ import annotations

import pytest

from annotator.labelling.annotation.actions import RECENT_LABELS
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label
from tests.support.app import member, text_project
from tests.support.browser import (
    SIZES,
    log_in,
    open_demo_queue,
    screenshot,
    wait_for_labels_sent,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FOCUSED_ID = "() => document.activeElement && document.activeElement.id"


@pytest.mark.parametrize("size", list(SIZES))
def test_h_jumps_into_my_last_labels_a_change_by_keyboard_and_esc_back(live_server, chromium_page, size):
    page = chromium_page
    project, width = open_demo_queue(live_server, page, size)
    wait_until(page, "() => Number(document.getElementById('desk').dataset.held) > 0")
    first = int(page.get_attribute("#queue-item", "data-item"))
    page.keyboard.press("1")
    page.keyboard.press("2")
    wait_for_labels_sent(page)
    wait_until(page, "() => document.querySelectorAll('#recent-labels li').length === 2")
    # each row shows the image itself
    thumbs = page.locator("#recent-labels img.recent-thumb")
    assert thumbs.count() == 2 and thumbs.first.get_attribute("src").startswith("data:image/png")
    assert thumbs.nth(0).get_attribute("src") != thumbs.nth(1).get_attribute("src")  # each its own item
    assert f"last {RECENT_LABELS} labels" in page.inner_text("#recent-labels")
    current = page.get_attribute("#queue-item", "data-item")
    page.keyboard.press("h")
    newest = Label.objects.filter(project=project).order_by("-pk").first()
    assert page.evaluate(FOCUSED_ID) == f"recent-{newest.pk}"
    # Tab to the older one, pick 7, Enter on Change
    page.keyboard.press("Tab")  # its Change button
    page.keyboard.press("Tab")  # the older row's class list
    oldest = Label.objects.get(item_id=first, undone_at__isnull=True)
    assert page.evaluate(FOCUSED_ID) == f"recent-{oldest.pk}"
    page.select_option(f"#recent-{oldest.pk}", "7")  # what arrow keys do, without counting presses
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#queue-item .notice")
    assert Label.objects.get(item_id=first, undone_at__isnull=True).value == 7
    assert page.get_attribute("#queue-item", "data-item") == current  # the item stays
    screenshot(page, f"pages/queue-history-changed-{size}")
    # h again, then Esc: back to the item, whose keys label again
    page.keyboard.press("h")
    assert page.evaluate(FOCUSED_ID).startswith("recent-")
    page.keyboard.press("Escape")
    assert page.evaluate(FOCUSED_ID) == "queue-item"
    page.keyboard.press("3")
    wait_for_labels_sent(page)
    assert Label.objects.get(item_id=int(current)).value == 3
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_long_text_shows_whole_on_demand(live_server, chromium_page):
    long = "Free entry in a weekly competition to win tickets, text WIN to 80086 now! " * 3
    project = text_project([long, "see you at 5", "ok"], look_ahead=3, params={"delta": 100.0})
    update_project(project.pk)
    member(project, "ann")
    page = chromium_page
    log_in(page, live_server.url, "ann", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    assert Item.objects.get(pk=int(page.get_attribute("#queue-item", "data-item"))).text == long
    page.keyboard.press("2")
    wait_for_labels_sent(page)
    wait_until(page, "() => document.querySelectorAll('#recent-labels li').length === 1")
    full = page.locator("#recent-labels .recent-full")
    assert full.is_hidden()
    page.click("#recent-labels summary")
    assert full.is_visible() and full.inner_text().strip() == long.strip()
    screenshot(page, "pages/queue-history-long-text")


#: the narrowest phone the pages are checked at (CSS pixels), below SIZES["phone"]
SMALL_PHONE = {"width": 375, "height": 740}
#: how many lines an element's text takes (its height over its line height)
LINES = "e => Math.round(e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight))"


def test_item_numbers_and_the_header_stay_on_one_line_on_a_small_phone(live_server, chromium_page):
    """At 375 px an item's number in "My last labels" stays whole beside a long text (it broke one
    digit per line), and the header keeps the title, the user name and "Log out" on one line."""
    texts = [f"Message {i}: free entry in a weekly competition to win tickets, text WIN now"
             for i in range(4)]
    project = text_project(texts, look_ahead=4, params={"delta": 100.0})
    update_project(project.pk)
    member(project, "annotator")
    page = chromium_page
    log_in(page, live_server.url, "annotator", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    for key in "121":
        page.keyboard.press(key)
    wait_for_labels_sent(page)
    wait_until(page, "() => document.querySelectorAll('#recent-labels li').length === 3")
    for size in (SMALL_PHONE, {"width": 1280, "height": 800}):
        page.set_viewport_size(size)
        numbers = page.locator("#recent-labels .recent-about > span.muted")
        assert numbers.count() == 3
        assert [n.evaluate(LINES) for n in numbers.all()] == [1, 1, 1], numbers.all_inner_texts()
        assert all(t.startswith("#") for t in numbers.all_inner_texts())
        tops = [page.locator(sel).evaluate("e => e.getBoundingClientRect().top") for sel in
                ("header > a:first-child", "header .who", "header button")]
        bottoms = [page.locator(sel).evaluate("e => e.getBoundingClientRect().bottom") for sel in
                   ("header > a:first-child", "header .who", "header button")]
        assert max(tops) < min(bottoms), (tops, bottoms)  # one line: every box overlaps the others
        # the user name is not cut short at 375 px (a longer one would end in an ellipsis)
        assert page.locator("header .who").evaluate("e => e.scrollWidth <= e.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
        screenshot(page, f"pages/queue-history-numbers-{size['width']}")
