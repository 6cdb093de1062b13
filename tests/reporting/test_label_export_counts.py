"""The labels export (README "Labels download", docs/formats.md) counts what the dashboard counts:
by default the standing labels only, each row saying what it is (``kind``: opinion,
adjudication, honeypot; ``undone_at``); ``undone=include`` adds the undone ones. The same in CSV,
JSONL, Parquet (console links and API) and the Prodigy tasks."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import pytest
from django.test import Client

from annotator.labelling.models import Honeypot, Item, Label, Membership, Review
from annotator.labelling.teams.reviews import request_review
from harness.chosen_labels import lease_chosen, user_of
from tests.support.app import client_for, member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db



def content(response) -> bytes:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


@pytest.fixture
def team():
    """Annotator ``a`` labelled item 0, undid it and labelled it again (undo + relabel) and labelled
    item 1; ``b`` labelled item 2 and answered a honeypot (item 3); reviewer ``rev`` overturned
    a's label of item 1 with a class nobody gave (an adjudication). All through the pages."""
    project = text_project(["free cash now", "lunch at noon", "win a prize", "see you at six"])
    items = list(Item.objects.filter(project=project).order_by("seq"))
    Item.objects.filter(pk__in=[i.pk for i in items[:3]]).update(status=Item.Status.QUEUED, queried=True)
    Item.objects.filter(pk=items[3].pk).update(status=Item.Status.AUTO, queried=False, gold="ham",
                                               prediction="ham")
    a, b = member(project, "a"), member(project, "b")
    rev = member(project, "rev", Membership.Role.REVIEWER)
    boss = member(project, "boss", Membership.Role.ADMIN)
    ca, cb, crev = client_for(a), client_for(b), client_for(rev)

    def label(client: Client, item: Item, value: str) -> None:  # a form post: no next item leased
        lease_chosen(project, item.pk, user_of(client))  # offered to them (the queue offers the oldest)
        answer = client.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": value})
        assert answer.status_code == 302, answer.content

    label(ca, items[0], "spam")
    assert ca.post(f"/projects/{project.pk}/undo").status_code == 302
    label(ca, items[0], "ham")
    label(ca, items[1], "ham")
    label(cb, items[2], "spam")
    Honeypot.objects.create(project=project, item=items[3], annotator=b)
    label(cb, items[3], "spam")
    review = request_review(items[1], Review.Reason.DISAGREEMENT)  # queued by hand
    crev.get(f"/projects/{project.pk}/review/")  # leases it
    decided = crev.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"})
    assert decided.status_code == 302
    return project, client_for(boss)


def dashboard_counts(admin: Client, project) -> dict[str, tuple[int, int]]:
    """Per annotator on the dashboard: (labels, review decisions)."""
    page = parse(admin.get(f"/projects/{project.pk}/dashboard").content)
    table = page.find_all("table", id="annotator-labels")[0]
    return {tr.find_all("td")[0].text: (int(tr.find_all("td")[1].text), int(tr.find_all("td")[2].text))
            for tr in table.find_all("tr")[1:]}


def rows_of(admin: Client, project, fmt: str, query: str = "", api: bool = False) -> list[dict]:
    """The labels export's rows in ``fmt`` (csv, jsonl, parquet), as dicts."""
    url = (f"/api/projects/{project.pk}/labels?format={fmt}&{query}" if api
           else f"/projects/{project.pk}/export/labels.{fmt}?{query}")
    data = content(admin.get(url))
    if fmt == "csv":
        cells = csv.DictReader(io.StringIO(data.decode(), newline=""))
        return [{k: (v or None) for k, v in r.items()} for r in cells]
    if fmt == "jsonl":
        return [json.loads(line) for line in data.decode().splitlines()]
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data)).to_pylist()


def test_the_labels_export_counts_what_the_dashboard_counts_and_says_what_each_row_is(team):
    project, admin = team
    dashboard = dashboard_counts(admin, project)
    assert dashboard == {"a": (2, 0), "b": (2, 0), "rev": (0, 1)}
    for fmt in ("csv", "jsonl", "parquet"):
        for api in (False, True):
            rows = rows_of(admin, project, fmt, api=api)
            opinions = Counter(r["annotator"] for r in rows if r["kind"] != "adjudication")
            decisions = Counter(r["annotator"] for r in rows if r["kind"] == "adjudication")
            assert {n: (opinions[n], decisions[n]) for n in dashboard} == dashboard, (fmt, api)
            assert all(r["undone_at"] is None for r in rows), (fmt, api)
            assert sorted((r["annotator"], r["kind"]) for r in rows) == [
                ("a", "opinion"), ("a", "opinion"), ("b", "honeypot"), ("b", "opinion"),
                ("rev", "adjudication")], (fmt, api)
    prodigy = content(admin.get(f"/projects/{project.pk}/export/labels.prodigy.jsonl")).decode().splitlines()
    assert Counter(json.loads(t)["_annotator_id"] for t in prodigy) == {"a": 2, "b": 2, "rev": 1}


def test_undone_include_adds_the_undone_labels_marked_so(team):
    project, admin = team
    undone = Label.objects.get(annotator__username="a", undone_at__isnull=False)
    for fmt in ("csv", "jsonl", "parquet"):
        standing = rows_of(admin, project, fmt)
        every = rows_of(admin, project, fmt, "undone=include")
        assert len(every) == len(standing) + 1, fmt
        [extra] = [r for r in every if r["undone_at"] is not None]
        assert (extra["annotator"], extra["label"], extra["kind"], str(extra["primary"])) == (
            "a", "spam", "opinion", "False"), fmt
        when = extra["undone_at"]
        assert (when if fmt == "parquet" else when.replace("Z", "+00:00")) in (
            undone.undone_at, undone.undone_at.isoformat()), fmt
        assert rows_of(admin, project, fmt, "undone=exclude") == standing
    assert len(rows_of(admin, project, "jsonl", "undone=include", api=True)) == 6


@pytest.mark.parametrize("url", ["/projects/{pk}/export/labels.csv?undone=yes",
                                 "/api/projects/{pk}/labels?format=jsonl&undone=all",
                                 "/projects/{pk}/export/labels.prodigy.jsonl?undone=include",
                                 "/api/projects/{pk}/labels?format=prodigy&undone=include"])
def test_a_bad_undone_option_is_refused_with_a_clear_400(team, url):
    project, admin = team
    answer = admin.get(url.format(pk=project.pk))
    assert answer.status_code == 400
    assert "undone" in answer.content.decode()
