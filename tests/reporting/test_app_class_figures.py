"""Per-class figures on the dashboard, the quality target and its stop rule, and the planner's
ranking by a chosen metric with the majority baseline (docs/estimates.md)."""

from __future__ import annotations

import pytest

from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Item, Membership, PlannerRun, Review
from annotator.labelling.reporting import planner
from annotator.labelling.reporting.class_figures import class_figures
from annotator.labelling.reporting.dashboard import dashboard_data
from annotator.labelling.reporting.metrics import project_metrics
from annotator.labelling.teams.reviews import decide
from annotator.labelling.worker import tasks
from learners.evaluation.per_class import confusion, exact_figures
from tests.support.app import SPAM, digits_project, member, teach, text_project
from tests.support.decision_log import covered_accuracy, decision_log
from tests.support.html import parse

pytestmark = pytest.mark.django_db


def exact_from_items(project):
    """The exact figures recomputed from the items' gold class and logged prediction."""
    index = {c: k for k, c in enumerate(project.classes)}
    rows = list(Item.objects.filter(project=project, gold__isnull=False).decided()
                .values_list("gold", "prediction"))
    return exact_figures(confusion([index[g] for g, _ in rows], [index[p] for _, p in rows], len(index)),
                         project.classes)


def test_every_item_queried_gives_estimates_equal_to_the_exact_figures(client):
    project = digits_project(60, params={"delta": 1.0, "query": "all"})
    teach(project, member(project, "ann"))
    assert not Item.objects.filter(project=project, status=Item.Status.AUTO).exists()
    want = exact_from_items(project)
    figures = dashboard_data(project)["per_class"]
    assert figures["gold_n"] == want["n"] == 60 and figures["labels"] == 60
    for row, exact in zip(figures["rows"], want["classes"], strict=True):
        assert row["support"] == exact["support"]
        for f in ("precision", "recall", "f1"):
            assert row[f"{f}_exact"] == pytest.approx(exact[f])
            est = row[f"{f}_est"]
            assert est["value"] == pytest.approx(exact[f])
            assert est["low"] == est["high"] == pytest.approx(exact[f])
    for o in figures["overall"]:
        assert o["exact"] == pytest.approx(want[o["name"]]) == pytest.approx(o["est"]["value"])
        base = want["baseline"][o["name"]]
        assert o["base_exact"] == pytest.approx(base) == pytest.approx(o["base_est"]["value"])
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/dashboard").content)
    table = page.find(id="per-class")
    assert len(table.find_all(class_="per-class-row")) == 10
    assert f"{want['macro_f1']:.3f}" in page.find(id="figure-macro_f1").text


def test_the_stop_rule_stops_asking_and_resumes_when_the_audit_contradicts_the_target():
    project = imbalanced_project(120, spam_every=4, params={"delta": 0.5, "query": "random", "p": 0.5},
                                 quality_target=0.6, stop_at_target=True, audit_rate=1.0)
    teach(project, member(project, "ann"))
    reviewer = member(project, "rev", Membership.Role.REVIEWER)
    for review in Review.objects.filter(project=project, decided_at__isnull=True):  # the audits agree
        decide(project, review.pk, reviewer, review.item.prediction)
    status = dashboard_data(project)["target"]
    assert status["proved"] and status["holds"] and not status["stopped"]

    def add_items(start):
        import_records(project, records(start, 40, 4))
        tasks.advance_stream(project.pk)  # the task's body: the stop rule, then the pipeline
        project.refresh_from_db()
        return Item.objects.filter(project=project, seq__gte=start)

    added = add_items(120)
    assert project.asking_stopped
    assert added.count() == 40 and all(i.status == Item.Status.AUTO and i.query_prob == 0 and not i.queried
                                       for i in added)
    assert dashboard_data(project)["target"]["stopped"] and "asks nobody" in panel_text(project)
    # the items nobody could be asked about are outside the estimator's stream, in the aggregates
    # as in the rule applied to the whole log
    want, got = covered_accuracy(decision_log(project)), project_metrics(project)["accuracy_iw"]
    assert got["seen"] == want.seen == 120 and got["covers"] == 160
    assert got["value"] == pytest.approx(want.estimate.value)
    coverage = project_metrics(project)["coverage"]  # and the dashboard says what they cover
    assert coverage["covered_items"] == 120 and coverage["unasked_by_cause"] == {"stopped": 40}
    assert coverage["warning"]  # 75% covered
    text = " ".join(panel_text(project).split())
    assert "not covered: 40 items decided while the stop rule held (nobody was asked)" in text
    assert 'id="coverage-warning"' in text and "come after the covered ones" in text
    # every model label decided while nobody was asked is audited; the reviewers find them all wrong
    for review in Review.objects.filter(project=project, decided_at__isnull=True):
        decide(project, review.pk, reviewer, "ham" if review.item.prediction == "spam" else "spam")
    added = add_items(160)
    assert not project.asking_stopped
    assert added.filter(queried=True).exists() and not added.filter(query_prob=0).exists()
    status = dashboard_data(project)["target"]
    assert status["contradicted"] and not status["holds"]
    add_items(200)  # it keeps asking: the admin re-arms the rule
    assert not project.asking_stopped and project.stopped_from_seq == 120
    project.stop_at_target = False
    project.save()
    add_items(240)
    assert project.stopped_from_seq is None and not project.asking_stopped


def panel_text(project):
    from django.template.loader import render_to_string

    return render_to_string("labelling/_dashboard_panel.html", {"project": project, "is_admin": True,
                                                                 **dashboard_data(project)})


HAMS = ["see you at the station", "call me when you get home", "are we still on for lunch"]


def records(start, n, spam_every):
    """Texts ``start .. start + n - 1``: one in ``spam_every`` spam (SPAM phrases), the rest ham."""
    return [Record(f"line {i}", f"{SPAM[i % 3 * 2]} {i}" if i % spam_every == 0 else f"{HAMS[i % 3]} {i}",
                   "spam" if i % spam_every == 0 else "ham") for i in range(start, start + n)]


def imbalanced_project(n=120, spam_every=8, **fields):
    """A binary text project (ham/spam) of ``n`` texts with gold, 1 spam in ``spam_every``."""
    project = text_project(**fields)
    import_records(project, records(0, n, spam_every))
    return project


def test_the_planner_ranks_by_the_chosen_metric_and_flags_settings_below_the_baseline(client):
    project = imbalanced_project()
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    form = {"algorithm-0": "paa-i", "delta-0": "0.001", "algorithm-1": "paa-i", "delta-1": "4",
            "algorithm-2": "paa", "delta-2": "1", "runs": "2"}
    assert client.post(f"/projects/{project.pk}/planner", form).status_code == 302
    job = planner.run(PlannerRun.objects.get(project=project).pk)
    assert job.status == "done"
    assert planner.default_metric(project, job.results) == "macro_f1"  # 1 spam in 8: imbalanced
    for metric in ("macro_f1", "accuracy", "balanced_accuracy"):
        query = f"?metric={metric}" if metric != "macro_f1" else ""  # macro-F1: the default here
        url = f"/projects/{project.pk}/planner/{job.pk}{query}"
        rows = parse(client.get(url).content).find(class_="planner-ranked").find_all("tr")[1:]
        order = [int(r.attrs["data-index"]) for r in rows]
        values = [job.results[i]["mean"][metric] for i in order]
        assert values == sorted(values, reverse=True), metric
        for r, i in zip(rows, order, strict=True):
            below = job.results[i]["mean"][metric] <= job.results[i]["mean"][f"baseline_{metric}"]
            assert ("below-baseline" in r.classes) == below
            assert ("does not beat the majority baseline" in r.text) == below
    # a setting that answers the majority class every time is flagged, whatever else it scores
    results = [dict(r) for r in job.results]
    results[0]["mean"] = {**results[0]["mean"], "macro_f1": results[0]["mean"]["baseline_macro_f1"],
                          "accuracy": 0.999}
    PlannerRun.objects.filter(pk=job.pk).update(results=results)
    panel = parse(client.get(f"/projects/{project.pk}/planner/{job.pk}").content)
    flagged = [int(r.attrs["data-index"]) for r in panel.find_all(class_="below-baseline")]
    assert 0 in flagged
    top = panel.find(class_="planner-ranked").find_all("tr")[1]
    assert int(top.attrs["data-index"]) != 0 or results[0]["mean"]["macro_f1"] >= max(
        r["mean"]["macro_f1"] for r in results)
    tried = parse(client.get(f"/projects/{project.pk}/planner").content).find(id="planner-tried")
    assert tried.text.count("does not beat the majority baseline") == sum(
        r["mean"]["macro_f1"] <= r["mean"]["baseline_macro_f1"] for r in results)
    assert client.get(f"/projects/{project.pk}/planner/{job.pk}?metric=nonsense").status_code == 400
    assert client.get(f"/projects/{project.pk}/planner?metric=nonsense").status_code == 400


def test_a_model_that_answers_the_majority_class_is_marked_below_the_baseline():
    """Aggregates of a model that says "ham" to everything: exact and estimated macro-F1 and
    balanced accuracy equal the baseline's, and both are marked."""
    from annotator.labelling.engine.running_totals import cell_key
    from annotator.labelling.models import StreamStats

    project = text_project()
    stats = StreamStats(project=project,
                        gold_cells={cell_key("ham", "ham"): 86, cell_key("spam", "ham"): 14},
                        iw_cells={cell_key("ham", "ham"): [40, 90.0, 60.0],
                                  cell_key("spam", "ham"): [8, 12.0, 3.0]},
                        iw_auto={"ham": 52}, iw_seen=100, frontier=100)
    figures = class_figures(project, stats)
    rows = {o["name"]: o for o in figures["overall"]}
    for name in ("macro_f1", "balanced_accuracy"):
        assert rows[name]["below_exact"] and rows[name]["below_est"], name
    accuracy = rows["accuracy"]
    assert accuracy["exact"] == accuracy["base_exact"] == 0.86 and accuracy["below_exact"]
    assert figures["baseline_class"] == {"exact": "ham", "est": "ham"}


def test_the_estimated_accuracy_and_its_baseline_are_estimated_alike(client):
    """The badge "not above the baseline" on the estimated accuracy compares two Horvitz-Thompson
    estimates over the covered items (docs/estimates.md): here the model is right on every labelled
    item, spam ones included, so it beats always answering "ham" whatever the weights; 4 labels
    (3 ham at q = 1, 1 spam at q = 0.5) over 10 covered items give an accuracy of 5/10, and a
    baseline by the ratio of the labels (3 of 5) would have read 0.6 and marked it below."""
    from annotator.labelling.engine.running_totals import cell_key
    from annotator.labelling.models import StreamStats

    project = text_project()
    StreamStats.objects.create(project=project, iw_cells={cell_key("ham", "ham"): [3, 3.0, 0.0],
                                                          cell_key("spam", "spam"): [1, 2.0, 2.0]},
                               iw_auto={"ham": 6}, iw_seen=10, frontier=10)
    accuracy = {o["name"]: o for o in class_figures(project, StreamStats.objects.get(project=project))
                ["overall"]}["accuracy"]
    assert accuracy["est"]["value"] == pytest.approx(0.5)
    assert accuracy["base_est"]["value"] == pytest.approx(0.3)  # the ham labels, 3 / 10 covered items
    assert not accuracy["below_est"]
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    row = parse(client.get(f"/projects/{project.pk}/dashboard").content).find(id="figure-accuracy")
    assert "not above the baseline" not in row.text
