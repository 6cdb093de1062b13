"""The dashboard's per-class figures, the model labels' accuracy and the quality target, and the
suspected-label-errors page, in Chromium at laptop and phone size (docs/estimates.md)."""

from __future__ import annotations

import pytest

from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Membership
from tests.support.app import SPAM, member, teach, text_project
from tests.support.browser import at_size, log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser]
HAMS = ["see you at the station", "call me when you get home", "are we still on for lunch"]


def test_the_dashboard_shows_per_class_figures_and_the_target_at_both_sizes(live_server, chromium_page,
                                                                            transactional_db):
    project = text_project(params={"delta": 0.5, "query": "random", "p": 0.5}, quality_target=0.6,
                           name="spam figures")
    texts = [f"{SPAM[i % 3 * 2]} {i}" if i % 7 == 0 else f"{HAMS[i % 3]} {i}" for i in range(120)]
    golds = ["spam" if i % 7 == 0 else "ham" for i in range(120)]
    pairs = enumerate(zip(texts, golds, strict=True))
    import_records(project, [Record(f"line {i}", t, g) for i, (t, g) in pairs])
    teach(project, member(project, "ann"))
    member(project, "boss", Membership.Role.ADMIN)
    page = chromium_page
    log_in(page, live_server.url, "boss", "pw")
    for size in ("laptop", "phone"):
        width = at_size(page, size)
        page.goto(f"{live_server.url}/projects/{project.pk}/dashboard")
        page.wait_for_selector("#per-class")
        rows = page.locator("#per-class .per-class-row")
        assert rows.count() == 2
        for k in range(2):
            assert rows.nth(k).is_visible()
        spam = rows.nth(1).inner_text()
        assert "spam" in spam and "[" in spam  # an estimate with its interval
        macro = page.locator("#figure-macro_f1")
        assert macro.is_visible() and "macro-F1" in macro.inner_text()
        assert page.locator("#baseline-class").inner_text() == "ham"
        target = page.locator("#quality-target").inner_text()
        assert "Target: at least 0.6 of" in target and ("supports it" in target or "not shown yet" in target)
        assert page.locator("#model-labels").is_visible()
        # nothing wider than the screen: the tables stack into cards on a phone
        assert wait_until(page, "w => document.documentElement.scrollWidth <= w", width)
        page.locator("#per-class").scroll_into_view_if_needed()
        screenshot(page, f"dashboard-per-class-{size}")
        page.goto(f"{live_server.url}/projects/{project.pk}/suspects")
        assert page.locator("#suspects .suspect").count() > 0
        assert wait_until(page, "w => document.documentElement.scrollWidth <= w", width)
        screenshot(page, f"suspects-{size}")
