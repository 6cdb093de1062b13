"""The review queue and the dashboard's team panels in Chromium (docs/teams.md): a reviewer
decides a disagreement and an audit with two key presses; the admin's dashboard shows the audit
estimate next to the importance-weighted one, and the annotator quality table. Screenshots under
test-output/review/ (git-ignored)."""

from __future__ import annotations

import pytest

from annotator.labelling.models import Item, Membership, Project, Review
from annotator.labelling.teams.reviews import decide, request_review
from annotator.labelling.web.request import class_buttons
from harness.chosen_labels import label_chosen
from tests.support.app import digits_project, member, teach
from tests.support.browser import SIZES, at_size, axe_violations, log_in, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def reviewed_project() -> Project:
    """200 digits run with a teacher labelling by gold and 10% of the auto-decisions audited; then
    a second annotator disagrees with the teacher on the first labelled item, queued for review."""
    project = digits_project(200, look_ahead=20, params={"delta": 0.3}, audit_rate=0.1)
    teach(project, member(project, "teacher"))
    first = Item.objects.filter(project=project, status=Item.Status.LABELLED).order_by("seq").first()
    label_chosen(project, first.pk, member(project, "bob"), (first.gold + 1) % 10)
    request_review(first, Review.Reason.DISAGREEMENT)
    return project


def key_of(project: Project, value) -> str:
    return dict(class_buttons(project))[value]


@pytest.mark.parametrize("size", list(SIZES))
def test_a_reviewer_decides_a_disagreement_and_an_audit_with_the_keyboard(live_server, chromium_page, size):
    project = reviewed_project()
    reviewer = member(project, "rita", Membership.Role.REVIEWER)
    page = chromium_page
    at_size(page, size)
    log_in(page, live_server.url, "rita", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/review/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    disagreement = Review.objects.get(project=project, reason=Review.Reason.DISAGREEMENT)
    assert page.get_attribute("#queue-item", "data-review") == str(disagreement.pk)  # the oldest item first
    rows = page.locator("#opinions tr").all_inner_texts()
    assert [r.split("\t")[0] for r in rows[1:]] == ["teacher", "bob"]
    assert page.locator(".model-label").count() == 0
    screenshot(page, f"review/disagreement-{size}")
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size][0]
    gold = disagreement.item.gold
    page.keyboard.press(key_of(project, gold))
    moved_on = "(pk) => document.querySelector('#queue-item')?.dataset.review !== pk"
    wait_until(page, moved_on, str(disagreement.pk))
    page.wait_for_selector("#queue-item[data-ready='1']")
    assert page.get_attribute("#queue-item", "data-reason") == "audit"
    audit = Review.objects.get(pk=int(page.get_attribute("#queue-item", "data-review")))
    model_row = page.locator(".model-label").inner_text()
    assert model_row.split("\t") == ["the model", str(audit.item.prediction)]
    assert page.locator("#save-state .saved").inner_text() == f"✓ decided “{gold}”"
    screenshot(page, f"review/audit-{size}")
    page.keyboard.press(key_of(project, audit.item.gold))
    wait_until(page, moved_on, str(audit.pk))
    done = {r.pk: r for r in Review.objects.filter(pk__in=[disagreement.pk, audit.pk])}
    assert (done[disagreement.pk].value, done[disagreement.pk].decided_by) == (gold, reviewer)
    assert (done[audit.pk].value, done[audit.pk].decided_by) == (audit.item.gold, reviewer)
    assert done[audit.pk].decided_at is not None


def test_the_dashboard_shows_the_audit_estimate_and_annotator_quality(live_server, chromium_page):
    project = reviewed_project()
    rita = member(project, "rita", Membership.Role.REVIEWER)
    for review in Review.objects.filter(project=project):  # every review decided by gold
        decide(project, review.pk, rita, review.item.gold)
    member(project, "boss", Membership.Role.ADMIN)
    page = chromium_page
    log_in(page, live_server.url, "boss", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard")
    card = page.locator("#card-audit")
    card.wait_for()
    n_audits = Review.objects.filter(project=project, reason=Review.Reason.AUDIT).count()
    assert n_audits > 3
    assert f"from {n_audits} audits" in card.inner_text()
    assert "95% interval" in card.inner_text() and "importance-weighted estimate" in card.inner_text()
    assert page.locator("#m-audit").inner_text() != "–"
    quality = page.locator("#annotator-quality tr").all_inner_texts()
    teacher = next(r for r in quality if r.startswith("teacher")).split("\t")
    labelled = Item.objects.filter(project=project, status=Item.Status.LABELLED).count()
    assert teacher == ["teacher", "100.0%", str(labelled), "100.0%", "1"]
    bob = next(r for r in quality if r.startswith("bob")).split("\t")
    assert bob == ["bob", "0.0%", "1", "0.0%", "1"]
    page.locator("#card-audit").scroll_into_view_if_needed()
    screenshot(page, "review/dashboard-audit-quality")
    page.locator("#annotator-quality").screenshot(path=str(screenshot(page, "review/dashboard-full")
                                                           .with_name("dashboard-quality-table.png")))


@pytest.mark.parametrize("size", list(SIZES))
def test_the_review_page_has_no_serious_axe_violation(live_server, axe_page, size):
    project = reviewed_project()
    member(project, "rita", Membership.Role.REVIEWER)
    page = axe_page
    at_size(page, size)
    log_in(page, live_server.url, "rita", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/review/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    found = {"disagreement": axe_violations(page)}
    Review.objects.filter(project=project).update(decided_at="2026-01-01T00:00:00Z")
    page.goto(f"{live_server.url}/projects/{project.pk}/review/")
    assert page.get_attribute("#queue-item", "data-idle") == "reviewed"
    found["nothing to review"] = axe_violations(page)
    assert {name: v for name, v in found.items() if v} == {}
