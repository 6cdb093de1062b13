"""The refit on all labels (docs/algorithms/refit.md, "Where it runs"): a heavy-queue job fits
every label, the export uses its stored result while it is current and says so in the card,
falls back to the in-request fit on the newest labels when it is stale, and the console starts
one job however often the button is pressed."""

from __future__ import annotations

import io
import json
import time
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from annotator.labelling.annotation.relabel import relabel
from annotator.labelling.engine import jobs
from annotator.labelling.engine.learner_state import stored_learner
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.stored_vectors import decode_row
from annotator.labelling.ingest import import_records
from annotator.labelling.models import Item, LearnerState, Membership, Project, RefitRun
from annotator.labelling.projects.creation import create_project
from annotator.labelling.projects.settings_changes import change_settings
from annotator.labelling.reporting import refit_runs
from annotator.labelling.worker import tasks
from harness.chosen_labels import label_chosen
from learners.model_file import refit_from_bytes
from learners.refit import steps
from tests.support.app import Worker, member, vector_records


def labelled_project(n: int) -> tuple[Project, object]:
    """A 3-class vectors project of ``n`` items, each queried (``query: random`` with p 0.5, so the
    labels carry q = 0.5; items not drawn are decided alone) and those queried labelled with their
    gold class through the label path; every label applied. Returns the project and its admin."""
    project = create_project(name=f"refit {n}", task="multiclass", item_kind="vectors", classes=[0, 1, 2],
                             algorithm="mpaa-i", params={"delta": 1.0, "query": "random", "p": 0.5},
                             featurizer_config={"kind": "vectors", "n_features": 8}, rng_seed=5,
                             look_ahead=n)
    import_records(project, vector_records([0, 1, 2], n, seed=2))
    user = member(project, "ann")
    update_project(project.pk)
    for pk, gold in Item.objects.filter(project=project, status=Item.Status.QUEUED).values_list("pk", "gold"):
        label_chosen(project, pk, user, gold)
    update_project(project.pk)
    return project, member(project, "boss", Membership.Role.ADMIN)


def _card(client, project) -> dict:
    response = client.get(f"/projects/{project.pk}/export/model.json")
    assert response.status_code == 200
    return json.loads(b"".join(response.streaming_content) if response.streaming else response.content)


@pytest.mark.django_db
def test_the_job_fits_every_label_the_export_uses_it_until_it_is_stale(client, settings, monkeypatch):
    settings.REFIT_REQUEST_MAX_LABELS = 40  # the in-request cap, lowered so a small project exceeds it
    monkeypatch.setattr(refit_runs, "PAGE", 25)  # pages of 25 vectors: the bar counts several
    project, admin = labelled_project(240)
    client.force_login(admin)
    labels = refit_runs.count_labels(project, LearnerState.objects.get(project=project).version)
    assert labels > 80
    # no job yet: the export fits in its request on the newest 40 labels, and its card says so
    card = _card(client, project)
    assert card["refit"]["source"] == "export request" and card["refit"]["labels"] == 40
    assert card["refit"]["all_labels"] is False and "newest 40 labels" in card["refit"]["why"]
    assert card["model"]["check"]["labels"] == 40
    panel = client.get(f"/projects/{project.pk}/console/refit").content.decode()
    assert "No current refit" in panel and "Refit on all labels" in panel

    # the button, pressed twice, starts one job
    first = client.post(f"/projects/{project.pk}/console", {"action": "refit"}, follow=True)
    assert "Refit on all labels started" in first.content.decode()
    again = client.post(f"/projects/{project.pk}/console", {"action": "refit"}, follow=True)
    assert "no second one was started" in again.content.decode()
    job = RefitRun.objects.get(project=project)
    assert job.status == "waiting" and 'hx-trigger="every 1s"' in again.content.decode()

    job = refit_runs.run(job.pk)  # what the Celery task runs
    state = LearnerState.objects.get(project=project)
    assert job.status == "done" and job.labels == labels and job.model_version == state.version
    assert job.done == job.total > steps(True) and job.figures["labels"] == labels
    # the items the model decided alone (those `random` did not draw) are the self-training sample
    decided = Item.objects.filter(project=project, status=Item.Status.AUTO).count()
    assert decided > 0 and job.figures["unlabelled"] == decided
    # the bar's total counts the pages read, not the most the job could have read
    assert job.total == -(-labels // refit_runs.PAGE) + -(-decided // refit_runs.PAGE) + steps(True)
    assert set(job.figures["self_training"]) == {"gain", "standard_error", "used", "neighbours"}
    assert job.chosen in ("refit", "online") and job.figures["chosen"] == job.chosen
    panel = client.get(f"/projects/{project.pk}/console/refit").content.decode()
    assert f'<b class="refit-labels">{labels}</b>' in panel and "An export uses this result" in panel
    assert "hx-trigger" not in panel  # done: the panel stops polling
    figures = job.figures
    assert f'{figures["online_accuracy"]:.3f}' in panel and f'{figures["refit_accuracy"]:.3f}' in panel
    assert (f"Self-training on {decided} items the model decided alone (each guessed label averaged "
            "with its 10 nearest items')") in panel
    assert f'{figures["self_training"]["gain"]:.3f}' in panel
    nb = figures["neighbours_at_prediction"]
    assert nb["memory_rows"] == labels + decided and f'{nb["gain"]:.3f}' in panel
    assert "Predicting with each item's 10 nearest labelled and model-decided items" in panel

    # the export now holds the stored refit of every label; the card says where it came from
    card = _card(client, project)
    assert card["refit"] == {"source": "refit job", "run": job.pk, "labels": labels, "all_labels": True,
                             "model_version": state.version, "fitted_at": job.finished.isoformat()}
    assert card["model"]["check"] == job.figures and card["model"]["used"] == job.chosen
    npz = client.get(f"/projects/{project.pk}/export/model.npz")
    data = b"".join(npz.streaming_content) if npz.streaming else npz.content
    with np.load(io.BytesIO(data), allow_pickle=False) as files:
        if job.chosen == "refit":
            stored = refit_from_bytes(bytes(job.model))
            exported = refit_from_bytes(files["refit"].tobytes())
            assert np.array_equal(exported.coef, stored.coef) and np.array_equal(exported.columns,
                                                                                  stored.columns)
        else:
            assert "refit" not in files.files

    # an admin's relabel: a new model version, the stored refit is stale and the export fits again
    item = Item.objects.filter(project=project, status=Item.Status.AUTO).first()
    relabel(project, item.pk, item.gold, admin)
    update_project(project.pk)
    assert refit_runs.current_run(project, LearnerState.objects.get(project=project)) is None
    card = _card(client, project)
    assert card["refit"]["source"] == "export request" and card["refit"]["labels"] == 40
    panel = client.get(f"/projects/{project.pk}/console/refit").content.decode()
    assert "stale" in panel and "newest 40 labels" in panel

    # a refit at the new version: the earlier version's model can never be current again, so its
    # bytes go (its figures stay for the history); the new one is what an export uses
    second = refit_runs.run(refit_runs.start(project, admin)[0].pk)
    job.refresh_from_db()
    assert second.status == "done" and second.model_version > job.model_version
    assert job.model is None and job.figures == figures
    assert refit_runs.current_run(project, LearnerState.objects.get(project=project)) == second
    assert second.model is not None


@pytest.mark.django_db
def test_the_unlabelled_sample_is_bounded_seeded_and_only_items_the_model_decided(settings):
    project, _ = labelled_project(240)
    learner = stored_learner(LearnerState.objects.get(project=project))
    decided = list(Item.objects.filter(project=project, status=Item.Status.AUTO).order_by("pk"))
    every = refit_runs.read_unlabelled(project, learner, 10_000)
    assert every.shape == (len(decided), learner.n_features)
    first = decided[0]
    idx, vals = decode_row(first.vector, learner.n_features)
    assert np.array_equal(every[0].indices, idx) and np.allclose(every[0].data, vals)
    pages: list[int] = []
    some = refit_runs.read_unlabelled(project, learner, 30, page_read=pages.append)
    assert some.shape[0] == 30 and pages == [1]
    assert (some != refit_runs.read_unlabelled(project, learner, 30)).nnz == 0  # the project's seed
    rows = {every[i].toarray().tobytes() for i in range(every.shape[0])}
    assert all(some[i].toarray().tobytes() in rows for i in range(30))
    # the per-label bound and the setting's cap
    settings.REFIT_MAX_UNLABELLED = 25
    assert refit_runs.unlabelled_limit(2) == 20 and refit_runs.unlabelled_limit(100) == 25
    settings.REFIT_MAX_UNLABELLED = 0
    job = refit_runs.run(refit_runs.start(project, member(project, "boss", Membership.Role.ADMIN))[0].pk)
    assert job.status == "done" and job.figures["unlabelled"] == 0 and "self_training" not in job.figures
    assert job.total == -(-job.labels // refit_runs.PAGE) + steps(False)


@pytest.mark.django_db
def test_the_panel_writes_the_request_cap_as_the_card_does(client, settings):
    settings.REFIT_REQUEST_MAX_LABELS = 12345
    project, admin = labelled_project(30)
    client.force_login(admin)
    panel = client.get(f"/projects/{project.pk}/console/refit").content.decode()
    assert "newest 12,345 labels" in panel
    assert "newest 12,345 labels" in _card(client, project)["refit"]["why"]


@pytest.mark.django_db
def test_a_changed_configuration_makes_the_stored_refit_stale(settings):
    """A new algorithm rebuilds the learner without moving the model version: the fingerprint
    tells the stored refit (checked against the former learner) is not current."""
    project, admin = labelled_project(90)
    job = refit_runs.run(refit_runs.start(project, admin)[0].pk)
    state = LearnerState.objects.get(project=project)
    assert refit_runs.current_run(project, state) == job
    change_settings(project, admin, algorithm="mpaa", params={"delta": 1.0, "query": "random", "p": 0.5})
    update_project(project.pk)
    state.refresh_from_db()
    assert state.version == job.model_version and refit_runs.current_run(project, state) is None


@pytest.mark.django_db
def test_the_sweep_restarts_a_run_whose_worker_died(settings):
    """A RUNNING run without a beat for JOB_STALE_SECONDS goes back to WAITING and is sent again;
    its next delivery fits it; a repeat of a finished run changes nothing."""
    project, admin = labelled_project(60)
    job, _ = refit_runs.start(project, admin)
    assert jobs.claim(RefitRun, job.pk).attempt == 1  # a worker took it, then died
    RefitRun.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(
        seconds=settings.JOB_STALE_SECONDS + 1))
    assert RefitRun.objects.get(pk=job.pk).shown_status == "stalled"
    tasks.sweep()
    assert RefitRun.objects.get(pk=job.pk).status == "waiting"
    done = refit_runs.run(job.pk)
    assert done.status == "done" and done.attempt == 2 and done.labels == refit_runs.count_labels(
        project, LearnerState.objects.get(project=project).version)
    assert refit_runs.run(job.pk) is None and RefitRun.objects.get(pk=job.pk).finished == done.finished


@pytest.mark.slow
def test_a_real_heavy_worker_fits_more_than_5000_labels(transactional_db, client, tmp_path, settings):
    """The job in a real Celery worker of the heavy queue, on more labels than the in-request cap
    (the default 5,000): it fits them all and the export holds that fit."""
    assert settings.REFIT_REQUEST_MAX_LABELS == 5000
    project, admin = labelled_project(10_600)
    labels = refit_runs.count_labels(project, LearnerState.objects.get(project=project).version)
    assert labels > 5000
    client.force_login(admin)
    heavy = Worker(tmp_path / "heavy.log", "-Q", settings.CELERY_HEAVY_QUEUE)
    try:
        started = time.monotonic()
        assert client.post(f"/projects/{project.pk}/console", {"action": "refit"}).status_code == 302
        job = RefitRun.objects.get(project=project)
        heavy.wait_for(lambda: RefitRun.objects.get(pk=job.pk).status in ("done", "failed"), 300, "the refit")
        seconds = time.monotonic() - started
    finally:
        heavy.stop()
    job.refresh_from_db()
    assert job.status == "done" and job.labels == labels, job.error
    card = _card(client, project)
    assert card["refit"]["source"] == "refit job" and card["refit"]["labels"] == labels
    assert card["model"]["check"]["labels"] == labels
    print(f"{labels} labels fitted by the worker in {seconds:.1f} s ({connection.vendor})")
