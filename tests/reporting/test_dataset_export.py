"""The dataset export (docs/dataset.md): every item exactly once with the provenance of its final
label (human, consensus, relabel, model, audited, honeypot, disputed, waiting, pending) in CSV, JSONL and
Parquet, through the console's link, the API (token) and the management command; filters; bad
input refused with a clear 400. Runs on the session's database: SQLite by default, PostgreSQL
with ``DATABASE_URL=postgres://...`` (the ``services`` test checks it is really there)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from annotator.labelling.annotation.relabel import relabel
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import import_records
from annotator.labelling.models import Honeypot, Item, Label, Membership, Review
from annotator.labelling.projects.demo import digit_records
from annotator.labelling.teams.reviews import decide, request_review
from harness.chosen_labels import label_chosen
from tests.support.app import digits_project, member, teach
from tests.support.resources import require_postgresql

pytestmark = pytest.mark.django_db


def _scenario() -> tuple[Any, dict[int, dict[str, Any]]]:
    """A digits project with items of every provenance, and the expected ``{item id: {"provenance",
    "label", ...}}`` written down from what the test did (not from the export's rules)."""
    project = digits_project(70, params={"delta": 0.3}, look_ahead=4)
    ann, ann2 = member(project, "ann"), member(project, "ann2")
    reviewer = member(project, "rev", Membership.Role.REVIEWER)
    admin = member(project, "boss", Membership.Role.ADMIN)
    teach(project, ann, until_auto=8)
    autos = list(Item.objects.filter(project=project, status="auto").order_by("seq"))
    assert len(autos) >= 4
    audited, honeypot, relabelled = autos[0], autos[1], autos[2]
    # consensus: a queued item that needs two opinions, both given
    shared = Item.objects.filter(project=project, status="queued").order_by("seq").first()
    Item.objects.filter(pk=shared.pk).update(overlap_k=2)
    label_chosen(project, shared.pk, ann, shared.gold)
    label_chosen(project, shared.pk, ann2, shared.gold)
    # disputed: another one, the two opinions differ (majority vote: no label until a reviewer decides)
    split = Item.objects.filter(project=project, status="queued").order_by("seq").first()
    Item.objects.filter(pk=split.pk).update(overlap_k=2)
    votes = [split.gold, next(c for c in project.classes if c != split.gold)]
    label_chosen(project, split.pk, ann, votes[0])
    label_chosen(project, split.pk, ann2, votes[1])
    review = request_review(audited, Review.Reason.AUDIT, sample_prob=0.5)
    other = next(c for c in project.classes if c != audited.prediction)
    decide(project, review.pk, reviewer, other)
    Honeypot.objects.create(project=project, item=honeypot, annotator=ann2)
    new_class = next(c for c in project.classes if c != relabelled.prediction)
    relabel(project, relabelled.pk, new_class, admin)
    update_project(project.pk)  # settles the consensus, applies the labels
    import_records(project, digit_records(3, seed=9))  # never decided: pending

    expected: dict[int, dict[str, Any]] = {}
    for item in Item.objects.filter(project=project):
        label = item.labels.filter(primary=True).first()
        if item.pk == relabelled.pk:
            row = {"provenance": "human", "label": new_class, "method": "relabel", "drawn": False,
                   "annotator": "boss"}
        elif item.pk == shared.pk:
            row = {"provenance": "human", "label": shared.gold, "method": "majority",
                   "opinions": [["ann", shared.gold], ["ann2", shared.gold]]}
        elif item.pk == split.pk:
            row = {"provenance": "disputed", "label": None,
                   "opinions": [["ann", votes[0]], ["ann2", votes[1]]]}
        elif item.pk == audited.pk:
            row = {"provenance": "audited", "label": other, "reviewer": "rev"}
        elif item.pk == honeypot.pk:
            row = {"provenance": "honeypot", "label": honeypot.gold}
        elif label is not None:
            row = {"provenance": "human", "label": label.value, "annotator": "ann", "drawn": True}
        elif item.status == "auto":
            row = {"provenance": "model", "label": item.prediction}
        elif item.status == "pending":
            row = {"provenance": "pending", "label": None}
        else:
            row = {"provenance": "waiting", "label": None}
        expected[item.pk] = row
    kinds = {r["provenance"] for r in expected.values()}
    assert kinds == {"human", "model", "audited", "honeypot", "disputed", "waiting", "pending"}, kinds
    return project, expected


def _check(rows: list[dict[str, Any]], expected: dict[int, dict[str, Any]], parse: Any = None) -> None:
    """Every item exactly once, each with the expected provenance and fields."""
    ids = [int(r["id"]) for r in rows]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    for row in rows:
        for key, want in expected[int(row["id"])].items():
            got = parse(key, row[key]) if parse else row[key]
            assert got == want, (row["id"], key, got, want)


def _csv_value(key: str, text: str) -> Any:
    if text == "":
        return None
    if key in ("label", "opinions"):
        return json.loads(text) if key == "opinions" else int(text)
    if key == "drawn":
        return text == "True"
    return text


def _parquet_value(key: str, value: Any) -> Any:
    return json.loads(value) if key in ("label", "opinions") and value is not None else value


def test_every_item_once_with_its_provenance_in_every_format(tmp_path):
    import pyarrow.parquet as pq

    project, expected = _scenario()
    admin = Client()
    admin.force_login(project.memberships.get(user__username="boss").user)
    response = admin.get(f"/projects/{project.pk}/export/dataset.csv")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    text = b"".join(response.streaming_content).decode()
    _check(list(csv.DictReader(io.StringIO(text))), expected, _csv_value)

    api = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}")
    response = api.get(f"/api/projects/{project.pk}/dataset", {"format": "jsonl"})
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    _check([json.loads(line) for line in lines], expected)

    path = tmp_path / "dataset.parquet"
    call_command("export_dataset", str(project.pk), str(path), stdout=io.StringIO())
    table = pq.read_table(path)
    assert table.column_names[:5] == ["id", "seq", "item", "label", "provenance"]
    names = dict(Item.objects.filter(project=project).values_list("id", "filename"))
    assert all(row["item"] == names[row["id"]] for row in table.to_pylist())  # file names as text
    _check(table.to_pylist(), expected, _parquet_value)


def test_the_csv_neutralises_formula_injection_and_the_jsonl_keeps_the_text():
    from tests.support.app import text_project

    project = text_project(["=HYPERLINK(\"http://evil\",\"x\")", "plain"])
    api = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}")
    text = b"".join(api.get(f"/api/projects/{project.pk}/dataset", {"format": "csv"})
                    .streaming_content).decode()
    cells = [row["item"] for row in csv.DictReader(io.StringIO(text))]
    assert cells == ["'=HYPERLINK(\"http://evil\",\"x\")", "plain"]
    lines = b"".join(api.get(f"/api/projects/{project.pk}/dataset").streaming_content).decode()
    assert json.loads(lines.splitlines()[0])["item"].startswith("=HYPERLINK")


def test_filters_by_provenance_class_confidence_and_time():
    project, expected = _scenario()
    api = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}")

    def rows(**query: str) -> list[dict[str, Any]]:
        response = api.get(f"/api/projects/{project.pk}/dataset", query)
        assert response.status_code == 200, response.content
        return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]

    model = rows(provenance="model,audited")
    assert {r["id"] for r in model} == {pk for pk, e in expected.items()
                                        if e["provenance"] in ("model", "audited")}
    fives = rows(**{"class": "5"})
    assert fives and {r["id"] for r in fives} == {pk for pk, e in expected.items() if e["label"] == 5}
    sure = rows(min_confidence="0.5")
    assert sure and all(abs(r["score"]) >= 0.5 for r in sure)
    assert len(sure) < sum(1 for e in expected.values() if e["provenance"] != "pending")
    assert rows(since="2999-01-01T00:00:00Z") == []
    labelled = sum(1 for e in expected.values() if e["label"] is not None)
    assert len(rows(until="2999-01-01T00:00:00Z")) == labelled


@pytest.mark.parametrize(("query", "message"), [
    ({"colour": "red"}, "unknown filter 'colour'"),
    ({"provenance": "robot"}, "unknown provenance 'robot'"),
    ({"class": "11"}, "is not one of the classes"),
    ({"min_confidence": "high"}, "min_confidence must be a number"),
    ({"max_probability": "1.5"}, "max_probability must be 1 or less"),
    ({"since": "yesterday"}, "since must be an ISO 8601 time"),
    ({"format": "xlsx"}, "unknown format 'xlsx'"),
])
def test_bad_filters_get_a_clear_400(query, message):
    project = digits_project(5)
    api = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}")
    response = api.get(f"/api/projects/{project.pk}/dataset", query)
    assert response.status_code == 400 and message in response.json()["error"]
    admin = Client()
    admin.force_login(member(project, "boss", Membership.Role.ADMIN))
    fmt = query.get("format", "csv")
    response = admin.get(f"/projects/{project.pk}/export/dataset.{fmt}",
                         {k: v for k, v in query.items() if k != "format"})
    assert response.status_code == 400 and message in response.content.decode()


def test_annotators_and_wrong_tokens_get_no_dataset():
    project = digits_project(5)
    annotator = Client()
    annotator.force_login(member(project, "ann"))
    assert annotator.get(f"/api/projects/{project.pk}/dataset").status_code == 403
    assert annotator.get(f"/projects/{project.pk}/export/dataset.csv").status_code == 403
    wrong = Client(HTTP_AUTHORIZATION="Token nope")
    assert wrong.get(f"/api/projects/{project.pk}/dataset").status_code == 403


def test_the_openapi_document_lists_the_dataset_route():
    project = digits_project(0)
    doc = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}").get("/api/openapi.json").json()
    op = doc["paths"]["/api/projects/{pk}/dataset"]["get"]
    assert {p["name"] for p in op["parameters"]} >= {"format", "provenance", "class", "since"}


@pytest.mark.services
def test_every_item_once_on_postgresql(services, tmp_path):
    """The same export on PostgreSQL (run with DATABASE_URL=postgres://...: the JSON and regex
    comparisons differ between the databases)."""
    require_postgresql()
    test_every_item_once_with_its_provenance_in_every_format(tmp_path)


def test_vector_items_are_their_pairs_in_every_format(tmp_path):
    import pyarrow.parquet as pq

    from annotator.labelling.ingest import import_records
    from tests.support.app import text_project, vector_records

    project = text_project(name="vectors", item_kind="vectors", classes=[0, 1],
                           featurizer_config={"kind": "vectors", "n_features": 8})
    import_records(project, vector_records([0, 1], 3))
    pairs = list(Item.objects.filter(project=project).order_by("seq").values_list("vector_pairs", flat=True))
    api = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}")
    lines = b"".join(api.get(f"/api/projects/{project.pk}/dataset").streaming_content).decode().splitlines()
    assert [json.loads(line)["item"] for line in lines] == pairs
    text = b"".join(api.get(f"/api/projects/{project.pk}/dataset", {"format": "csv"}).streaming_content)
    assert [json.loads(r["item"]) for r in csv.DictReader(io.StringIO(text.decode()))] == pairs
    path = tmp_path / "v.parquet"
    call_command("export_dataset", str(project.pk), str(path), stdout=io.StringIO())
    assert [json.loads(v) for v in pq.read_table(path).column("item").to_pylist()] == pairs


def _export(project: Any, fmt: str, tmp_path: Any) -> list[dict[str, Any]]:
    """The dataset rows of ``project`` in ``fmt``, with ``probability`` a float or None and
    ``probabilities`` a dict or None, read back: CSV through the console, JSONL through the API,
    Parquet through the command."""
    import pyarrow.parquet as pq

    if fmt == "csv":
        admin = Client()
        admin.force_login(member(project, "boss", Membership.Role.ADMIN))
        text = b"".join(admin.get(f"/projects/{project.pk}/export/dataset.csv").streaming_content).decode()
        return [{**r, "score": float(r["score"]) if r["score"] else None,
                 "probability": float(r["probability"]) if r["probability"] else None,
                 "probabilities": json.loads(r["probabilities"]) if r["probabilities"] else None}
                for r in csv.DictReader(io.StringIO(text))]
    if fmt == "jsonl":
        api = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}")
        lines = b"".join(api.get(f"/api/projects/{project.pk}/dataset").streaming_content).decode()
        return [json.loads(line) for line in lines.splitlines()]
    path = tmp_path / "p.parquet"
    call_command("export_dataset", str(project.pk), str(path), stdout=io.StringIO())
    return [{**r, "probabilities": json.loads(r["probabilities"]) if r["probabilities"] else None}
            for r in pq.read_table(path).to_pylist()]


def _taught_digits() -> Any:
    """120 digits taught until 30 were decided alone (about 50 labels), and 3 never decided."""
    project = digits_project(120, params={"delta": 0.3}, look_ahead=4)
    teach(project, member(project, "ann"), until_auto=30)
    import_records(project, digit_records(3, seed=9))
    return project


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_every_decided_row_has_calibrated_class_probabilities(fmt, tmp_path):
    project = _taught_digits()
    rows = _export(project, fmt, tmp_path)
    decided = [r for r in rows if r["score"] is not None]
    assert len(decided) >= 80 and {r["provenance"] for r in decided} >= {"human", "model"}
    keys = [str(c) for c in project.classes]
    for r in decided:
        p, spread = r["probability"], r["probabilities"]
        assert 0 <= p <= 1 and list(spread) == keys
        assert sum(spread.values()) == pytest.approx(1)
        prediction = r["prediction"] if fmt == "jsonl" else json.loads(r["prediction"])
        assert spread[str(prediction)] == pytest.approx(p)
    assert len({round(r["probability"], 9) for r in decided}) > 10  # it follows the score
    assert all(r["probability"] is None and r["probabilities"] is None for r in rows if r["score"] is None)
    assert sum(r["score"] is None for r in rows) >= 3


def test_filters_by_probability():
    project = _taught_digits()
    api = Client(HTTP_AUTHORIZATION=f"Token {project.api_token}")

    def rows(**query: str) -> list[dict[str, Any]]:
        response = api.get(f"/api/projects/{project.pk}/dataset", query)
        assert response.status_code == 200, response.content
        return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]

    everything = rows()
    middle = sorted(r["probability"] for r in everything if r["probability"] is not None)[60]
    sure, unsure = rows(min_probability=str(middle)), rows(max_probability=str(middle))
    assert sure and all(r["probability"] >= middle for r in sure)
    assert unsure and all(r["probability"] <= middle for r in unsure)
    decided = sum(r["probability"] is not None for r in everything)
    assert len(sure) + len(unsure) == decided + sum(r["probability"] == middle for r in everything)


def _set_decisions(project: Any, cases: list[tuple[float, bool, float]]) -> list[int]:
    """Give the project's labelled queried items, in ``seq`` order, the logged decisions ``cases``
    (|score|, prediction right?, q): a right one predicts the label, a wrong one the other class.
    Returns their item ids."""
    labels = list(Label.objects.filter(project=project, primary=True, drawn=True, item__queried=True)
                  .order_by("item__seq").values_list("item_id", "value"))
    assert len(labels) >= len(cases)
    for (pk, value), (score, right, q) in zip(labels, cases, strict=False):
        wrong = next(c for c in project.classes if c != value)
        Item.objects.filter(pk=pk).update(score=score, prediction=value if right else wrong, query_prob=q)
    return [pk for pk, _ in labels[:len(cases)]]


def test_the_calibration_weights_each_drawn_label_by_one_over_q_and_needs_enough_labels(tmp_path):
    """Two scores only: the fit is saturated, so the probability at each score is the weighted share
    of right predictions there (a hand computation); an admin's relabel (not drawn) is left out."""
    from tests.support.app import text_project, vector_records

    project = text_project(name="calibrated", item_kind="vectors", classes=[0, 1], params={"delta": 100.0},
                           featurizer_config={"kind": "vectors", "n_features": 8})
    import_records(project, vector_records([0, 1], 25))
    teach(project, member(project, "ann"))
    # |score| 0.5: 6 right with q = 1, 6 wrong with q = 0.5 -> 6 / (6 + 12) = 1/3 right;
    # |score| 2: 9 right with q = 0.25, 3 wrong with q = 1 -> 36 / (36 + 3) = 12/13 right
    cases = ([(0.5, True, 1.0)] * 6 + [(-0.5, False, 0.5)] * 6
             + [(2.0, True, 0.25)] * 9 + [(-2.0, False, 1.0)] * 3)
    ids = _set_decisions(project, [*cases, (2.0, True, 0.01)])
    # the 25th: an admin's relabel makes the prediction wrong; counted with weight 100, it would
    # pull the probability at |score| 2 far down
    last = Label.objects.get(item_id=ids.pop(), primary=True)
    relabel(project, last.item_id, 1 - last.value, member(project, "boss", Membership.Role.ADMIN))
    rows = {r["id"]: r for r in _export(project, "jsonl", tmp_path)}
    assert len(rows) == 25
    for pk, (score, _, _) in zip(ids, cases, strict=True):
        want = 1 / 3 if abs(score) == 0.5 else 12 / 13
        row = rows[pk]
        assert row["probability"] == pytest.approx(want, abs=0.01)
        assert row["probabilities"] == pytest.approx({str(row["prediction"]): row["probability"],
                                                      str(1 - row["prediction"]): 1 - row["probability"]})
    # every prediction right: nothing to fit, every probability null
    for label in Label.objects.filter(project=project, primary=True, drawn=True):
        Item.objects.filter(pk=label.item_id).update(prediction=label.value)
    rows = {r["id"]: r for r in _export(project, "jsonl", tmp_path)}
    assert all(r["probability"] is None and r["probabilities"] is None for r in rows.values())


def test_fewer_than_twenty_labels_give_no_probabilities(tmp_path):
    project = digits_project(60, params={"delta": 0.3}, look_ahead=4)
    teach(project, member(project, "ann"), until_auto=10)
    assert 0 < Label.objects.filter(project=project, primary=True).count() < 20
    rows = _export(project, "jsonl", tmp_path)
    assert any(r["score"] is not None for r in rows)
    assert all(r["probability"] is None and r["probabilities"] is None for r in rows)
