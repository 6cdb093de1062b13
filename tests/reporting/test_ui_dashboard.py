"""The dashboard through the Django test client: every estimate says what it covers, and why the
importance-weighted one stops when a queried item waits for its label; empty charts say "no data
yet"; the 95% interval is a band; no axis goes below 0."""

from __future__ import annotations

import re

import pytest

from annotator.labelling.annotation.actions import lease_next, submit_label
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.worker.tasks import compute_cost_view
from tests.support.app import digits_project, member
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def _panel(client, project):
    return parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)


def test_empty_project_charts_say_no_data_yet(client):
    project = digits_project(0)
    client.force_login(member(project, "boss", role="admin"))
    panel = _panel(client, project)
    assert panel.by_id("m-acc-iw").text == "–"
    assert panel.by_id("m-acc-iw-covers").text.startswith("from 0 labels over the first 0 of 0 items")
    for chart in ("accuracy", "by-labels", "query-ratio"):
        svg = panel.by_id(f"chart-{chart}").find("svg")
        assert svg.find("text", class_="no-data").text == "no data yet" and not svg.find_all("circle")


def test_an_unanswered_queued_item_stops_the_iw_estimate_and_the_card_says_so(client):
    project = digits_project(12, params={"delta": 1000.0}, look_ahead=12)  # every item queried
    update_project(project.pk)
    anns = [member(project, f"ann{k}") for k in range(4)]
    leased = [lease_next(project, ann) for ann in anns]  # one item each
    assert [i.seq for i in leased] == [0, 1, 2, 3]
    for k in (0, 1, 3):  # item 2 is left waiting
        submit_label(project, leased[k].pk, anns[k], leased[k].gold)
    update_project(project.pk)
    client.force_login(member(project, "boss", role="admin"))
    panel = _panel(client, project)
    covers = panel.by_id("m-acc-iw-covers").text
    assert re.sub(r"\s+", " ", covers) == (
        "from 2 labels over the first 2 of 12 items seen: it stops at item 2, queried and still "
        "waiting for a label")
    assert "few labels" in panel.by_id("card-acc-iw").text
    assert "on 12 items with a known class" in panel.text
    # the label of item 2 arrives but is not applied yet: the card says that instead
    submit_label(project, leased[2].pk, anns[2], leased[2].gold)
    assert "item 2, labelled, its label not applied yet" in re.sub(r"\s+", " ", _panel(client, project)
                                                                      .by_id("m-acc-iw-covers").text)
    update_project(project.pk)
    covers = re.sub(r"\s+", " ", _panel(client, project).by_id("m-acc-iw-covers").text)
    assert covers.startswith("from 4 labels over the first 4 of 12 items seen: it stops at item 4")


def test_interval_is_a_band_and_axes_stay_at_or_above_zero(client):
    project = digits_project(20, params={"delta": 1000.0}, look_ahead=20)
    update_project(project.pk)
    ann = member(project, "ann")
    for _ in range(8):
        item = lease_next(project, ann)
        submit_label(project, item.pk, ann, (item.gold + 1) % 10)  # mostly unlike the guess: IW near 0
        update_project(project.pk)
    update_project(project.pk)
    compute_cost_view(project.pk)  # the worker's part: the cost chart has its curves too
    client.force_login(member(project, "boss", role="admin"))
    panel = _panel(client, project)
    accuracy = panel.by_id("chart-accuracy").find("svg")
    assert accuracy.find_all("polygon", class_="band") and "95% interval (IW)" in accuracy.text
    for chart in panel.find("div", class_="charts").find_all("svg"):
        y_ticks = [float(t.text) for t in chart.find_all("text", **{"text-anchor": "end"})]
        assert y_ticks and min(y_ticks) >= 0, y_ticks


def test_the_annotators_section_states_its_label_window(client, settings):
    # per-annotator figures cover the newest DASHBOARD_LABEL_WINDOW labels: the page says how many
    settings.DASHBOARD_LABEL_WINDOW = 12345
    project = digits_project(0)
    client.force_login(member(project, "boss", role="admin"))
    text = " ".join(_panel(client, project).by_id("label-window").text.split())
    assert "newest 12,345 labels" in text
