"""Teams (docs/teams.md): the reviewer role and the review queue, honeypots (rate
and secrecy), the annotators' accuracy against gold and consensus, and the audit of the items the
model decided alone (sampling, the estimate and its coverage, the query ratio left alone)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.test import Client

from annotator.labelling.annotation.actions import lease_next, submit_label
from annotator.labelling.api.views import HIDDEN_FROM_MEMBERS
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Honeypot, Item, Label, LearnerState, Membership, Project, Review
from annotator.labelling.teams import consensus
from annotator.labelling.teams.audit_sampling import audit_estimate, audit_uniform
from annotator.labelling.teams.honeypots import candidates as honeypot_candidates
from annotator.labelling.teams.honeypots import served_floor
from annotator.labelling.teams.quality import accuracy_table, annotator_quality
from annotator.labelling.teams.reviews import request_review
from harness import honeypot_signals
from harness.chosen_labels import label_chosen
from harness.honeypot_signals import skeleton
from learners.evaluation.metrics import audit_accuracy
from tests.support.app import client_for, digits_project, leased_item_id, member, teach, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def cells(table) -> list[list[str]]:
    """The text of each cell of each row of ``table`` but the header."""
    return [[td.text for td in tr.find_all("td")] for tr in table.find_all("tr")[1:]]



# ---------------------------------------------------------------- the review queue and its roles


@pytest.fixture
def disagreement():
    """A text project whose item 0 two annotators labelled differently, queued for review."""
    project = text_project(["free cash now", "see you at lunch"])
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True, prediction="ham")
    item = Item.objects.get(project=project, seq=0)
    ann, bob = member(project, "ann"), member(project, "bob")
    label_chosen(project, item.pk, ann, "spam")
    label_chosen(project, item.pk, bob, "ham")
    review = request_review(item, Review.Reason.DISAGREEMENT)
    return project, item, review


def test_annotators_cannot_reach_the_review_queue(disagreement):
    project, _, review = disagreement
    annotator = client_for(member(project, "ann"))
    assert annotator.get(f"/projects/{project.pk}/review/").status_code == 403
    assert annotator.get(f"/projects/{project.pk}/review/next", **HX).status_code == 403
    answer = annotator.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"})
    assert answer.status_code == 403
    assert Review.objects.get(pk=review.pk).decided_at is None
    assert Client().get(f"/projects/{project.pk}/review/").status_code == 302  # login first


def test_reviewers_reach_only_their_projects(disagreement):
    project, _, review = disagreement
    other = text_project(["x"])
    reviewer = member(project, "rita", Membership.Role.REVIEWER)
    member(other, "ann")  # a project rita is not in
    rita = client_for(reviewer)
    page = rita.get(f"/projects/{project.pk}/review/")
    assert page.status_code == 200
    links = {a.attrs["href"] for a in parse(page.content).find_all("a")}
    assert f"/projects/{project.pk}/dashboard" not in links  # the dashboard is the admins' here
    assert rita.get(f"/projects/{other.pk}/review/").status_code == 404  # as for every page of it
    assert rita.post(f"/projects/{other.pk}/reviews/{review.pk}/decide", {"value": "spam"}).status_code == 404
    # a review of her project through another project's URL does not exist there
    member(other, "rita", Membership.Role.REVIEWER)
    assert rita.post(f"/projects/{other.pk}/reviews/{review.pk}/decide", {"value": "spam"}).status_code == 404
    # admins and staff review too; the project list links the queue for reviewers only
    boss = client_for(member(project, "boss", Membership.Role.ADMIN))
    assert boss.get(f"/projects/{project.pk}/review/").status_code == 200
    links = {a.attrs["href"] for a in parse(rita.get("/").content).find_all("a")}
    assert f"/projects/{project.pk}/review/" in links
    ann = client_for(member(project, "ann"))
    links = {a.attrs["href"] for a in parse(ann.get("/").content).find_all("a")}
    assert f"/projects/{project.pk}/review/" not in links


def test_the_review_panel_shows_each_label_and_records_the_final_decision(disagreement):
    project, item, review = disagreement
    reviewer = member(project, "rita", Membership.Role.REVIEWER)
    rita = client_for(reviewer)
    raw = rita.get(f"/projects/{project.pk}/review/").content
    queue_page = client_for(member(project, "ann")).get(f"/projects/{project.pk}/").content
    assert b"{#" not in raw and b"{#" not in queue_page  # template comments stay comments
    page = parse(raw)
    panel = page.find_all(id="queue-item")[0]
    assert panel.attrs["data-item"] == str(item.pk) and panel.attrs["data-reason"] == "disagreement"
    rows = cells(panel.find_all("table", id="opinions")[0])
    assert rows == [["ann", "spam"], ["bob", "ham"]]  # each one's label; no model label for a disagreement
    keys = {b.attrs.get("data-key"): b.attrs["value"] for b in panel.find_all("button")}
    assert keys == {"1": "ham", "2": "spam"}
    assert any("review.js" in s.attrs.get("src", "") for s in page.find_all("script"))  # the key script
    url = f"/projects/{project.pk}/reviews/{review.pk}/decide"
    assert rita.post(url, {"value": "nope"}, **HX).status_code == 400
    answer = rita.post(url, {"value": "spam"}, **HX)
    assert answer.status_code == 200
    done = Review.objects.get(pk=review.pk)
    assert (done.value, done.decided_by, done.decided_at is not None) == ("spam", reviewer, True)
    idle = parse(answer.content).find_all(id="queue-item")[0]
    assert idle.attrs["data-idle"] == "reviewed" and "decided “spam”" in idle.text
    # final: nobody decides it again
    boss = client_for(member(project, "boss", Membership.Role.ADMIN))
    assert boss.post(url, {"value": "ham"}, **HX).status_code == 409
    assert Review.objects.get(pk=review.pk).value == "spam"


def test_a_review_leased_to_one_reviewer_is_refused_to_another(disagreement):
    project, _, review = disagreement
    rita = member(project, "rita", Membership.Role.REVIEWER)
    rob = member(project, "rob", Membership.Role.REVIEWER)
    assert client_for(rita).get(f"/projects/{project.pk}/review/").status_code == 200  # leases it
    robs = client_for(rob)
    assert parse(robs.get(f"/projects/{project.pk}/review/").content).find_all(id="queue-item")[0] \
        .attrs["data-idle"] == "reviewed"
    url = f"/projects/{project.pk}/reviews/{review.pk}/decide"
    assert robs.post(url, {"value": "ham"}).status_code == 409


def test_a_disputed_overlapped_item_reaches_the_review_queue_and_the_decision_is_its_label():
    project = text_project(["free cash now", "lunch at noon"], overlap_k=2, overlap_fraction=1.0)
    update_project(project.pk)
    item = Item.objects.get(project=project, seq=0)
    ann, bob = member(project, "ann"), member(project, "bob")
    label_chosen(project, item.pk, ann, "spam")
    label_chosen(project, item.pk, bob, "ham")
    update_project(project.pk)  # the pipeline settles the item: one vote each, disputed
    assert consensus.disagreements(project).filter(item=item).exists()
    rita = client_for(member(project, "rita", Membership.Role.REVIEWER))
    panel = parse(rita.get(f"/projects/{project.pk}/review/").content).find_all(id="queue-item")[0]
    assert panel.attrs["data-item"] == str(item.pk) and panel.attrs["data-reason"] == "disagreement"
    assert sorted(cells(panel.find_all("table", id="opinions")[0])) == [["ann", "spam"], ["bob", "ham"]]
    review = Review.objects.get(pk=int(panel.attrs["data-review"]))
    rita.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"}, **HX)
    settled = item.consensus
    settled.refresh_from_db()
    assert (settled.status, settled.value, settled.decided_by.username) == ("adjudicated", "spam", "rita")
    primary = Label.objects.get(item=item, primary=True)
    assert (primary.annotator, primary.value) == (ann, "spam")  # the matching opinion is the label
    update_project(project.pk)
    assert Label.objects.get(pk=primary.pk).applied_version is not None  # the learner has it
    assert not consensus.disagreements(project).exists()
    quality = {r["name"]: r["consensus"]["accuracy"] for r in annotator_quality(project)}
    assert quality == {"ann": 1.0, "bob": 0.0}


# ---------------------------------------------------------------- annotator quality


def test_accuracy_table_against_a_hand_computed_table():
    opinions = [(1, "a", "x"), (2, "a", "y"), (3, "a", "x"), (1, "b", "x"), (3, "b", "y"), (4, "b", 3),
                (5, "c", "x")]
    truth = {1: "x", 2: "x", 3: "x", 4: "3"}  # "3" (a CSV cell) is the int class 3
    assert accuracy_table(opinions, truth) == {
        "a": {"correct": 2, "n": 3, "accuracy": 2 / 3},
        "b": {"correct": 2, "n": 3, "accuracy": 2 / 3},  # c labelled no item of the table: left out
    }


def test_annotator_quality_against_gold_and_consensus():
    project = digits_project(6)
    items = list(Item.objects.filter(project=project).order_by("seq"))
    Item.objects.filter(pk=items[5].pk).update(gold=None)
    gold = {it.pk: it.gold for it in items[:5]}
    a, b = member(project, "a"), member(project, "b")

    def label(item, user, value, **kw):
        Label.objects.create(item=item, project=project, annotator=user, value=value, **kw)

    wrong = lambda g: (g + 1) % 10  # noqa: E731
    # a: right on items 0-2, wrong on 3; b: right on 0, wrong on 1 and 4, and an undone label on 2
    for i, right in [(0, True), (1, True), (2, True), (3, False)]:
        label(items[i], a, gold[items[i].pk] if right else wrong(gold[items[i].pk]))
    for i, right in [(0, True), (1, False), (4, False)]:
        label(items[i], b, gold[items[i].pk] if right else wrong(gold[items[i].pk]), primary=False)
    label(items[2], b, gold[items[2].pk], primary=False, undone_at="2026-01-01T00:00:00Z")
    # the settled class of item 5 (no gold): a reviewer decided 7; a said 7, b said 2
    label(items[5], a, 7)
    label(items[5], b, 2, primary=False)
    consensus.resolve(items[5], 7, by=member(project, "rita", Membership.Role.REVIEWER))
    table = {row["name"]: row for row in annotator_quality(project)}
    assert table["a"]["gold"] == {"correct": 3, "n": 4, "accuracy": 0.75}
    assert table["b"]["gold"] == {"correct": 1, "n": 3, "accuracy": 1 / 3}
    assert table["a"]["consensus"] == {"correct": 1, "n": 1, "accuracy": 1.0}
    assert table["b"]["consensus"] == {"correct": 0, "n": 1, "accuracy": 0.0}
    # on the dashboard, for admins only (with the number of items behind each figure)
    boss = client_for(member(project, "boss", Membership.Role.ADMIN))
    page = parse(boss.get(f"/projects/{project.pk}/dashboard").content)
    rows = page.find_all("table", id="annotator-quality")
    assert cells(rows[0]) == [["a", "75.0%", "4", "100.0%", "1"], ["b", "33.3%", "3", "0.0%", "1"]]
    Project.objects.filter(pk=project.pk).update(dashboard_for_annotators=True)
    page = client_for(a).get(f"/projects/{project.pk}/dashboard")
    assert page.status_code == 200 and not parse(page.content).find_all(id="annotator-quality")


# ---------------------------------------------------------------- honeypots


@pytest.fixture
def stream_with_gold():
    """1400 digits, the stream run (a teacher labelling by gold) until 250 items were decided
    alone, then a larger delta and look-ahead: 500 queued items wait for annotators, with about
    190 items decided alone among them (the candidates for honeypots between the queued ones)."""
    project = digits_project(1400, look_ahead=20, params={"delta": 0.3})
    teach(project, member(project, "teacher"), until_auto=250)
    Project.objects.filter(pk=project.pk).update(look_ahead=500, params={"delta": 1.0})
    project.refresh_from_db()
    update_project(project.pk)
    return project


def test_honeypots_are_seeded_at_the_rate_where_they_fit_the_order():
    """A stream querying 30% of the items at random (items decided alone between the queued ones,
    as a real stream leaves them). Each lease draws a honeypot with the rate when an item decided
    alone lies between the newest item the annotator was shown and the next queued one, and never
    otherwise (a honeypot out of that order would tell itself by its id)."""
    project = digits_project(1200, look_ahead=400, params={"delta": 1.0, "query": "random", "p": 0.3})
    update_project(project.pk)
    Project.objects.filter(pk=project.pk).update(honeypot_rate=0.25)
    project.refresh_from_db()
    served = honeypots = fitting = 0
    for name in ("h1", "h2", "h3"):
        user = member(project, name)
        shown: list[int] = []
        for _ in range(100):
            front = Item.objects.filter(project=project).waiting().order_by("seq").first()
            fits = honeypot_candidates(project, user).filter(
                seq__gt=served_floor(project, user), seq__lt=front.seq).exists()
            item = lease_next(project, user)
            assert item is not None
            is_honeypot = Honeypot.objects.filter(item=item, annotator=user, label__isnull=True).exists()
            assert is_honeypot == (item.status == Item.Status.AUTO)  # never a queued item, never a real one
            assert fits or not is_honeypot
            assert not shown or item.pk > max(shown)  # honeypots included, the ids rise
            shown.append(item.pk)
            served, honeypots, fitting = served + 1, honeypots + is_honeypot, fitting + fits
            submit_label(project, item.pk, user, item.gold)
    assert fitting > 150, "the stream leaves room for honeypots at most leases"
    sd = math.sqrt(fitting * 0.25 * 0.75)
    assert abs(honeypots - 0.25 * fitting) < 4.5 * sd, (honeypots, fitting, served)
    # a honeypot is never served twice to one annotator, and its answers never reach the learner
    assert Honeypot.objects.filter(project=project).count() == honeypots
    answers = Label.objects.filter(honeypot__isnull=False)
    assert answers.count() == honeypots and not answers.filter(primary=True).exists()
    statuses = set(Item.objects.filter(honeypots__isnull=False).values_list("status", flat=True))
    assert statuses == {Item.Status.AUTO}


def test_honeypots_are_secret_on_the_page_and_in_the_api(stream_with_gold):
    project = stream_with_gold
    user = member(project, "ann")
    ann = client_for(user)
    page = ann.get(f"/projects/{project.pk}/")
    first = int(parse(page.content).find_all(id="queue-item")[0].attrs["data-item"])
    assert Item.objects.get(pk=first).status == Item.Status.LEASED
    answer = ann.post(f"/projects/{project.pk}/items/{first}/label", {"value": "3"}, **HX)
    second = int(parse(answer.content).find_all(id="queue-item")[0].attrs["data-item"])
    Project.objects.filter(pk=project.pk).update(honeypot_rate=0.5)
    for _ in range(100):  # label real items until the next one served is a honeypot
        normal_panel, normal_pk = answer.content, second
        answer = ann.post(f"/projects/{project.pk}/items/{second}/label", {"value": "3"}, **HX)
        second = int(parse(answer.content).find_all(id="queue-item")[0].attrs["data-item"])
        if Honeypot.objects.filter(item_id=second, annotator=user).exists():
            break
    else:
        pytest.fail("no honeypot served in 100 items at a rate of 0.5")
    honeypot_panel = answer.content
    assert Item.objects.get(pk=second).status == Item.Status.AUTO
    # while the project serves honeypots the waiting count is the annotators' snapshot, the same on
    # the project list (tests/teams/test_annotator_figures.py; live, one fewer: as if leased)
    waiting = int(parse(honeypot_panel).find_all(id="waiting")[0].text)
    assert waiting == int(parse(ann.get("/").content).find("b", class_="waiting").text)
    # the page: the same panel as a queued item's, nothing naming gold or honeypots
    assert skeleton(honeypot_panel, second) == skeleton(normal_panel, normal_pk)
    text = honeypot_panel.decode().lower()
    assert "honeypot" not in text and "gold" not in text
    # the API: no decision field for the annotator's session, as for every item
    api = ann.get(f"/api/projects/{project.pk}/items?ids={second},{normal_pk}").json()["items"]
    assert [{k: v for k, v in row.items() if k not in ("id", "seq")} for row in api] == [
        dict.fromkeys(HIDDEN_FROM_MEMBERS)] * 2
    total_before = int(parse(honeypot_panel).find_all(id="progress")[0].find_all("b")[1].text)
    answer = ann.post(f"/projects/{project.pk}/items/{second}/label", {"value": "3"}, **HX)
    panel = parse(answer.content)
    assert int(panel.find_all(id="progress")[0].find_all("b")[1].text) == total_before + 1
    assert panel.find_all("button", **{"data-key": "u"}), "an answered honeypot can be undone like a label"
    # undo gives the honeypot back, as undo gives a leased item back
    back = ann.post(f"/projects/{project.pk}/undo", **HX)
    assert parse(back.content).find_all(id="queue-item")[0].attrs["data-item"] == str(second)
    assert Honeypot.objects.get(item_id=second, annotator=user).label is None
    # the admins' session sees the truth
    boss = client_for(member(project, "boss", Membership.Role.ADMIN))
    assert boss.get(f"/api/projects/{project.pk}/items?ids={second}").json()["items"][0]["status"] == "auto"


def test_no_signal_an_annotator_collects_tells_honeypots_apart(stream_with_gold):
    """As an annotator would: for each item served, every signal they can collect
    (:mod:`harness.honeypot_signals`: the panel's structure, their API row and a reviewer's, their
    item-browser row, the answers to a label and its repeat, the row of their answer in "My last
    labels", how the waiting count moved, the id's place in the order, a colleague's label on the
    item they hold); no signal takes a value on a honeypot that no real item shows."""
    project = stream_with_gold
    Project.objects.filter(pk=project.pk).update(honeypot_rate=0.5, items_for_annotators=True,
                                                 show_prediction=True)
    user = member(project, "probe")
    reviewer = client_for(member(project, "rev", Membership.Role.REVIEWER))
    colleague = client_for(member(project, "colleague"))
    signals = honeypot_signals.collect(project, user, client_for(user), reviewer, steps=40,
                                       colleague=colleague)
    assert signals.gold and signals.real, "both kinds served"
    assert signals.separating() == {}


def test_skipping_a_honeypot_closes_it(stream_with_gold):
    project = stream_with_gold
    Project.objects.filter(pk=project.pk).update(honeypot_rate=0.5)
    project.refresh_from_db()
    user = member(project, "ann")
    for _ in range(100):
        item = lease_next(project, user)
        if item.status == Item.Status.AUTO:
            break
        submit_label(project, item.pk, user, item.gold)
    ann = client_for(user)
    assert ann.post(f"/projects/{project.pk}/items/{item.pk}/skip", **HX).status_code == 200
    assert not Honeypot.objects.filter(item=item, annotator=user).exists()
    Project.objects.filter(pk=project.pk).update(honeypot_rate=0.0)
    assert lease_next(project, user).pk != item.pk


# ---------------------------------------------------------------- the audit of auto-decisions


def test_audit_draws_are_logged_and_leave_the_learner_alone():
    plain = digits_project(400, look_ahead=20, params={"delta": 0.3}, name="plain")
    audited = digits_project(400, look_ahead=20, params={"delta": 0.3}, name="audited", audit_rate=0.3,
                             budget_ratio=0.3)
    Project.objects.filter(pk=plain.pk).update(budget_ratio=0.3)
    plain.refresh_from_db()
    teach(plain, member(plain, "t"))
    teach(audited, member(audited, "t"))
    fields = ("seq", "status", "prediction", "query_prob", "queried")
    assert list(Item.objects.filter(project=plain).order_by("seq").values_list(*fields)) == \
        list(Item.objects.filter(project=audited).order_by("seq").values_list(*fields))
    states = [LearnerState.objects.get(project=p) for p in (plain, audited)]
    assert states[0].n_queried == states[1].n_queried > 0
    assert states[0].budget_state == states[1].budget_state  # the budget controller saw the same stream
    auto = Item.objects.filter(project=audited, status=Item.Status.AUTO)
    assert auto.exists() and not auto.filter(audit_prob__isnull=True).exists()
    assert not Item.objects.filter(project=audited, queried=True, audit_prob__isnull=False).exists()
    reviews = Review.objects.filter(project=audited, reason=Review.Reason.AUDIT)
    expected = {pk for pk, seq in auto.values_list("pk", "seq") if audit_uniform(audited.rng_seed, seq) < 0.3}
    assert set(reviews.values_list("item_id", flat=True)) == expected
    assert set(reviews.values_list("sample_prob", flat=True)) == {0.3}
    n, k = auto.count(), len(expected)
    assert abs(k - 0.3 * n) < 4.5 * math.sqrt(n * 0.3 * 0.7)


def test_audit_estimate_from_the_reviewers_decisions():
    project = digits_project(500, look_ahead=20, params={"delta": 0.3}, audit_rate=0.5)
    teach(project, member(project, "t"), until_auto=60)
    Project.objects.filter(pk=project.pk).update(audit_rate=0.2)  # the rate changes: probabilities vary
    project.refresh_from_db()
    teach(project, member(project, "t"))
    reviewer = member(project, "rita", Membership.Role.REVIEWER)
    rita = client_for(reviewer)
    page = parse(rita.get(f"/projects/{project.pk}/review/").content).find_all(id="queue-item")[0]
    assert page.attrs["data-reason"] == "audit"
    model_row = page.find_all("tr", class_="model-label")[0]
    review = Review.objects.get(pk=int(page.attrs["data-review"]))
    assert [td.text for td in model_row.find_all("td")] == ["the model", str(review.item.prediction)]
    for review in Review.objects.filter(project=project).order_by("item__seq"):  # decide by gold
        answer = rita.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": review.item.gold})
        assert answer.status_code == 302
    est = audit_estimate(project)
    rows = list(Review.objects.filter(project=project)
                .values_list("value", "item__prediction", "sample_prob"))
    assert {p for _, _, p in rows} == {0.5, 0.2}
    w = np.array([1 / p for _, _, p in rows])
    c = np.array([v == pred for v, pred, _ in rows])
    assert est["value"] == pytest.approx(float((w * c).sum() / w.sum()))
    assert est["n"] == len(rows) and est["open"] == 0
    assert est["covers"] == Item.objects.filter(project=project, status=Item.Status.AUTO).count()
    assert est["low"] <= est["value"] <= est["high"]
    boss = client_for(member(project, "boss", Membership.Role.ADMIN))
    card = parse(boss.get(f"/projects/{project.pk}/dashboard").content).find_all(id="card-audit")[0]
    assert f"{est['value'] * 100:.1f}%" in card.text and f"from {len(rows)} audits" in card.text


def test_the_audit_estimate_stops_at_the_first_open_audit():
    project = digits_project(300, look_ahead=20, params={"delta": 0.3}, audit_rate=0.3)
    teach(project, member(project, "t"))
    reviews = list(Review.objects.filter(project=project).order_by("item__seq"))
    assert len(reviews) > 4
    for r in reviews[:3]:
        Review.objects.filter(pk=r.pk).update(value=r.item.gold, decided_at="2026-01-01T00:00:00Z")
    est = audit_estimate(project)
    assert est["n"] == 3 and est["open"] == len(reviews) - 3
    assert est["covers"] == Item.objects.filter(project=project, status=Item.Status.AUTO,
                                                seq__lt=reviews[3].item.seq).count()


def test_audit_accuracy_small_cases():
    assert audit_accuracy(np.array([], dtype=bool), np.array([])).value is None
    est = audit_accuracy(np.array([True, False, True, True]), np.full(4, 0.5))
    assert est.value == 0.75  # equal probabilities: the plain mean
    every = audit_accuracy(np.ones(20, dtype=bool), np.full(20, 0.1))
    assert every.value == 1.0 and every.high == 1.0 and every.low < 0.95  # not an empty interval
    weighted = audit_accuracy(np.array([True, False]), np.array([0.5, 0.1]))
    assert weighted.value == pytest.approx(2 / 12)  # weights 2 and 10
    with pytest.raises(ValueError):
        audit_accuracy(np.array([True]), np.array([0.0]))


def simulated_coverage(seed: int) -> bool:
    """One seeded stream of 3000 auto-decisions whose accuracy drifts (0.7 then 0.95) while the
    audit rate changes (0.1 then 0.03): does the 95% interval cover the true accuracy?"""
    rng = np.random.default_rng(seed)
    n = 3000
    accuracy = np.where(np.arange(n) < n // 2, 0.7, 0.95)
    correct = rng.random(n) < accuracy
    prob = np.where(np.arange(n) < n // 2, 0.1, 0.03)
    audited = rng.random(n) < prob
    est = audit_accuracy(correct[audited], prob[audited])
    return est.low <= correct.mean() <= est.high


def test_the_audit_interval_covers_the_true_accuracy_in_about_95_percent_of_streams():
    seeds = 200
    covered = sum(simulated_coverage(seed) for seed in range(seeds))
    tolerance = 3 * math.sqrt(0.95 * 0.05 / seeds)  # three binomial standard deviations
    assert abs(covered / seeds - 0.95) <= tolerance, covered


def test_the_api_gives_reviews_to_reviewers_and_quality_to_admins(disagreement):
    project, item, review = disagreement
    rita = client_for(member(project, "rita", Membership.Role.REVIEWER))
    ann = client_for(member(project, "ann"))
    other = text_project(["y"])
    member(other, "rita", Membership.Role.REVIEWER)
    assert ann.get(f"/api/projects/{project.pk}/reviews").status_code == 403
    assert ann.get(f"/api/projects/{project.pk}/quality").status_code == 403
    assert rita.get(f"/api/projects/{project.pk}/quality").status_code == 403  # admins only
    outsider = client_for(member(other, "olga", Membership.Role.REVIEWER))
    assert outsider.get(f"/api/projects/{project.pk}/reviews").status_code == 404
    rita.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"})
    answer = rita.get(f"/api/projects/{project.pk}/reviews")
    assert answer.status_code == 200
    [row] = answer.json()["reviews"]
    assert {k: row[k] for k in ("review_id", "item_id", "reason", "value", "decided_by", "model_label")} == {
        "review_id": review.pk, "item_id": item.pk, "reason": "disagreement", "value": "spam",
        "decided_by": "rita", "model_label": None}
    assert answer.json()["next"] is None
    assert rita.get(f"/api/projects/{project.pk}/reviews?after=x").status_code == 400
    token = {"HTTP_AUTHORIZATION": f"Token {project.api_token}"}
    figures = Client().get(f"/api/projects/{project.pk}/quality", **token).json()
    assert figures["audit"]["n"] == 0
    assert figures["annotators"] == [  # no gold in the text project; the reviewer settled item 0 as spam
        {"name": "ann", "gold": None, "consensus": {"correct": 1, "n": 1, "accuracy": 1.0}},
        {"name": "bob", "gold": None, "consensus": {"correct": 0, "n": 1, "accuracy": 0.0}}]


def test_the_console_sets_the_audit_and_honeypot_rates_within_their_bounds():
    project = text_project(["x"])
    boss = client_for(member(project, "boss", Membership.Role.ADMIN))
    url = f"/projects/{project.pk}/console"
    too_many = boss.post(url, {"action": "settings", "stream_state": "running", "honeypot_rate": "0.6"})
    assert too_many.status_code == 400 and b"honeypot_rate must be" in too_many.content
    assert boss.post(url, {"action": "settings", "stream_state": "running", "audit_rate": "0.05",
                           "honeypot_rate": "0.1"}).status_code == 302
    project.refresh_from_db()
    assert (project.audit_rate, project.honeypot_rate) == (0.05, 0.1)
    assert {c.field for c in project.changes.all()} >= {"audit_rate", "honeypot_rate"}  # in the history
    boss.post(url, {"action": "settings", "stream_state": "paused"})  # a form without them keeps them
    project.refresh_from_db()
    assert (project.stream_state, project.audit_rate, project.honeypot_rate) == ("paused", 0.05, 0.1)


@pytest.mark.slow
def test_a_reviewers_decision_reaches_the_learner_through_a_real_worker(transactional_db, tmp_path):
    from annotator.labelling.worker.send import items_changed
    from tests.support.app import Worker

    project = text_project(["free cash now", "lunch at noon"], overlap_k=2, overlap_fraction=1.0)
    worker = Worker(tmp_path / "worker.log")
    try:
        items_changed(project.pk)
        worker.wait_for(lambda: Item.objects.filter(project=project, status=Item.Status.QUEUED).count() == 2,
                        60, "the worker to queue both items")
        item = Item.objects.get(project=project, seq=0)
        for name, value in (("ann", "spam"), ("bob", "ham")):  # each is offered the item, labels it
            person = client_for(member(project, name))
            assert leased_item_id(person.get(f"/projects/{project.pk}/")) == item.pk
            answer = person.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": value})
            assert answer.status_code == 302
        worker.wait_for(lambda: consensus.disagreements(project).filter(item=item).exists(), 60,
                        "the worker to find the item disputed")
        version = LearnerState.objects.get(project=project).version
        rita = client_for(member(project, "rita", Membership.Role.REVIEWER))
        panel = parse(rita.get(f"/projects/{project.pk}/review/").content).find_all(id="queue-item")[0]
        assert panel.attrs["data-item"] == str(item.pk)
        rita.post(f"/projects/{project.pk}/reviews/{panel.attrs['data-review']}/decide", {"value": "spam"})
        primary = Label.objects.get(item=item, primary=True)
        worker.wait_for(lambda: Label.objects.get(pk=primary.pk).applied_version is not None, 60,
                        "the worker to apply the reviewer's decision")
        assert LearnerState.objects.get(project=project).version > version  # a new model version
        assert primary.value == "spam" and primary.annotator.username == "ann"
    finally:
        worker.stop()
