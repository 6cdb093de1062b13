"""The delta planner: its replays equal the replay engine's, its pages, and a real worker running it."""

from __future__ import annotations

import re

import pytest

import learners
from annotator.labelling.engine import jobs
from annotator.labelling.models import Membership, PlannerRun, ProjectChange
from annotator.labelling.reporting import planner
from learners.evaluation.engine import Setting, run_once, summarise
from tests.support.app import Worker, digits_project, member
from tests.support.html import error_text

CANDIDATES = {"algorithm-0": "mpaa-i", "delta-0": "0.1", "algorithm-1": "mpaa", "delta-1": "1",
              "runs": "2"}


def _admin(client, project):
    client.force_login(member(project, "boss", Membership.Role.ADMIN))


@pytest.mark.django_db
def test_planner_results_equal_a_direct_replay(client):
    project = digits_project(120)
    _admin(client, project)
    assert client.post(f"/projects/{project.pk}/planner", CANDIDATES).status_code == 302
    job = PlannerRun.objects.get(project=project)
    assert job.candidates == [{"algorithm": "mpaa-i", "delta": 0.1}, {"algorithm": "mpaa", "delta": 1.0}]
    job = planner.run(job.pk)  # what the Celery task runs
    assert job.status == "done" and job.source == "gold" and job.done == job.total == 4
    X, task, _ = planner.planner_data(project)
    for cand, got in zip(job.candidates, job.results, strict=True):
        params = planner.candidate_params(project, cand["algorithm"], cand["delta"])
        mean, _ = summarise([run_once(Setting(cand["algorithm"], params), X, task, 0, r) for r in range(2)])
        assert got["mean"]["accuracy"] == mean["accuracy"]
        assert got["mean"]["query_ratio"] == mean["query_ratio"]
    panel = client.get(f"/projects/{project.pk}/planner/{job.pk}").content.decode()
    assert "<svg" in panel and "use this setting" in panel and "mpaa delta=1" in panel
    assert client.post(f"/projects/{project.pk}/planner/{job.pk}/use/1").status_code == 302
    project.refresh_from_db()
    assert project.algorithm == "mpaa" and project.params["delta"] == 1.0
    # the planner records like the console: every parameter that changed, not only delta
    old = learners.validate_params("mpaa-i", {"delta": 1.0})
    new = learners.validate_params("mpaa", {"delta": 1.0})
    changed = {f"params.{k}" for k in set(old) | set(new) if old.get(k) != new.get(k)}
    recorded = set(ProjectChange.objects.filter(project=project).values_list("field", flat=True))
    assert changed and recorded == {"algorithm"} | changed


@pytest.mark.django_db
@pytest.mark.parametrize("form,needle", [({"algorithm-0": "paa-i", "delta-0": "1"}, "does not support"),
                                         ({"algorithm-0": "mpaa-i", "delta-0": "0"}, "delta must be"),
                                         ({}, "at least one candidate")])
def test_bad_planner_forms_are_refused(client, form, needle):
    project = digits_project(20)
    _admin(client, project)
    response = client.post(f"/projects/{project.pk}/planner", form)
    assert response.status_code == 400 and needle in error_text(response.content)
    assert not PlannerRun.objects.exists()


@pytest.mark.django_db
def test_planner_without_enough_labels_fails_clearly(client):
    project = digits_project(0)
    job = PlannerRun.objects.create(project=project, candidates=[{"algorithm": "mpaa-i", "delta": 1.0}])
    job = planner.run(job.pk)
    assert job.status == "failed" and "at least 10 items" in job.error


@pytest.mark.django_db
def test_a_planner_run_on_too_few_items_is_refused_on_the_form(client):
    project = digits_project(0)
    _admin(client, project)
    response = client.post(f"/projects/{project.pk}/planner", CANDIDATES)
    assert response.status_code == 400
    assert "the planner needs at least 10 items with a gold label or a label; this project has 0" in \
        error_text(response.content)
    assert not PlannerRun.objects.exists()


@pytest.mark.django_db
def test_annotators_cannot_use_the_planner(client):
    project = digits_project(20)
    client.force_login(member(project, "ann"))
    assert client.get(f"/projects/{project.pk}/planner").status_code == 403
    assert client.post(f"/projects/{project.pk}/planner", CANDIDATES).status_code == 403


@pytest.mark.slow
def test_a_real_worker_runs_the_planner(transactional_db, client, tmp_path):
    project = digits_project(100)
    _admin(client, project)
    worker = Worker(tmp_path / "worker.log")
    try:
        assert client.post(f"/projects/{project.pk}/planner", CANDIDATES).status_code == 302
        job = PlannerRun.objects.get(project=project)
        worker.wait_for(lambda: PlannerRun.objects.get(pk=job.pk).status == "done", 120, "the planner run")
    finally:
        worker.stop()
    job.refresh_from_db()
    assert job.done == job.total == 4 and len(job.results) == 2


@pytest.mark.django_db
def test_planner_shows_its_cost_refuses_runs_above_the_bound_and_is_cancelled(client, settings):
    project = digits_project(120)
    _admin(client, project)
    url = f"/projects/{project.pk}/planner"
    page = client.get(url).content.decode()
    assert 'id="planner-estimate"' in page and "120 items" in page
    settings.PLANNER_MAX_COST = 120 * 2 * 3 - 1
    response = client.post(url, {**CANDIDATES, "runs": "3"})
    assert response.status_code == 400
    assert "120 items x 2 candidate(s) x 3 permutation(s) = 720 item steps, above the bound of 719" \
        in response.content.decode()
    assert not PlannerRun.objects.exists()
    settings.PLANNER_MAX_COST = 720
    assert client.post(url, {**CANDIDATES, "runs": "3"}).status_code == 302
    job = PlannerRun.objects.get(project=project)
    panel = client.get(f"{url}/{job.pk}").content.decode()
    assert job.cost == 720 and '<span class="cost">720</span>' in panel and "Cancel" in panel
    assert client.post(f"{url}/{job.pk}/cancel").status_code == 302
    job.refresh_from_db()
    assert job.status == "cancelled" and "Cancel" not in client.get(f"{url}/{job.pk}").content.decode()
    assert planner.run(job.pk) is None  # a cancelled run never starts


@pytest.mark.django_db
def test_a_running_job_stops_beating_once_cancelled():
    project = digits_project(20)
    run = PlannerRun.objects.create(project=project, candidates=[])
    job = jobs.claim(PlannerRun, run.pk)
    assert job.attempt == 1 and jobs.beat(job, done=1)
    assert jobs.cancel(PlannerRun, run.pk)
    assert not jobs.beat(job, done=2)  # the worker's loop stops here
    assert PlannerRun.objects.get(pk=run.pk).done == 1 and not jobs.cancel(PlannerRun, run.pk)


@pytest.mark.slow
def test_planner_runs_on_the_heavy_queue_and_a_cancel_stops_it(transactional_db, client, tmp_path, settings):
    """A worker of the label queue alone never takes the run; the heavy queue's worker does, and
    stops after the permutation it is replaying when the run is cancelled."""
    project = digits_project(1000)
    _admin(client, project)
    labels = Worker(tmp_path / "labels.log", "-Q", settings.CELERY_TASK_DEFAULT_QUEUE)
    heavy = Worker(tmp_path / "heavy.log", "-Q", settings.CELERY_HEAVY_QUEUE)
    try:
        form = {f"{k}-{i}": v for i in range(4) for k, v in (("algorithm", "mpaa-i"), ("delta", str(i + 1)))}
        assert client.post(f"/projects/{project.pk}/planner", {**form, "runs": "20"}).status_code == 302
        job = PlannerRun.objects.get(project=project)
        heavy.wait_for(lambda: PlannerRun.objects.get(pk=job.pk).done >= 1, 120, "the run to start")
        assert client.post(f"/projects/{project.pk}/planner/{job.pk}/cancel").status_code == 302
        heavy.wait_for(lambda: re.search(r"tasks\.run_planner\[.*\] succeeded", heavy.log_path.read_text()),
                       60, "the run to stop")
    finally:
        labels.stop()
        heavy.stop()
    job.refresh_from_db()
    assert job.status == "cancelled" and 1 <= job.done < job.total == 80
    assert "Received task: annotator.labelling.tasks.run_planner" not in labels.log_path.read_text()


@pytest.mark.django_db
def test_a_running_run_lists_the_settings_it_finished_without_the_final_chart(client):
    project = digits_project(20)
    _admin(client, project)
    result = {"algorithm": "mpaa-i", "delta": 0.5, "items": 20,
              "mean": {"accuracy": 0.75, "query_ratio": 0.5}, "std": {"accuracy": 0.0, "query_ratio": 0.0}}
    job = PlannerRun.objects.create(project=project, status="running", runs=2, done=2, total=4,
                                    candidates=[{"algorithm": "mpaa-i", "delta": 0.5},
                                                {"algorithm": "mpaa-i", "delta": 1.0}], results=[result])
    panel = client.get(f"/projects/{project.pk}/planner/{job.pk}").content.decode()
    assert "1 of 2 setting(s) done" in panel and "delta=0.5: accuracy 0.7500" in panel
    assert "<svg" not in panel and "use this setting" not in panel and "Cancel" in panel


def _done_run(project) -> PlannerRun:
    """A finished run of the project's algorithm at its own delta and at another one."""
    delta = float(project.learner_params()["delta"])
    results = [{"algorithm": project.algorithm, "delta": d, "items": 20,
                "mean": {"accuracy": acc, "query_ratio": q}, "std": {"accuracy": 0.0, "query_ratio": 0.0}}
               for d, acc, q in ((delta, 0.8, 0.72), (delta * 4, 0.85, 0.9))]
    return PlannerRun.objects.create(project=project, status="done", runs=2, done=4, total=4,
                                     candidates=[{"algorithm": r["algorithm"], "delta": r["delta"]}
                                                 for r in results], results=results)


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [{"budget_ratio": 0.3}, {"budget_per_day": 50}])
def test_with_a_label_budget_no_planner_setting_runs_and_none_can_be_used(client, budget):
    """While a budget is on it sets delta: the planner says so with the project's target, marks no
    replayed setting "running now" and refuses "use this setting" (409, nothing changed)."""
    from annotator.labelling.projects.settings_changes import change_settings
    from tests.support.html import parse

    project = digits_project(20)
    _admin(client, project)
    job = _done_run(project)
    before = (project.algorithm, dict(project.params))
    # without a budget the project's own delta is the setting that runs
    page = client.get(f"/projects/{project.pk}/planner").content.decode()
    assert "running now" in parse(page).find(id="planner-tried").text
    assert parse(page).find_all(id="planner-budget") == []
    change_settings(project, None, **budget)
    response = client.get(f"/projects/{project.pk}/planner")
    html = parse(response.content)
    note = html.find(id="planner-budget").text
    target = "30.0% of the items" if "budget_ratio" in budget else "50 labels a day"
    assert "The label budget is on" in note and target in note and "sets delta" in note
    assert "delta set by the label budget" in html.find(id="planner-current").text
    tried = html.find(id="planner-tried")
    assert "running now" not in tried.text and "use this setting" not in tried.text
    assert "the label budget sets delta" in tried.text
    panel = client.get(f"/projects/{project.pk}/planner/{job.pk}").content.decode()
    assert "running now" not in panel and "use this setting" not in panel
    assert "the label budget sets delta" in panel
    changes = ProjectChange.objects.filter(project=project).count()
    for index in (0, 1):
        refused = client.post(f"/projects/{project.pk}/planner/{job.pk}/use/{index}")
        assert refused.status_code == 409 and target in refused.content.decode()
    project.refresh_from_db()
    assert (project.algorithm, project.params) == before
    assert ProjectChange.objects.filter(project=project).count() == changes
    # the budget off: the setting is usable again
    change_settings(project, None, budget_ratio=None, budget_per_day=None)
    assert client.post(f"/projects/{project.pk}/planner/{job.pk}/use/1").status_code == 302
    project.refresh_from_db()
    assert project.params["delta"] == job.candidates[1]["delta"]
