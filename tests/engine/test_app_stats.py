"""The log's running aggregates equal a recomputation from the whole decision log.

A random stream is driven through the real domain functions (lease, label right or wrong,
skip, undo, leases left open) and the pipeline, with a checkpoint step small enough to be
doubled several times; after every pipeline run the metrics and the curves read from the
aggregates must equal what the whole log gives (:mod:`tests.support.decision_log`: the rule of
:mod:`annotator.labelling.engine.decision_log` applied to the whole log).
"""

from __future__ import annotations

import numpy as np
import pytest

from annotator.labelling.annotation.actions import lease_next, skip_item, submit_label, undo_last_label
from annotator.labelling.engine import running_totals
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import StreamStats
from annotator.labelling.reporting.class_figures import gold_matrix, iw_auto, iw_cells
from annotator.labelling.reporting.dashboard import curves
from annotator.labelling.reporting.metrics import project_metrics
from learners.evaluation.metrics import accuracy
from learners.evaluation.per_class import Cells, confusion
from tests.support.app import digits_project, member
from tests.support.decision_log import covered_accuracy, decision_log, not_reached

pytestmark = pytest.mark.django_db


def flat(points):
    return [float(v) for point in points for v in point]


def iw_at(log, t):
    """The estimate over the first ``t`` items, or None while one of them waits for a label."""
    covered = covered_accuracy(log[:t])
    return covered.estimate if covered.stop == t else None


def check(project):
    log = decision_log(project)
    m = project_metrics(project)
    assert m["seen"] == len(log) and m["queried"] == sum(1 for d in log if d.queried)
    gold = [(d.gold, d.prediction) for d in log if d.gold is not None]
    assert m["accuracy_gold"]["n"] == len(gold)
    assert m["accuracy_gold"]["value"] == pytest.approx(accuracy(*zip(*gold, strict=True)) if gold else None)
    labelled = [d for d in log if d.label is not None]
    assert m["items_labelled"] == m["labels_applied"] == len(labelled) == m["accuracy_queried"]["n"]
    assert m["accuracy_queried"]["value"] == pytest.approx(
        sum(d.label == d.prediction for d in labelled) / len(labelled) if labelled else None)
    want = covered_accuracy(log)
    got = m["accuracy_iw"]
    assert got["seen"] == want.seen == m["coverage"]["covered_items"]
    assert m["coverage"]["unasked_items"] == sum(1 for d in log if d.query_prob == 0)
    assert m["coverage"]["not_reached_by_cause"] == not_reached(log)
    assert sum(not_reached(log).values()) == m["coverage"]["not_reached_items"]
    assert (got["value"], got["low"], got["high"], got["n"]) == pytest.approx(
        (want.estimate.value, want.estimate.low, want.estimate.high, want.estimate.n))
    c = curves(project)
    xs = [t for t, _ in c["query_ratio"]]
    assert xs == sorted(xs) and xs[-1] == len(log) and len(xs) <= 2 * running_totals.CURVE_POINTS + 1
    cum_q = np.cumsum([d.queried for d in log])
    assert flat(c["query_ratio"]) == pytest.approx(flat([(t, cum_q[t - 1] / t) for t in xs]))
    iw_points = [(t, e.value) for t in xs if (e := iw_at(log, t)) is not None and e.value is not None]
    assert flat(c["iw"]) == pytest.approx(flat(iw_points))
    gold_points = []
    for t in xs:
        g = [(d.gold, d.prediction) for d in log[:t] if d.gold is not None]
        if g:
            gold_points.append((t, accuracy(*zip(*g, strict=True))))
    assert flat(c["gold"]) == pytest.approx(flat(gold_points))
    check_per_class(project, log)


def check_per_class(project, log):
    """The per-class aggregates (docs/estimates.md) equal the same sums over the whole log."""
    stats = StreamStats.objects.get(project=project)
    index = {c: k for k, c in enumerate(project.classes)}
    gold = [(index[d.gold], index[d.prediction]) for d in log if d.gold is not None]
    assert np.array_equal(gold_matrix(project, stats), confusion(*zip(*gold, strict=True), 10) if gold
                          else np.zeros((10, 10)))
    stop = covered_accuracy(log).stop
    stream = [d for d in log[:stop] if d.in_stream]
    asked = [d for d in stream if d.queried]
    want = Cells.of([index[d.label] for d in asked], [index[d.prediction] for d in asked],
                    [d.query_prob for d in asked], 10)
    got = iw_cells(project, stats)
    for name in ("m", "s1", "s2"):
        assert getattr(got, name) == pytest.approx(getattr(want, name)), name
    auto = np.bincount([index[d.prediction] for d in stream if not d.queried], minlength=10)
    assert np.array_equal(iw_auto(project, stats), auto)


def test_aggregates_equal_the_recomputation_on_a_random_stream(monkeypatch):
    monkeypatch.setattr(running_totals, "CURVE_POINTS", 3)  # the step doubles several times in 400 items
    project = digits_project(400, look_ahead=4, params={"query": "random", "p": 0.3})
    users = [member(project, f"ann{k}") for k in range(3)]
    rng = np.random.default_rng(5)
    update_project(project.pk)
    check(project)
    actions = {"label": 0, "wrong": 0, "skip": 0, "undo": 0, "leave": 0}
    for _ in range(160):
        user = users[rng.integers(len(users))]
        action = rng.choice(["label", "label", "label", "wrong", "skip", "undo", "leave"])
        item = lease_next(project, user)
        if item is None:
            break
        if action in ("label", "wrong"):
            value = item.gold if action == "label" else (item.gold + 1) % 10
            submit_label(project, item.pk, user, value)
        elif action == "skip":
            skip_item(item, user)
        elif action == "undo":
            try:
                undo_last_label(project, user)
            except ValueError:
                continue  # nothing of theirs to undo
        actions[str(action)] += 1
        update_project(project.pk)
        check(project)
    assert all(actions.values()), actions  # every kind of event happened
    assert any(c[4] is not None for c in StreamStats.objects.get(project=project).checkpoints)
    # the same aggregates once more, rebuilt from the log
    before = project_metrics(project)
    running_totals.rebuild(project.pk)
    after = project_metrics(project)
    assert after.keys() == before.keys()
    assert after.pop("coverage") == before.pop("coverage")  # counts and sentences: exactly
    assert all(after[key] == pytest.approx(value) for key, value in before.items())


def _totals(stats):
    return (stats.frontier, stats.iw_seen, stats.iw_m, stats.iw_s1, stats.iw_s2, stats.iw_cells,
            stats.iw_auto, stats.left_out)


def test_a_dispute_settled_behind_the_frontier_joins_the_estimates_as_a_rebuild_counts_it():
    """Two annotators disagree on a queried item (overlap 2, majority vote): the frontier passes
    it, left out in dispute; when the reviewer decides it, its label joins the running totals,
    which then equal a rebuild from the log (docs/estimates.md), and the coverage says why an item
    is not reached: in dispute, then relabelled by an admin."""
    from annotator.labelling.models import Membership, Review
    from harness.chosen_labels import label_chosen
    from tests.support.app import SPAM, client_for, member, text_project

    project = text_project(SPAM, overlap_k=2, overlap_fraction=1.0, look_ahead=6,
                           params={"delta": 0.5, "query": "all"})
    update_project(project.pk)
    ann, bob = member(project, "ann"), member(project, "bob")
    items = list(project.items.order_by("seq"))
    for k, item in enumerate(items):
        label_chosen(project, item.pk, ann, "spam" if k == 1 else ["ham", "spam"][k % 2])
        label_chosen(project, item.pk, bob, "ham" if k == 1 else ["ham", "spam"][k % 2])
    update_project(project.pk)
    stats = StreamStats.objects.get(project=project)
    assert stats.frontier == 6 and stats.iw_m == 5 and stats.left_out == {"disputed": 1}
    admin = client_for(member(project, "boss", Membership.Role.ADMIN))
    coverage = admin.get(f"/api/projects/{project.pk}/metrics").json()["coverage"]
    assert coverage["not_reached_by_cause"] == {"disputed": 1} == not_reached(decision_log(project))
    assert "1 item in dispute, without a settled consensus (covered once a reviewer decides)" \
        in coverage["summary"]

    review = Review.objects.get(item=items[1], decided_at__isnull=True)
    rita = client_for(member(project, "rita", Membership.Role.REVIEWER))
    decided = rita.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"})
    assert decided.status_code == 302
    update_project(project.pk)
    after = _totals(StreamStats.objects.get(project=project))
    assert after[:3] == (6, 6, 6)  # the settled item is in the estimate
    assert after == _totals(running_totals.rebuild(project.pk))
    m = project_metrics(project)
    want = covered_accuracy(decision_log(project))
    assert m["accuracy_iw"]["n"] == want.estimate.n == 6
    assert m["accuracy_iw"]["value"] == pytest.approx(want.estimate.value)
    assert m["coverage"]["not_reached_items"] == 0 and m["coverage"]["not_reached_by_cause"] == {}

    relabelled = admin.post(f"/projects/{project.pk}/items/{items[2].pk}/relabel", {"value": "ham"})
    assert relabelled.status_code == 302
    update_project(project.pk)
    after = _totals(StreamStats.objects.get(project=project))
    assert after == _totals(running_totals.rebuild(project.pk)) and after[7] == {"relabelled": 1}
    coverage = admin.get(f"/api/projects/{project.pk}/metrics").json()["coverage"]
    assert coverage["not_reached_by_cause"] == {"relabelled": 1} == not_reached(decision_log(project))
    assert "not reached: 1 item relabelled by an admin or in Label Studio (not a draw of the query rule)." \
        in coverage["summary"] and "skipped" not in coverage["summary"]


def test_aggregates_from_before_the_left_out_count_are_built_again_on_first_use():
    """Aggregates whose walk did not count what it left out (``left_out`` NULL, as migration 0038
    leaves the existing rows, their checkpoints without it) are built from the log on first use:
    by a request (the metrics) as by the worker (``running_totals.load``)."""
    from tests.support.app import member, teach

    project = digits_project(40, look_ahead=40, budget_ratio=0.2)
    teach(project, member(project, "ann"))
    want = _totals(StreamStats.objects.get(project=project))
    old = [c[:8] + ([c[8][:2]] if c[8] else [None])  # the checkpoints as the walk kept them then
           for c in StreamStats.objects.get(project=project).checkpoints]
    for read in (project_metrics, lambda p: running_totals.load(p.pk)):
        StreamStats.objects.filter(project=project).update(left_out=None, checkpoints=old)
        read(project)
        assert _totals(StreamStats.objects.get(project=project)) == want
        assert all(len(c[8]) == 3 for c in StreamStats.objects.get(project=project).checkpoints if c[8])
