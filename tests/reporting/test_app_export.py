"""Export: the exported model predicts exactly what the app predicted."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotator.labelling.annotation.actions import lease_next, submit_label
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, LearnerState
from annotator.labelling.reporting.summary import budget_summary
from learners import load_model
from tests.support.app import client_for, digits_project, member, teach

pytestmark = pytest.mark.django_db


def test_exported_model_predicts_what_the_app_predicted(tmp_path):
    project = digits_project(150, look_ahead=4)
    user = member(project, "ann")
    update_project(project.pk)
    for _ in range(25):  # label through the app's own functions, as the queue page does
        item = lease_next(project, user)
        submit_label(project, item.pk, user, item.gold)
        update_project(project.pk)
    # decide many more items with the final model (no further labels)
    project.look_ahead = 10_000
    project.save()
    update_project(project.pk)
    version = LearnerState.objects.get(project=project).version
    assert version == 25
    same_version = list(Item.objects.filter(project=project, model_version=version).order_by("seq"))
    assert len(same_version) > 50

    path = tmp_path / "digits.npz"
    call_command("export_model", str(project.pk), str(path))
    model = load_model(path)
    raw = [bytes(it.data) for it in same_version]
    app_predictions = [it.prediction for it in same_version]
    assert model.learner.predict(model.featurizer.transform(raw)).tolist() == app_predictions
    card = json.loads(path.with_suffix(".json").read_text())
    # the batch refit of the 25 labels was checked against the learner; the winner predicts
    check = card["model"]["check"]
    assert check["labels"] == 25 and check["folds"] == 5 and "weighted by 1/q" in check["method"]
    won = check["refit_accuracy"] > check["online_accuracy"]
    assert card["model"]["used"] == ("refit" if won else "online")
    assert (model.refit is not None) == (card["model"]["used"] == "refit")
    if model.refit is None:
        assert model.predict(raw) == app_predictions
    else:
        assert model.predict(raw) == model.refit.predict(model.featurizer.transform(raw)).tolist()
    assert card["model_version"] == 25 and card["labels_used"] == 25 and card["algorithm"] == "mpaa-i"
    assert card["delta"] == 1.0 and card["classes"] == list(range(10))
    assert card["delta_set_by"] == "project parameter" and card["label_budget"] is None
    assert card["featurizer"]["kind"] == "image" and card["metrics"]["items_labelled"] == 25


def test_the_card_states_the_label_budget_and_the_delta_it_set():
    """While a label budget steers delta, the card's ``delta`` is the budget's (the one the console
    and the dashboard show), not the project's parameter the budget replaces; the card states the
    budget's target and what was achieved (docs/budget.md)."""
    project = digits_project(120, look_ahead=120, params={"delta": 1.0}, budget_ratio=0.2)
    teach(project, member(project, "ann"))
    budget = budget_summary(project)
    assert budget["budget_steers"] and budget["delta"] != pytest.approx(1.0)  # the budget moved it
    admin = client_for(member(project, "boss", role="admin"))
    card = admin.get(f"/projects/{project.pk}/export/model.json").json()
    assert card["delta"] == pytest.approx(budget["delta"]) and card["delta_set_by"] == "label budget"
    assert card["label_budget"] == {"target": 0.2, "achieved": pytest.approx(budget["achieved"])}
    assert card["parameters"]["delta"] == 1.0  # the project's setting, which the budget replaces
    console = admin.get(f"/projects/{project.pk}/console").content.decode()
    assert f"{budget['delta']:.3f}" in console  # the same delta the console states


DANGEROUS = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+2", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd",
             "\uff1d1+1", "plain text", "a=b"]


def test_the_labels_csv_neutralises_formula_injection():
    """Every text cell a spreadsheet would run as a formula starts with an apostrophe in the CSV
    (item text, label value, annotator name); the JSONL keeps the values exactly."""
    import csv
    import io

    from django.test import Client

    from annotator.labelling.models import Label, Membership
    from annotator.labelling.projects.creation import create_project

    project = create_project(name="injection", task="binary", item_kind="text", classes=["=1+1", "-ham"],
                             algorithm="paa-i", params={"delta": 100.0})
    from annotator.labelling.ingest import Record, import_records

    items = import_records(project, [Record(f"item {i}", t) for i, t in enumerate(DANGEROUS)])
    annotator = member(project, "@evil")
    for i, item in enumerate(items):
        Label.objects.create(item=item, project=project, annotator=annotator, value=project.classes[i % 2],
                             seconds=1.5)
    admin = member(project, "boss", Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    body = b"".join(client.get(f"/projects/{project.pk}/export/labels.csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body, newline="")))
    assert [r["content"] for r in rows] == [("'" + t if t[0] in "=+-@\t\r\uff1d" else t) for t in DANGEROUS]
    assert {r["label"] for r in rows} == {"'=1+1", "'-ham"}
    assert {r["annotator"] for r in rows} == {"'@evil"}
    assert {r["seconds"] for r in rows} == {"1.5"}  # numbers stay numbers
    cells = [v for r in rows for v in r.values()]
    assert not [v for v in cells if v[:1] in ("=", "+", "-", "@", "\t", "\r")]
    body = b"".join(client.get(f"/projects/{project.pk}/export/labels.jsonl").streaming_content).decode()
    assert [json.loads(line)["content"] for line in body.splitlines()] == DANGEROUS


#: text cells a spreadsheet reads as plain numbers (left alone) and as formulas (guarded)
PLAIN_NUMBERS = ["-1", "+1", "-0.5", "1e-3", "-.5", "+2.5E+3"]
FORMULA_LIKE = ["=cmd", "+A1", "-2+3", "@x", "-1 ", "-inf", "-1,5", "\uff0d1"]


def test_the_csv_exports_leave_plain_numbers_alone_and_guard_formulas():
    """Classes such as a LIBSVM file's ``-1`` and ``+1`` and item texts that are plain numbers
    are written as they are in the labels, opinions and dataset CSVs; formula-like text, even
    when it starts like a number, still gets its apostrophe."""
    import csv
    import io

    from django.test import Client

    from annotator.labelling.models import Label, Membership
    from tests.support.app import text_project

    project = text_project(PLAIN_NUMBERS + FORMULA_LIKE, classes=["-1", "+1"])
    annotator = member(project, "ann")
    items = list(Item.objects.filter(project=project).order_by("seq"))
    for i, item in enumerate(items):
        Label.objects.create(item=item, project=project, annotator=annotator, value=project.classes[i % 2])
    client = Client()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))

    def csv_rows(url: str) -> list[dict[str, str]]:
        response = client.get(url)
        assert response.status_code == 200
        body = b"".join(response.streaming_content).decode()
        return list(csv.DictReader(io.StringIO(body, newline="")))

    expected = PLAIN_NUMBERS + ["'" + t for t in FORMULA_LIKE]
    labels = csv_rows(f"/projects/{project.pk}/export/labels.csv")
    assert [r["content"] for r in labels] == expected
    assert [r["label"] for r in labels] == [project.classes[i % 2] for i in range(len(items))]
    opinions = csv_rows(f"/projects/{project.pk}/export/opinions.csv")
    assert {r["label"] for r in opinions} == {"-1", "+1"}
    dataset = csv_rows(f"/projects/{project.pk}/export/dataset.csv")
    assert [r["item"] for r in dataset] == expected
    assert [r["label"] for r in dataset] == [project.classes[i % 2] for i in range(len(items))]
