"""What the importance-weighted estimates cover (docs/estimates.md, "What the estimates cover"),
through the Django test client: a budgeted project whose hard cap holds items (logged with query
probability 0, outside the estimator's stream) says how many items its estimates cover and how
many the cap held, on the dashboard panel, in the metrics API and in the exported model card, and
warns that the estimates describe the covered items only; a project without a budget does not."""

from __future__ import annotations

import re
from importlib import import_module

import pytest
from django.apps import apps
from django.test import Client

from annotator.labelling.engine import running_totals
from annotator.labelling.models import Item, LearnerState, StreamStats
from annotator.labelling.reporting.coverage import COVERED_SHARE_WARNING
from tests.support.app import digits_project, member, teach
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def _taught(**fields):
    """60 demo digits, every queried item labelled with its gold class by the real pipeline, and
    an admin's client."""
    project = digits_project(60, look_ahead=60, **fields)
    teach(project, member(project, "ann"))
    client = Client()
    client.force_login(member(project, "boss", role="admin"))
    return project, client


def _text(node) -> str:
    return re.sub(r"\s+", " ", node.text).strip()


def _log_counts(project):
    """From the decision log itself: decided items, items logged with q = 0, and the covered items
    (q > 0 with their label: every queried item is labelled here)."""
    decided = Item.objects.filter(project=project).decided()
    zero = decided.filter(query_prob=0).count()
    return decided.count(), zero, decided.filter(query_prob__gt=0).count()


def test_a_budget_whose_cap_holds_items_says_what_the_estimates_cover_and_warns():
    project, client = _taught(budget_ratio=0.1)
    decided, held, covered = _log_counts(project)
    assert decided == 60 and held > 0  # the cap held items: their q is 0
    assert covered / decided < COVERED_SHARE_WARNING
    assert StreamStats.objects.get(project=project).unasked == {"cap": held}

    api = client.get(f"/api/projects/{project.pk}/metrics").json()
    cov = api["coverage"]
    assert (cov["decided_items"], cov["covered_items"], cov["held_by_cap"], cov["unasked_items"],
            cov["not_reached_items"]) == (60, covered, held, held, 0)
    assert cov["unasked_by_cause"] == {"cap": held}
    assert cov["covered_share"] == pytest.approx(covered / 60) and cov["warning"] is True
    assert cov["warning_below"] == COVERED_SHARE_WARNING
    assert api["accuracy_iw"]["seen"] == covered
    assert cov["summary"] == (f"Estimated on {covered} of the 60 decided items ({covered / 60:.1%}), those "
                              f"that could have been asked; not covered: {held} items held by the label "
                              "budget's cap.")

    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    card = panel.by_id("card-acc-iw")
    assert "every item" not in _text(card) and "estimated accuracy on the covered items" in _text(card)
    assert _text(panel.by_id("m-acc-iw-coverage")) == cov["summary"]
    warning = _text(panel.by_id("coverage-warning"))
    assert warning.startswith(f"Estimates of part of the stream. The estimates describe the {covered} "
                              f"covered items only, {100 * covered / 60:.1f}% of the 60 decided (under 90%)")
    assert f"the {held} items nobody could be asked about" in warning and "first of the stream" in warning
    for badge in ("m-acc-iw-warning", "per-class-warning", "model-labels-warning"):
        assert "see above" in _text(panel.by_id(badge)), badge
    assert f"for the {covered} covered items of the first 60" in _text(panel.by_id("per-class-note"))
    auto = decided - Item.objects.filter(project=project, queried=True).count()
    model_labels = _text(panel.by_id("model-labels-summary"))
    assert model_labels.startswith(f"Items the model labelled alone: {auto}, of which")
    assert f"{covered - LearnerState.objects.get(project=project).n_queried} covered by the estimate" \
        in model_labels
    # the full page shows the same panel
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    assert _text(page.by_id("coverage-warning")) == warning

    card = client.get(f"/projects/{project.pk}/export/model.json")
    assert card.status_code == 200
    assert card.json()["metrics"]["coverage"] == cov


def test_the_quality_target_says_it_rests_on_the_covered_items():
    project, client = _taught(budget_ratio=0.1, quality_target=0.5)
    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    assert "covered items only" in _text(panel.by_id("target-coverage"))


def test_without_a_budget_every_decided_item_is_covered_and_nothing_warns():
    project, client = _taught()
    decided, held, covered = _log_counts(project)
    assert (decided, held, covered) == (60, 0, 60)
    cov = client.get(f"/api/projects/{project.pk}/metrics").json()["coverage"]
    assert (cov["covered_items"], cov["held_by_cap"], cov["unasked_items"]) == (60, 0, 0)
    assert cov["warning"] is False
    assert cov["unasked_by_cause"] == {} and cov["warning_text"] is None
    assert cov["summary"] == ("Estimated on 60 of the 60 decided items (100.0%), those that could have "
                              "been asked.")
    panel = parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)
    for warning in ("coverage-warning", "m-acc-iw-warning", "per-class-warning", "model-labels-warning"):
        assert not panel.find_all(id=warning), warning
    assert _text(panel.by_id("m-acc-iw-coverage")) == cov["summary"]


def test_a_rebuild_keeps_the_causes_and_a_log_without_them_counts_them_unrecorded():
    project, client = _taught(budget_ratio=0.1)
    _, held, _ = _log_counts(project)
    assert running_totals.rebuild(project.pk).unasked == {"cap": held}  # the same items: causes kept
    StreamStats.objects.filter(project=project).delete()  # aggregates from before the causes were counted
    assert running_totals.rebuild(project.pk).unasked == {"unrecorded": held}
    StreamStats.objects.filter(project=project).update(unasked={})  # as the migration found them
    import_module("annotator.labelling.migrations.0034_streamstats_unasked").count_unasked(apps, None)
    assert StreamStats.objects.get(project=project).unasked == {"unrecorded": held}
    cov = client.get(f"/api/projects/{project.pk}/metrics").json()["coverage"]
    assert (cov["held_by_cap"], cov["unasked_items"], cov["warning"]) == (0, held, True)
    assert f"not covered: {held} items logged with probability 0 before their cause was counted" \
        in cov["summary"]
