"""Every action of the queue by real key presses in Chromium, at both screen sizes: the Tab order
(page links, the class buttons, skip, undo, then my last labels), a class key labels, Backspace
undoes, and a recent label is changed with Tab, the arrow keys and Enter (screenshots under
test-output/pages/, git-ignored)."""

from __future__ import annotations

import pytest

from annotator.labelling.models import Item, Label
from tests.support.browser import (
    SIZES,
    open_demo_queue,
    screenshot,
    wait_for_labels_sent,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: what the focused element is, as the Tab order assertions read it
FOCUSED = """() => { const e = document.activeElement;
  return e.id ? '#' + e.id : e.tagName.toLowerCase() + ':' + e.textContent.trim().replace(/\\s+/g, ' '); }"""


def _next_item(page, shown):
    """Wait until the panel shows another item than ``shown`` and takes keys; its id."""
    wait_until(page, """(shown) => { const p = document.querySelector('#queue-item');
        return p && p.dataset.item !== shown && p.dataset.ready === '1'; }""", shown)
    return page.get_attribute("#queue-item", "data-item")


@pytest.mark.parametrize("size", list(SIZES))
def test_label_undo_and_change_a_recent_label_with_the_keyboard_alone(live_server, chromium_page, size):
    page = chromium_page
    _, width = open_demo_queue(live_server, page, size)
    # three labels by class keys (the item's true digit)
    shown = page.get_attribute("#queue-item", "data-item")
    labelled = []
    for _ in range(3):
        labelled.append(int(shown))
        page.keyboard.press(str(Item.objects.get(pk=int(shown)).gold))
        shown = _next_item(page, shown)
    # the labels go to the server in the background (the instant queue): the list follows
    wait_until(page, "() => document.querySelectorAll('#recent-labels li').length === 3")
    # Tab order from the top of the page: header, class buttons 0-9, skip, undo, my last labels
    page.evaluate("() => document.activeElement.blur()")
    order: list[str] = []
    for _ in range(60):  # once round the page (Chromium then focuses the browser's own UI, then wraps)
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused in order or focused == "body:":
            break
        order.append(focused)
    classes = [f"button:{k} {k}" for k in "0123456789"]  # the demo's classes 0-9: key = digit
    buttons = [o for o in order if o in classes]
    assert buttons == sorted(buttons, key=classes.index) and len(buttons) == 10
    skip, undo = order.index("button:s Skip"), order.index("button:u Undo last label")
    newest = Label.objects.get(item_id=labelled[2])
    oldest = Label.objects.get(item_id=labelled[0])
    select_new, select_old = f"#recent-{newest.pk}", f"#recent-{oldest.pk}"
    assert order.index(classes[-1]) < skip < undo < order.index(select_new) < order.index(select_old)
    assert order[order.index(select_new) + 1].startswith("button:Change")
    assert order.index("button:Log out") < order.index(classes[0])
    # Backspace undoes the last one: its item comes back
    page.keyboard.press("Backspace")
    shown = _next_item(page, shown)
    assert int(shown) == labelled[-1]
    assert Label.objects.get(item_id=labelled[-1]).undone_at is not None
    wait_until(page, "() => document.querySelectorAll('#recent-labels li').length === 2")
    # change the oldest label with the keyboard: Tab to its select, an arrow key, Enter on Change
    page.evaluate("() => document.activeElement.blur()")
    for _ in range(len(order)):
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED) == select_old:
            break
    assert page.evaluate(FOCUSED) == select_old
    before = page.eval_on_selector(select_old, "e => e.value")
    page.keyboard.press("ArrowDown" if before != "9" else "ArrowUp")
    after = page.eval_on_selector(select_old, "e => e.value")
    assert after != before
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#queue-item .notice")
    assert page.inner_text("#queue-item .notice") == (
        f"Item {Item.objects.get(pk=labelled[0]).seq} is now labelled “{after}”.")
    changed = Label.objects.get(item_id=labelled[0], undone_at__isnull=True)
    assert str(changed.value) == after and changed.primary
    assert page.get_attribute("#queue-item", "data-item") == shown  # the current item stays
    assert page.eval_on_selector(f"#recent-{changed.pk}", "e => e.value") == after
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"pages/queue-recent-changed-{size}")
    # Enter on a focused class button labels too
    page.focus("#queue-item button[data-key='1']")
    page.keyboard.press("Enter")
    _next_item(page, shown)
    wait_for_labels_sent(page)
    assert Label.objects.get(item_id=int(shown), undone_at__isnull=True).value == 1
