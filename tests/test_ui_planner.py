"""The delta planner: its replays equal the replay engine's, its pages, and a real worker running it."""

from __future__ import annotations

import pytest

import learners
from annotator.labelling import planner
from annotator.labelling.models import Membership, PlannerRun, ProjectChange
from learners.evaluation.engine import Setting, run_once, summarise

from .support.app import Worker, digits_project, member
from .support.html import error_text

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
