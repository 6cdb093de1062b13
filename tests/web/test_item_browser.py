"""The item browser (docs/dataset.md): every item reachable once by keyset pages, its search and
filters pick the right items, bad input (an unknown filter or value, a page past the end) gets a
clear 4xx, annotators only where the project allows and never see honeypots or audits."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from annotator.labelling.annotation.actions import lease_next
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Honeypot, Item, Label, Membership
from annotator.labelling.reporting.item_browser import BANDS, PAGE_SIZE
from harness.chosen_labels import label_chosen
from tests.support.app import digits_project, member, teach, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def _seqs(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [int(s) for s in re.findall(r'<td data-label="#">(\d+)</td>', response.content.decode())]


def _next(response) -> str | None:
    found = re.search(r'href="([^"]+)" id="next-page"', response.content.decode())
    return found.group(1).replace("&amp;", "&") if found else None


def _admin(project) -> Client:
    client = Client()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    return client


def _walk(client: Client, url: str) -> list[int]:
    seqs: list[int] = []
    while url:
        response = client.get(url)
        page = _seqs(response)
        assert len(page) <= PAGE_SIZE
        seqs += page
        url = _next(response)
    return seqs


def test_keyset_pages_reach_every_item_once_in_order():
    project = digits_project(2 * PAGE_SIZE + 7)
    seqs = _walk(_admin(project), f"/projects/{project.pk}/items/")
    assert seqs == list(range(2 * PAGE_SIZE + 7))


def test_filters_pick_the_right_items():
    project = digits_project(90, params={"delta": 0.3}, look_ahead=4)
    teach(project, member(project, "ann"), until_auto=10)
    client = _admin(project)
    base = f"/projects/{project.pk}/items/"
    items = list(Item.objects.filter(project=project).order_by("seq"))
    labelled = set(Label.objects.filter(project=project, primary=True).values_list("item__seq", flat=True))

    assert _walk(client, base + "?status=auto") == [i.seq for i in items if i.status == "auto"]
    assert _walk(client, base + "?provenance=human") == sorted(labelled)
    assert _walk(client, base + "?provenance=pending") == [i.seq for i in items if i.status == "pending"]
    common = max(project.classes, key=lambda c: sum(i.prediction == c for i in items))
    predicted = [i.seq for i in items if i.prediction == common]
    assert predicted and _walk(client, base + f"?predicted={common}") == predicted
    low, high = BANDS["mid"]
    mid = [i.seq for i in items if i.score is not None and low <= abs(i.score) < high]
    assert _walk(client, base + "?confidence=mid") == mid
    wrong = sorted(seq for seq, v, p in Label.objects.filter(project=project, primary=True)
                   .values_list("item__seq", "value", "item__prediction") if v != p)
    assert wrong and _walk(client, base + "?disagreement=model") == wrong


def test_text_search_and_url_host():
    texts = ["win a FREE prize", "see you at lunch", "free entry"]
    project = text_project(texts)
    client = _admin(project)
    assert _walk(client, f"/projects/{project.pk}/items/?q=free") == [0, 2]
    urls = text_project(name="urls", item_kind="url", featurizer_config=None)
    import_records(urls, [Record(f"item {i}", u) for i, u in enumerate([
        "https://example.com/a", "http://mail.example.com:8080/b", "https://example.com.evil.net/",
        "https://notexample.com/", "http://example.com"])])
    assert _walk(_admin(urls), f"/projects/{urls.pk}/items/?host=example.com") == [0, 1, 4]


@pytest.mark.parametrize(("query", "status", "message"), [
    ("colour=red", 400, "unknown filter 'colour'"),
    ("status=lost", 400, "unknown status 'lost'"),
    ("provenance=robot", 400, "unknown provenance 'robot'"),
    ("predicted=eleven", 400, "is not one of the classes"),
    ("confidence=extreme", 400, "unknown confidence band"),
    ("disagreement=cats", 400, "unknown disagreement"),
    ("after=x", 400, "after must be"),
    ("after=9", 404, "there is no item after seq 9"),
    ("after=99999", 404, "there is no item after seq 99999"),
])
def test_bad_input_gets_a_clear_4xx(query, status, message):
    project = digits_project(10)
    response = _admin(project).get(f"/projects/{project.pk}/items/?{query}")
    assert response.status_code == status and message in response.content.decode()


def test_annotators_only_where_allowed_and_never_see_honeypots():
    project = digits_project(40, params={"delta": 0.3}, look_ahead=4)
    ann = member(project, "ann")
    teach(project, ann, until_auto=3)
    auto = Item.objects.filter(project=project, status="auto").first()
    Honeypot.objects.create(project=project, item=auto, annotator=ann)
    client = Client()
    client.force_login(ann)
    url = f"/projects/{project.pk}/items/"
    assert client.get(url).status_code == 403
    project.items_for_annotators = True
    project.save()
    assert auto.seq in _walk(client, url + "?provenance=unconfirmed")
    page = client.get(url).content.decode()
    assert "honeypot" not in page and "relabel" not in page
    assert client.get(url + "?provenance=honeypot").status_code == 400
    for guess in ("predicted=1", "confidence=low", "disagreement=model"):  # the guesses are hidden
        response = client.get(f"{url}?{guess}")
        assert response.status_code == 400 and "guesses" in response.content.decode()
    admin = _admin(project)
    assert _walk(admin, url + "?provenance=honeypot") == [auto.seq]
    # another project's admin cannot see it
    stranger = Client()
    stranger.force_login(member(digits_project(1), "other-admin", Membership.Role.ADMIN))
    assert stranger.get(url).status_code == 404


def test_a_project_serving_honeypots_keeps_the_browser_for_its_admins():
    """Once answered, a labelled item turns ``human`` and a honeypot does not: while the project
    serves honeypots, the browser (and its link on the project list) is the admins' whatever
    ``items_for_annotators`` says."""
    project = digits_project(10)
    ann = member(project, "ann")
    project.items_for_annotators = True
    project.save()
    client = Client()
    client.force_login(ann)
    url = f"/projects/{project.pk}/items/"
    assert client.get(url).status_code == 200
    assert f'href="{url}"' in client.get("/").content.decode()
    project.honeypot_rate = 0.1
    project.save()
    assert client.get(url).status_code == 403
    assert f'href="{url}"' not in client.get("/").content.decode()
    assert _admin(project).get(url).status_code == 200


def _two_opinions() -> tuple[Any, Item]:
    """A digits project and its first queued item, which annotators ``a`` and ``b`` labelled 1 and 2
    (overlap 2), not aggregated yet."""
    project = digits_project(20, params={"delta": 100.0}, look_ahead=6)
    update_project(project.pk)
    a, b = member(project, "a"), member(project, "b")
    item = Item.objects.filter(project=project, status="queued").order_by("seq").first()
    Item.objects.filter(pk=item.pk).update(overlap_k=2)
    label_chosen(project, item.pk, a, 1)
    label_chosen(project, item.pk, b, 2)
    return project, item


def test_disagreement_between_annotators():
    project, item = _two_opinions()
    update_project(project.pk)
    assert _walk(_admin(project), f"/projects/{project.pk}/items/?disagreement=annotators") == [item.seq]


def _row_of(client: Client, url: str, seq: int) -> dict[str, str]:
    """The cells of item ``seq``'s row on the browser page ``url``, by column."""
    from tests.support.html import parse

    response = client.get(url)
    assert response.status_code == 200
    for tr in parse(response.content).find_all("tr"):
        cells = {td.attrs["data-label"]: " ".join(td.text.split()) for td in tr.find_all("td")}
        if cells.get("#") == str(seq):
            return cells
    raise AssertionError(f"no row for item {seq}")


def test_a_disputed_item_shows_as_disputed_with_its_opinions_to_the_admins():
    project, item = _two_opinions()
    url = f"/projects/{project.pk}/items/"
    admin = _admin(project)
    # not aggregated yet: waiting (for the pipeline), not disputed
    assert _row_of(admin, url, item.seq)["from"] == "waiting"
    update_project(project.pk)
    row = _row_of(admin, url, item.seq)
    assert (row["status"], row["label"], row["from"]) == ("labelled", "none: a reviewer decides",
                                                          "disputed · a: 1, b: 2")
    assert _walk(admin, url + "?provenance=disputed") == [item.seq]
    assert item.seq not in _walk(admin, url + "?provenance=waiting")
    # an annotator who may browse sees it disputed, not who said what
    project.items_for_annotators = True
    project.save()
    ann = Client()
    ann.force_login(Membership.objects.get(project=project, user__username="a").user)
    assert _row_of(ann, url, item.seq)["from"] == "disputed"
    assert _walk(ann, url + "?provenance=disputed") == [item.seq]


def test_a_search_the_index_cannot_serve_reads_a_window_a_page_and_searches_on(monkeypatch):
    """A short ``q`` (or any ``q`` without the trigram index, as on SQLite) reads at most
    SCAN_WINDOW items a page: a page that found too few says how far it searched and its next
    link searches on, so that every match is still reached once, in order."""
    from annotator.labelling.reporting import item_browser

    monkeypatch.setattr(item_browser, "SCAN_WINDOW", 4)
    texts = ["ok", "no", "zq here", "no", "no", "no", "no", "no", "no", "no", "zq again", "no"]
    project = text_project(texts)
    client = _admin(project)
    first = client.get(f"/projects/{project.pk}/items/?q=zq")
    assert _seqs(first) == [2] and "read the items up to #3" in first.content.decode()
    second = client.get(_next(first))
    said = second.content.decode()
    assert _seqs(second) == [] and "up to #7" in said and "found none" in said
    assert "No item matches" not in said
    assert _walk(client, f"/projects/{project.pk}/items/?q=zq") == [2, 10]
    # a window that reaches the last item ends the walk: no "search on" link
    last = client.get(f"/projects/{project.pk}/items/?q=zq&after=7")
    assert _seqs(last) == [10] and _next(last) is None and "search-window" not in last.content.decode()


def _rows(response) -> dict[int, list[str]]:
    """The item table's cells by ``seq``, the item's own two (``#`` and its content) left out."""
    assert response.status_code == 200, response.content
    found: dict[int, list[str]] = {}
    row: list[str] = []
    for td in parse(response.content).find("table", id="item-table").find_all("td"):
        if td.attrs["data-label"] == "#":
            row = found.setdefault(int(td.text), [])
        elif td.attrs["data-label"] != "item":
            row.append(f"{td.attrs['data-label']}={td.text}")
    return found


@pytest.fixture
def served_pair():
    """A project with a honeypot served to ``ann`` (an item the model decided alone) and a queued
    item leased to ``ann``, both unanswered; its items browsable by annotators."""
    project = digits_project(60, params={"delta": 0.3}, look_ahead=4)
    ann = member(project, "ann")
    teach(project, member(project, "teacher"), until_auto=3)
    project.items_for_annotators = True
    project.save()
    real = lease_next(project, ann)
    assert real is not None and real.status == Item.Status.LEASED
    auto = Item.objects.filter(project=project, status=Item.Status.AUTO).first()
    Honeypot.objects.create(project=project, item=auto, annotator=ann)
    client = Client()
    client.force_login(ann)
    return project, client, auto, real


@pytest.mark.parametrize("shows_guesses", [False, True])
def test_an_annotators_rows_of_a_honeypot_and_a_queued_item_differ_only_in_content(served_pair,
                                                                                   shows_guesses):
    project, client, honeypot, real = served_pair
    Item.objects.filter(pk=real.pk).update(prediction=honeypot.prediction)  # the same guess for both
    project.show_prediction = shows_guesses
    project.save()
    rows = _rows(client.get(f"/projects/{project.pk}/items/"))
    assert rows[honeypot.seq] == rows[real.seq]
    assert "status=decided" in rows[real.seq] and "from=unconfirmed" in rows[real.seq]
    expected = f"label={honeypot.prediction}" if shows_guesses else "label=none"
    assert expected in rows[real.seq]
    if shows_guesses:
        assert f"predicted={honeypot.prediction}" in rows[real.seq]
    page = client.get(f"/projects/{project.pk}/items/").content.decode()
    assert 'name="confidence"' not in page and "|score|" not in page
    options = {o.attrs["value"] for name in ("status", "provenance")
               for o in parse(page).find("select", name=name).find_all("option")}
    assert not options & {"auto", "queued", "leased", "skipped", "model", "waiting", "honeypot", "audited"}


def test_an_annotators_filters_never_separate_a_honeypot_from_a_queued_item(served_pair):
    project, client, honeypot, real = served_pair
    project.show_prediction = True
    project.save()
    url = f"/projects/{project.pk}/items/"
    for key, values in (("status", ("pending", "decided", "labelled")),
                        ("provenance", ("human", "unconfirmed", "pending"))):
        for value in values:
            seqs = set(_walk(client, f"{url}?{key}={value}"))
            assert (honeypot.seq in seqs) == (real.seq in seqs), (key, value)
    both = set(_walk(client, url + "?status=decided"))
    assert {honeypot.seq, real.seq} <= both
    for query in ("status=auto", "status=queued", "status=leased", "status=skipped", "provenance=model",
                  "provenance=waiting", "provenance=honeypot", "provenance=audited", "confidence=high"):
        response = client.get(f"{url}?{query}")
        assert response.status_code == 400, query
        assert "auto" not in response.content.decode().split(";")[-1]  # the values offered are merged
    assert client.get(url + "?status=auto").content.decode() == \
        "unknown status 'auto'; one of pending, decided, labelled"
    # the admin still sees them apart
    admin = _admin(project)
    auto = _walk(admin, url + "?status=auto")
    assert honeypot.seq in auto and real.seq not in auto
