"""The dashboard's class distributions (running totals of labels and auto-decisions per class)
and its cost-per-accuracy view (the learner against random querying at the same label rate on
the gold items, docs/cost.md), through the Django test client and against direct computations."""

from __future__ import annotations

import importlib
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from django.apps import apps

import learners
from annotator.labelling.annotation.actions import undo_last_label
from annotator.labelling.engine import running_totals
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import CostView, Item, Label, Project, StreamStats
from annotator.labelling.reporting.cost_view import RUNS, compute, rows_wanted
from annotator.labelling.worker.tasks import compute_cost_view
from harness.chosen_labels import label_chosen
from learners.evaluation.engine import replay
from tests.support.app import digits_project, member
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def _panel(client, project):
    return parse(client.get(f"/projects/{project.pk}/dashboard/panel", **HX).content)


def _label_the_stream(project, user, wrong_every=0):
    """Decide every item, labelling each queried one with its gold class (every ``wrong_every``-th
    label with another class when > 0), as annotators and the worker would."""
    k = 0
    while True:
        update_project(project.pk)
        queued = list(Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq"))
        if not queued:
            break
        for item in queued:
            k += 1
            value = item.gold if not wrong_every or k % wrong_every else (item.gold + 1) % 10
            label_chosen(project, item.pk, user, value)
    update_project(project.pk)


def _distribution(panel):
    """``{class: (labels, auto)}`` as the dashboard's table shows them."""
    out = {}
    for row in panel.by_id("class-distribution").find_all("tr")[1:]:
        counts = [int(td.find("span", class_="count").text) for td in row.find_all("td")]
        out[row.find("th").text] = tuple(counts)
    return out


def test_class_distributions_are_the_counts_of_the_log_and_follow_an_undo(client):
    project = digits_project(80, params={"delta": 0.3})
    ann = member(project, "ann")
    _label_the_stream(project, ann, wrong_every=5)
    client.force_login(member(project, "boss", role="admin"))
    labels = Counter(str(v) for v in Label.objects.filter(project=project, primary=True)
                     .values_list("value", flat=True))
    auto = Counter(str(p) for p in Item.objects.filter(project=project, queried=False)
                   .values_list("prediction", flat=True))
    assert sum(labels.values()) > 5 and sum(auto.values()) > 5  # both sides have something to show
    shown = _distribution(_panel(client, project))
    assert shown == {str(c): (labels[str(c)], auto[str(c)]) for c in project.classes}
    meters = _panel(client, project).by_id("class-distribution").find_all("meter")
    assert all(m.attrs.get("aria-label") for m in meters) and len(meters) == 20
    # an undo takes the label out of the counts (the running totals, not a scan)
    Item.objects.filter(project=project, status=Item.Status.LEASED).update(status=Item.Status.QUEUED,
                                                                           lease_owner=None)
    last = Label.objects.filter(project=project, annotator=ann).order_by("-id").first()
    undo_last_label(project, ann)
    update_project(project.pk)
    labels[str(last.value)] -= 1
    assert _distribution(_panel(client, project))[str(last.value)][0] == labels[str(last.value)]
    # the running totals equal a rebuild from the log, and the migration's fill
    agg = StreamStats.objects.get(project=project)
    rebuilt = running_totals.rebuild(project.pk)
    assert (agg.label_classes, agg.auto_classes) == (rebuilt.label_classes, rebuilt.auto_classes)
    StreamStats.objects.filter(project=project).update(label_classes={}, auto_classes={})
    migration = importlib.import_module("annotator.labelling.migrations.0011_stream_class_counts")
    migration.count_classes(apps, None)
    filled = StreamStats.objects.get(project=project)
    nonzero = {k: v for k, v in agg.label_classes.items() if v}  # an undone class may count 0
    assert filled.label_classes == nonzero
    assert filled.auto_classes == agg.auto_classes


def test_cost_view_compares_the_learner_with_random_querying_at_its_label_rate(client, settings):
    settings.BASELINE_MAX_ITEMS = 60
    project = digits_project(70, params={"delta": 0.5}, price_per_label=0.25)
    _label_the_stream(project, member(project, "ann"))
    gold_n = StreamStats.objects.get(project=project).gold_n
    assert gold_n == 70 and rows_wanted(gold_n) == 60
    view = compute(project, gold_n)
    # the learner's own curve: its logged decisions on the first 60 gold items
    items = list(Item.objects.filter(project=project).order_by("seq")[:60])
    queried = sum(bool(i.queried) for i in items)
    right = np.mean([i.prediction == i.gold for i in items])
    assert view["items"] == 60 and view["active_end"] == (queried, pytest.approx(right))
    assert view["p"] == pytest.approx(queried / 60)
    # random querying: the same learner with query="random", p = that rate, on the same items
    n_features = project.featurizer().n_features
    X = sp.vstack([sp.csr_matrix(decode(i.vector, n_features)) for i in items], format="csr")
    y = np.array([project.classes.index(i.gold) for i in items])
    acc, spent = [], []
    for run in range(RUNS):
        lrn = learners.make(project.algorithm, n_features=n_features, classes=project.classes,
                            **{**project.learner_params(), "query": "random", "p": queried / 60})
        trace = replay(lrn, X, y, np.random.default_rng(run))
        acc.append(np.mean(trace.pred == y))
        spent.append(trace.queried.sum())
    assert view["random_end"] == (pytest.approx(np.mean(spent)), pytest.approx(np.mean(acc)))
    client.force_login(member(project, "boss", role="admin"))
    # no request replays the baseline: "computing..." until a worker stored it
    panel = _panel(client, project)
    assert panel.by_id("cost-summary").text.strip().startswith("Computing…")
    assert panel.by_id("chart-cost").find("text", class_="no-data").text == "computing…"
    compute_cost_view(project.pk)  # what the worker asked by that request runs
    stored = CostView.objects.get(project=project)
    assert stored.view["active_end"] == [queried, pytest.approx(right)]
    assert stored.requested == stored.fingerprint
    panel = _panel(client, project)
    summary = panel.by_id("cost-summary").text
    assert "On the first 60 decided items with a gold class" in summary
    assert f"with {queried} of them asked" in summary
    assert "cost" not in summary.split("Random querying:")[0]  # no money here: the label cost card's
    given = Label.objects.filter(project=project, kind="opinion").count()
    assert float(panel.by_id("m-cost").text) == pytest.approx(0.25 * given)
    svg = panel.by_id("chart-cost").find("svg")
    assert "random querying, same label rate" in svg.text and svg.find_all("circle")
    # a learner that changes between labels (KMC) is not replayed: its own curve alone, and why
    Project.objects.filter(pk=project.pk).update(algorithm="kmc", params={})
    project.refresh_from_db()
    update_project(project.pk)  # the pipeline follows the switch (a new revision for the dashboard)
    view = compute(project, gold_n)
    assert view["random"] == [] and view["random_end"] is None and view["active_end"][0] == queried
    panel = _panel(client, project)  # the stored view is stale (another algorithm): shown, computing
    assert "with a gold class" in panel.by_id("cost-summary").text and panel.by_id("cost-computing")
    compute_cost_view(project.pk)
    panel = _panel(client, project)
    assert "Random querying is not replayed for kmc" in panel.by_id("no-random").text
    assert not panel.find_all(id="cost-computing")


def test_cost_view_says_no_data_yet_without_gold(client):
    project = digits_project(30)
    Item.objects.filter(project=project).update(gold=None)
    update_project(project.pk)
    client.force_login(member(project, "boss", role="admin"))
    panel = _panel(client, project)
    assert panel.by_id("cost-summary").text.startswith("No data yet")
    assert panel.by_id("chart-cost").find("svg").find("text", class_="no-data").text.startswith("no data yet")
    assert set(_distribution(panel)) == {str(c) for c in project.classes}


def _figures(admin, project):
    """The label counts and the label cost as the metrics API, the dashboard panel and the console
    show them to an admin."""
    api = admin.get(f"/api/projects/{project.pk}/metrics").json()
    panel = _panel(admin, project)
    console = parse(admin.get(f"/projects/{project.pk}/console").content)
    return {"api": (api["items_labelled"], api["labels_given"], api["label_cost"]),
            "dashboard": (int(panel.by_id("m-labels").text), int(panel.by_id("m-labels-given").text),
                          float(panel.by_id("m-cost").text)),
            "console": (int(console.by_id("s-labelled").text),
                        int(console.by_id("s-labels-given").text.split()[0]),
                        float(console.by_id("s-labels-given").text.split("label cost")[1].split()[0]))}


def test_the_label_counts_and_the_label_cost_are_one_figure_each_and_the_cost_never_falls():
    """Two annotators label every queried item (overlap 2, majority vote), a reviewer decides a
    dispute, an admin relabels an item, an annotator undoes one label and changes another, and a
    third answers a honeypot (docs/cost.md): "queried items labelled" is the same on the console,
    the dashboard and in the API; the label cost is the price times every label people gave, the
    same everywhere, and none of these events lowers it."""
    from annotator.labelling.annotation.actions import change_label
    from annotator.labelling.models import Honeypot, Membership, Review
    from annotator.labelling.reporting.metrics import model_metrics
    from tests.support.app import SPAM, client_for, text_project

    project = text_project(SPAM, overlap_k=2, overlap_fraction=1.0, price_per_label=0.5, look_ahead=6,
                           params={"delta": 0.5, "query": "all"})
    update_project(project.pk)
    ann, bob, cat = member(project, "ann"), member(project, "bob"), member(project, "cat")
    admin = client_for(member(project, "boss", Membership.Role.ADMIN))
    items = list(Item.objects.filter(project=project).order_by("seq"))
    assert all(i.status == Item.Status.QUEUED and i.overlap_k == 2 for i in items)
    costs = []

    def check(labelled, given):
        figures = _figures(admin, project)
        want = (labelled, given, pytest.approx(0.5 * given))
        assert figures == {"api": want, "dashboard": want, "console": want}, figures
        assert given == Label.objects.filter(project=project, kind="opinion").count()
        costs.append(0.5 * given)
        assert costs == sorted(costs)  # never lower than before

    for k, item in enumerate(items):  # ann and bob agree but on the last item
        label_chosen(project, item.pk, ann, ["ham", "spam"][k % 2])
        label_chosen(project, item.pk, bob, ["ham", "spam"][k % 2] if k < 5 else "ham")
    update_project(project.pk)
    check(5, 12)  # the disputed item has no label yet
    bob_client = client_for(bob)
    assert bob_client.post(f"/projects/{project.pk}/undo", **HX).status_code == 200  # bob's last: item 5
    update_project(project.pk)
    check(5, 12)  # the undone label was given all the same
    label_chosen(project, items[5].pk, bob, "ham")
    update_project(project.pk)
    check(5, 13)
    review = Review.objects.get(project=project, item=items[5], decided_at__isnull=True)
    rita = client_for(member(project, "rita", Membership.Role.REVIEWER))
    assert rita.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"},
                     **HX).status_code == 200
    update_project(project.pk)
    check(6, 13)  # the decision is the item's label: no label given
    relabelled = admin.post(f"/projects/{project.pk}/items/{items[0].pk}/relabel", {"value": "spam"})
    assert relabelled.status_code == 302
    update_project(project.pk)
    check(5, 13)  # the relabelled item leaves the sample; its labels were given
    mine = Label.objects.get(item=items[1], annotator=ann)
    change_label(project, ann, mine.pk, "ham")  # now ann says ham, bob spam: disputed again
    update_project(project.pk)
    check(4, 14)  # a change is a second answer
    Honeypot.objects.create(project=project, item=items[2], annotator=cat)
    assert client_for(cat).post(f"/projects/{project.pk}/items/{items[2].pk}/label", {"value": "ham"},
                                **HX).status_code == 200
    update_project(project.pk)
    check(4, 15)  # a honeypot answer is paid as any answer
    assert model_metrics(project)["labels_given"] == 15  # the model card's figures too
