"""Every opinion per item: the opinions export (CSV, JSONL), the API's
opinions and agreement answers and the dashboard's agreement, for the project's admins only."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

from annotator.labelling.annotation.actions import undo_last_label
from annotator.labelling.api import views
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Consensus, Item, Label, Membership
from annotator.labelling.teams import consensus
from harness.chosen_labels import label_chosen
from tests.support.app import member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db


@pytest.fixture
def team():
    """Two items labelled by "@evil" and "bob"; "@evil" then undid her label of item 1 and gave
    another. Returns the project, the admin's and an annotator's clients."""
    project = text_project(["t0", "t1"])
    items = list(Item.objects.filter(project=project).order_by("seq"))
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True)
    evil, bob = member(project, "@evil"), member(project, "bob")
    label_chosen(project, items[0].pk, evil, "ham")
    label_chosen(project, items[0].pk, bob, "spam")
    label_chosen(project, items[1].pk, evil, "ham")
    undo_last_label(project, evil)  # item 1 is leased back to her
    label_chosen(project, items[1].pk, evil, "spam")
    label_chosen(project, items[1].pk, bob, "spam")
    admin, annotator = Client(), Client()
    admin.force_login(member(project, "boss", Membership.Role.ADMIN))
    annotator.force_login(bob)
    return project, admin, annotator


def expected_rows(project) -> list[dict]:
    """The labels as stored, in label order, in the opinions' JSON form."""
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    labels = Label.objects.filter(project=project).order_by("id").select_related("item", "annotator")
    agreed = {c.item_id: c for c in Consensus.objects.filter(project=project).select_related("decided_by")}
    rows = []
    for lab in labels:
        c = agreed.get(lab.item_id)
        rows.append({
            "label_id": lab.pk, "item_id": lab.item_id, "seq": lab.item.seq,
            "annotator": lab.annotator.username, "role": roles.get(lab.annotator.username),
            "kind": lab.kind, "label": lab.value, "created": lab.created.isoformat(),
            "primary": lab.primary, "undone_at": lab.undone_at.isoformat() if lab.undone_at else None,
            "overlap_k": lab.item.overlap_k, "consensus": c and c.value, "consensus_status": c and c.status,
            "consensus_method": c and c.method, "consensus_by": c and c.decided_by and c.decided_by.username,
            "consensus_at": c and c.decided_at.isoformat()})
    return rows


def body(response) -> str:
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def test_the_opinions_export_carries_every_label_with_who_when_and_whether_it_stands(team):
    project, admin, annotator = team
    rows = expected_rows(project)
    assert len(rows) == 5 and [r["undone_at"] is not None for r in rows] == [False, False, True, False, False]
    assert [(r["seq"], r["annotator"], r["label"], r["primary"]) for r in rows] == [
        (0, "@evil", "ham", True), (0, "bob", "spam", False), (1, "@evil", "ham", False),
        (1, "@evil", "spam", True), (1, "bob", "spam", False)]
    jsonl = body(admin.get(f"/projects/{project.pk}/export/opinions.jsonl"))
    assert [json.loads(line) for line in jsonl.splitlines()] == rows

    cells = list(csv.DictReader(io.StringIO(body(admin.get(f"/projects/{project.pk}/export/opinions.csv")),
                                            newline="")))
    assert [c["annotator"] for c in cells] == ["'@evil", "bob", "'@evil", "'@evil", "bob"]  # formula-safe
    assert [c["role"] for c in cells] == ["annotator"] * 5
    assert [c["primary"] for c in cells] == ["True", "False", "False", "True", "False"]
    assert [c["undone_at"] for c in cells] == ["", "", rows[2]["undone_at"], "", ""]
    assert [int(c["label_id"]) for c in cells] == [r["label_id"] for r in rows]

    for fmt in ("csv", "jsonl"):  # annotators do not export
        assert annotator.get(f"/projects/{project.pk}/export/opinions.{fmt}").status_code == 403


def test_the_exports_and_the_api_carry_the_consensus_of_overlapped_items(team):
    project, admin, _ = team
    project.overlap_fraction, project.overlap_k = 1.0, 2
    project.save()
    from annotator.labelling.ingest import Record, import_records

    import_records(project, [Record("t2", "free cash"), Record("t3", "lunch at noon")])
    update_project(project.pk)  # decides both; overlapped with probability 1
    new = list(Item.objects.filter(project=project, seq__gte=2).order_by("seq"))
    assert all((i.overlap_k, i.overlap_prob) == (2, 1.0) for i in new if i.queried)
    Item.objects.filter(pk__in=[i.pk for i in new]).update(status=Item.Status.QUEUED, queried=True,
                                                           overlap_k=2)
    evil, bob = member(project, "@evil"), member(project, "bob")
    for item, (a, b) in zip(new, [("spam", "spam"), ("ham", "spam")], strict=True):
        label_chosen(project, item.pk, evil, a)
        label_chosen(project, item.pk, bob, b)
    update_project(project.pk)
    boss = member(project, "boss", Membership.Role.ADMIN)
    consensus.resolve(new[1], "ham", by=boss)
    rows = expected_rows(project)
    mine = [r for r in rows if r["seq"] >= 2]
    assert [(r["annotator"], r["label"], r["consensus"], r["consensus_status"], r["consensus_by"])
            for r in mine] == [("@evil", "spam", "spam", "agreed", None),
                               ("bob", "spam", "spam", "agreed", None),
                               ("@evil", "ham", "ham", "adjudicated", "boss"),
                               ("bob", "spam", "ham", "adjudicated", "boss")]
    assert all(r["overlap_k"] == 2 and r["role"] == "annotator" and r["kind"] == "opinion" for r in mine)
    assert all(r["consensus"] is None and r["overlap_k"] == 1 for r in rows if r["seq"] < 2)
    jsonl = body(admin.get(f"/projects/{project.pk}/export/opinions.jsonl"))
    assert [json.loads(line) for line in jsonl.splitlines()] == rows
    cells = list(csv.DictReader(io.StringIO(body(admin.get(f"/projects/{project.pk}/export/opinions.csv")),
                                            newline="")))
    assert [(c["consensus"], c["consensus_status"], c["consensus_method"], c["consensus_by"])
            for c in cells[-4:]] == [
        ("spam", "agreed", "majority", ""), ("spam", "agreed", "majority", ""),
        ("ham", "adjudicated", "adjudication", "boss"), ("ham", "adjudicated", "adjudication", "boss")]
    assert cells[-1]["consensus_at"] == rows[-1]["consensus_at"] != ""
    assert admin.get(f"/api/projects/{project.pk}/opinions").json()["opinions"] == rows
    assert consensus.values(project) == {new[0].pk: "spam", new[1].pk: "ham"}


def test_the_api_reads_the_opinions_a_page_at_a_time(team, monkeypatch):
    project, admin, annotator = team
    rows = expected_rows(project)
    monkeypatch.setattr(views, "OPINIONS_PAGE", 2)
    pages, after = [], 0
    while after is not None:
        answer = admin.get(f"/api/projects/{project.pk}/opinions", {"after": after}).json()
        pages.append(answer["opinions"])
        after = answer["next"]
    assert [len(p) for p in pages] == [2, 2, 1] and [r for p in pages for r in p] == rows
    token = Client().get(f"/api/projects/{project.pk}/opinions",
                         HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert token.json()["opinions"] == rows[:2]

    refused = annotator.get(f"/api/projects/{project.pk}/opinions")
    assert refused.status_code == 403 and refused.json() == {"error": "this is for the project's admins"}
    for bad in ("x", "-1"):
        wrong = admin.get(f"/api/projects/{project.pk}/opinions", {"after": bad})
        assert wrong.status_code == 400 and "after must be" in wrong.json()["error"]


def test_the_api_gives_the_agreement_of_the_opinions_that_stand(team):
    """Item 0: @evil ham, bob spam; item 1: @evil spam, bob spam (her undone ham does not count).
    Kappa: p_o = 1/2, marginals @evil (1 ham, 1 spam), bob (2 spam): p_e = 1/2, kappa = 0.
    Alpha: o_hs = o_sh = 1, o_ss = 2, n = 4, n_h = 1, n_s = 3: 1 - 3 * 2 / (2 * 3) = 0."""
    project, admin, annotator = team
    answer = admin.get(f"/api/projects/{project.pk}/agreement").json()
    assert answer == {"alpha": {"value": pytest.approx(0.0), "n_items": 2},
                      "pairs": [{"annotators": ["@evil", "bob"], "kappa": pytest.approx(0.0), "n_items": 2}]}
    assert annotator.get(f"/api/projects/{project.pk}/agreement").status_code == 403


def test_the_dashboard_shows_the_agreement_to_admins_only(team):
    project, admin, annotator = team
    panel = parse(admin.get(f"/projects/{project.pk}/dashboard/panel").content)
    assert " ".join(panel.by_id("agreement-alpha").text.split()) == (
        "Krippendorff's alpha (nominal): 0.000 (slight agreement) on 2 items with two or more opinions")
    rows = [[td.text for td in tr.find_all("td")] for tr in panel.by_id("agreement-pairs").find_all("tr")]
    assert rows == [[], ["@evil · bob", "0.000 slight", "2"]]  # the header row has th cells only

    project.dashboard_for_annotators = True
    project.save()
    for url in (f"/projects/{project.pk}/dashboard", f"/projects/{project.pk}/dashboard/panel"):
        page = parse(annotator.get(url).content)
        assert page.find_all(id="m-seen") and not page.find_all(id="agreement-alpha")
        assert not page.find_all(id="agreement-pairs")


@pytest.mark.parametrize("value,band", [(-0.308, "poor"), (-1.0, "poor"), (0.0, "slight"), (0.2, "slight"),
                                        (0.21, "fair"), (0.5, "moderate"), (0.61, "substantial"),
                                        (0.81, "almost perfect"), (1.0, "almost perfect"), (None, "")])
def test_agreement_bands_are_landis_and_koch(value, band):
    from annotator.labelling.teams.agreement import agreement_band

    assert agreement_band(value) == band
