"""The item browser in Chromium at a laptop's and a phone's size (docs/dataset.md): no serious or
critical axe violation, no sideways scrolling, the filter form and the next-page link work, and
an admin's relabel from the page shows the item as relabelled (a human label of method relabel)."""

from __future__ import annotations

import pytest

from annotator.labelling.models import Item, Label, Membership
from tests.support.app import digits_project, member, teach
from tests.support.browser import SIZES, at_size, axe_violations, log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize("size", list(SIZES))
def test_browse_filter_and_relabel(live_server, axe_page, size):
    project = digits_project(120, params={"delta": 0.3}, look_ahead=4)
    teach(project, member(project, "ann"), until_auto=10)
    member(project, "boss", Membership.Role.ADMIN)
    page = axe_page
    width = at_size(page, size)
    log_in(page, live_server.url, "boss", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/items/")
    assert page.locator("#item-table tr").count() == 51  # a header and 50 items
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert axe_violations(page) == []
    screenshot(page, f"pages/items-{size}")

    page.click("#next-page")
    assert page.locator('#item-table td[data-label="#"]').first.inner_text() == "50"

    page.select_option("select[name=provenance]", "model")
    page.click("#item-filters button[type=submit]")
    page.wait_for_url("**provenance=model**")
    autos = [str(s) for s in Item.objects.filter(project=project, status="auto").order_by("seq")
             .values_list("seq", flat=True)[:50]]
    assert page.locator('#item-table td[data-label="#"]').all_inner_texts() == autos
    assert axe_violations(page) == []
    screenshot(page, f"pages/items-model-{size}")

    item = Item.objects.get(project=project, seq=int(autos[0]))
    new = next(c for c in project.classes if c != item.prediction)
    row = page.locator("#item-table tr", has=page.locator(f'td[data-label="#"]:text-is("{autos[0]}")'))
    row.locator("select[name=value]").select_option(str(new))
    row.locator("button").click()
    page.wait_for_url("**provenance=model**")
    label = Label.objects.get(item=item, primary=True)
    assert label.value == new and label.drawn is False
    # the item is no longer the model's: it left this filtered list
    assert autos[0] not in page.locator('#item-table td[data-label="#"]').all_inner_texts()
    page.goto(f"{live_server.url}/projects/{project.pk}/items/?provenance=human&disagreement=model")
    assert "human (relabel) · boss" in page.locator("#item-table").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
