"""Review: a reviewer undoes their latest decision (the review comes back to them, and a new
decision replaces the old one); with the project's blind review the panel hides who gave each
label (docs/teams.md, "Review"). Through the Django test client, and in Chromium by keyboard."""

from __future__ import annotations

import pytest

from annotator.labelling.models import Consensus, Item, Membership, Project, Review
from annotator.labelling.teams.reviews import request_review
from harness.chosen_labels import label_chosen
from tests.support.app import client_for, member, text_project
from tests.support.browser import SIZES, at_size, log_in, screenshot, wait_until
from tests.support.html import parse

HX = {"HTTP_HX_REQUEST": "true"}


def _disagreement() -> tuple[Project, Item, Review]:
    project = text_project(["free cash now", "see you at lunch"])
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True, prediction="ham")
    item = Item.objects.get(project=project, seq=0)
    label_chosen(project, item.pk, member(project, "ann"), "spam")
    label_chosen(project, item.pk, member(project, "bob"), "ham")
    return project, item, request_review(item, Review.Reason.DISAGREEMENT)



def _opinions(html: bytes) -> list[list[str]]:
    table = parse(html).find_all("table", id="opinions")[0]
    return [[td.text for td in tr.find_all("td")] for tr in table.find_all("tr")[1:]]


@pytest.mark.django_db
def test_a_reviewer_undoes_the_last_decision_and_decides_again():
    project, item, review = _disagreement()
    rita = client_for(member(project, "rita", Membership.Role.REVIEWER))
    undo = f"/projects/{project.pk}/review/undo"
    assert rita.post(undo, **HX).status_code == 409  # nothing decided yet
    page = rita.get(f"/projects/{project.pk}/review/")
    assert b"Undo my last decision" not in page.content
    decided = rita.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"}, **HX)
    assert b"Undo my last decision" in decided.content
    assert Consensus.objects.get(item=item).value == "spam"
    answer = rita.post(undo, **HX)
    assert answer.status_code == 200
    panel = parse(answer.content).find_all(id="queue-item")[0]
    assert panel.attrs["data-review"] == str(review.pk)  # back on screen, leased to her
    reopened = Review.objects.get(pk=review.pk)
    assert (reopened.value, reopened.decided_by, reopened.decided_at) == (None, None, None)
    # another reviewer cannot take it meanwhile
    rob = client_for(member(project, "rob", Membership.Role.REVIEWER))
    assert rob.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "ham"}).status_code == 409
    # her new decision replaces the old one as the item's label
    again = rita.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "ham"}, **HX)
    assert again.status_code == 200
    assert Review.objects.get(pk=review.pk).value == "ham"
    assert Consensus.objects.get(item=item).value == "ham"
    # another reviewer's decision is not hers to undo
    assert rob.post(undo, **HX).status_code == 409


@pytest.mark.django_db
def test_blind_review_hides_the_annotators_names_and_is_a_console_setting():
    project, _, _ = _disagreement()
    rita = client_for(member(project, "rita", Membership.Role.REVIEWER))
    assert _opinions(rita.get(f"/projects/{project.pk}/review/").content) == [["ann", "spam"], ["bob", "ham"]]
    admin = client_for(member(project, "boss", Membership.Role.ADMIN))
    console = parse(admin.get(f"/projects/{project.pk}/console").content)
    assert console.find("input", name="blind_review").attrs["type"] == "checkbox"
    Project.objects.filter(pk=project.pk).update(blind_review=True)
    page = rita.get(f"/projects/{project.pk}/review/").content
    assert _opinions(page) == [["annotator 1", "spam"], ["annotator 2", "ham"]]
    assert b">ann<" not in page and b"bob" not in page


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("size", list(SIZES))
def test_blind_review_and_undo_by_keyboard(live_server, chromium_page, size):
    project, _, review = _disagreement()
    Project.objects.filter(pk=project.pk).update(blind_review=True)
    member(project, "rita", Membership.Role.REVIEWER)
    page = chromium_page
    at_size(page, size)
    log_in(page, live_server.url, "rita", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/review/")
    page.wait_for_selector("#queue-item[data-ready='1']")
    assert page.locator("#opinions").inner_text().split() == ["who", "label", "annotator", "1", "spam",
                                                              "annotator", "2", "ham"]
    screenshot(page, f"review/blind-{size}")
    page.keyboard.press("2")  # spam
    page.wait_for_selector("#queue-item[data-idle='reviewed']")
    assert Review.objects.get(pk=review.pk).value == "spam"
    page.wait_for_selector("#queue-item[data-ready='1']")
    page.keyboard.press("Backspace")  # undo: the review comes back
    wait_until(page, "(pk) => document.querySelector('#queue-item')?.dataset.review === pk", str(review.pk))
    assert Review.objects.get(pk=review.pk).decided_at is None
    page.wait_for_selector("#queue-item[data-ready='1']")
    page.keyboard.press("1")  # ham this time
    page.wait_for_selector("#queue-item[data-idle='reviewed']")
    assert Review.objects.get(pk=review.pk).value == "ham"
    screenshot(page, f"review/undone-and-redecided-{size}")
