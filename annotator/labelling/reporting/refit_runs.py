"""The export's batch refit (docs/algorithms/refit.md) fitted on every label by a heavy-queue
worker, and the stored outcome the exports use while it is current.

* :func:`read_labels` reads the applied primary labels of queried items with their vectors and
  logged query probabilities, newest first in pages of :data:`PAGE` rows (keyset on
  ``applied_version``), and returns them in applied order: every label (the job) or the newest
  ``settings.REFIT_REQUEST_MAX_LABELS`` (an export without a current stored refit fits in its
  request, :func:`.export.project_refit`).
* :func:`read_unlabelled` reads a seeded sample of the items the model decided alone (at most
  :data:`learners.refit.UNLABELLED_PER_LABEL` per label and ``settings.REFIT_MAX_UNLABELLED``):
  the job's refit self-trains on them when its check finds that better. An export fitting in
  its request does not (it fits labels only: a self-trained check costs several times as much).
* :func:`start` creates a :class:`..models.RefitRun` unless one of the project waits or runs (a
  double click starts one job); the caller sends it (``send.run_refit``).
* :func:`run` is the worker's side: claim the run (:mod:`..engine.jobs`), read every label and
  the sample of unlabelled items, run
  :func:`learners.refit.refit` (its progress is the run's beat; a cancelled run stops at its next
  step), store the outcome: the chosen model as the model file stores it
  (:func:`learners.model_file.refit_bytes`), the check's figures, the model version and the
  configuration fingerprint the labels were read at.
* :func:`current_run`: what "current" means. A stored refit is current while the learner
  state's ``version`` is the one it was read at (every label applied, undone, changed or
  overturned moves it on) and the project's learner configuration is the same
  (:func:`config_fingerprint`: algorithm, parameters, classes, class descriptions, featurizer,
  seed; a configuration change rebuilds the learner without moving the version).

Memory of a run, for n labels with z non-zeros in all and k classes: the rows as one CSR matrix
(12 z + 4 n bytes), briefly twice while the pages are joined, plus one page of stored vectors;
then the fit's working copies (a fold's training rows restricted to their columns, about 2x the
matrix) and a few n x k float arrays. 40,000 labels of a hashed-n-gram text project (~60
non-zeros each) hold about 30 MB; of a 384-d embedding, about 185 MB. The unlabelled sample
adds its own rows (at most ``REFIT_MAX_UNLABELLED``, 20,000 by default: about 15 MB of hashed
n-grams, 95 MB of 384-d embeddings) and a self-trained fit's working copies of labels and sample
together; its neighbourhood (``learners.refit.Neighbourhood``) copies the columns most rows use
as float32 (a 384-d embedding of 60,000 rows: 92 MB) and computes similarities in 32 MB blocks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from django.conf import settings
from django.db import transaction
from django.utils import timezone

import learners
from annotator.labelling.engine import jobs
from annotator.labelling.engine.learner_state import stored_learner
from annotator.labelling.engine.stored_vectors import decode_row
from annotator.labelling.models import Item, Label, LearnerState, Project, RefitRun
from learners.model_file import refit_bytes, refit_from_bytes
from learners.refit import UNLABELLED_PER_LABEL, RefitResult, refit, steps

#: labels read per query (one page of stored vectors in memory at a time)
PAGE = 2000
#: a run in these states blocks a new one
LIVE = (RefitRun.Status.WAITING, RefitRun.Status.RUNNING)


@dataclass
class Labelled:
    """Labels read by :func:`read_labels`, in applied order: ``X`` CSR (n, n_features), ``codes``
    int64 (n,) the learner's class codes, ``query_probs`` float (n,) in (0, 1]."""

    X: sp.csr_matrix
    codes: np.ndarray
    query_probs: np.ndarray


def _usable(project: Project, version: int) -> Any:
    """The labels a refit uses: applied primary labels (up to model ``version``) of items the
    learner queried, with a query probability and a vector (audits and honeypots have no q to
    weight them by; the retention sweep may have dropped a vector)."""
    return Label.objects.filter(project=project, primary=True, applied_version__isnull=False,
                                applied_version__lte=version, item__queried=True, item__query_prob__gt=0,
                                item__vector__isnull=False)


def count_labels(project: Project, version: int) -> int:
    """How many labels :func:`read_labels` reads at most at model ``version``."""
    return _usable(project, version).count()


def read_labels(project: Project, learner: learners.Learner, version: int, newest: int | None = None,
                page_read: Callable[[int], None] | None = None) -> Labelled:
    """The usable labels (:func:`_usable`) at model ``version``, the newest ``newest`` of them
    (None: all), in applied order; read :data:`PAGE` at a time, newest first. ``page_read``
    (optional) is called after each page (a job's beat; an exception it raises stops the read).
    ValueError for a stored vector that cannot be read or a label that is not a class."""
    pages: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    below, left = version + 1, newest
    while left is None or left > 0:
        size = PAGE if left is None else min(PAGE, left)
        rows = list(_usable(project, version).filter(applied_version__lt=below)
                    .order_by("-applied_version")
                    .values_list("applied_version", "value", "item__vector", "item__query_prob")[:size])
        if not rows:
            break
        below = rows[-1][0]
        left = None if left is None else left - len(rows)
        rows.reverse()
        decoded = [decode_row(vector, learner.n_features) for _, _, vector, _ in rows]
        pages.append((np.concatenate([idx for idx, _ in decoded]),
                      np.concatenate([vals for _, vals in decoded]),
                      np.array([len(idx) for idx, _ in decoded], dtype=np.int64),
                      np.array([learner.class_code(project.parse_class(v)) for _, v, _, _ in rows],
                               dtype=np.int64),
                      np.array([q for *_, q in rows], dtype=float)))
        if page_read is not None:
            page_read(len(pages))
    pages.reverse()  # oldest page first: applied order
    empty = (np.zeros(0, np.int32), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    indices, values, lengths, codes, qs = (np.concatenate([p[i] for p in pages]) if pages else empty[i]
                                           for i in range(5))
    X = sp.csr_matrix((values, indices, np.concatenate([[0], np.cumsum(lengths)])),
                      shape=(len(lengths), learner.n_features))
    return Labelled(X, codes, qs)


def unlabelled_limit(labels: int) -> int:
    """How many unlabelled items :func:`run` reads for ``labels`` labels: refit's per-label bound,
    capped by ``settings.REFIT_MAX_UNLABELLED``."""
    return min(UNLABELLED_PER_LABEL * labels, settings.REFIT_MAX_UNLABELLED)


def read_unlabelled(project: Project, learner: learners.Learner, limit: int,
                    page_read: Callable[[int], None] | None = None) -> sp.csr_matrix:
    """CSR (u, n_features) of at most ``limit`` items the model decided alone (status ``auto``,
    with a stored vector), a sample drawn with the project's seed from all of them, in ``pk``
    order; read :data:`PAGE` vectors at a time (``page_read`` as in :func:`read_labels`).
    ValueError for a stored vector that cannot be read."""
    decided = Item.objects.filter(project=project, status=Item.Status.AUTO, vector__isnull=False)
    pks = np.fromiter(decided.values_list("pk", flat=True).iterator(chunk_size=PAGE), dtype=np.int64)
    if len(pks) > limit:
        pks = np.sort(np.random.default_rng([project.rng_seed, 2]).choice(pks, limit, replace=False))
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    for at in range(0, len(pks), PAGE):
        page = decided.filter(pk__in=pks[at:at + PAGE].tolist()).order_by("pk")
        rows += [decode_row(vector, learner.n_features) for vector in page.values_list("vector", flat=True)]
        if page_read is not None:
            page_read(at // PAGE + 1)
    lengths = np.array([len(idx) for idx, _ in rows], dtype=np.int64)
    return sp.csr_matrix((np.concatenate([vals for _, vals in rows]) if rows else np.zeros(0),
                          np.concatenate([idx for idx, _ in rows]) if rows else np.zeros(0, np.int32),
                          np.concatenate([[0], np.cumsum(lengths)])), shape=(len(rows), learner.n_features))


def fit(project: Project, learner: learners.Learner, labelled: Labelled,
        progress: Callable[[int], None] | None = None,
        unlabelled: sp.csr_matrix | None = None) -> RefitResult:
    """:func:`learners.refit.refit` of ``labelled`` (self-trained on ``unlabelled`` rows when
    given and the check finds that better); the online side of the check is a fresh learner of
    the project's configuration (:meth:`..models.Project.new_learner`, its cold start included),
    the folds seeded by the project's seed. ``progress``: as refit's."""
    n = learner.n_features
    return refit(lambda: project.new_learner(n), labelled.X, labelled.codes, labelled.query_probs,
                 seed=project.rng_seed, progress=progress, unlabelled=unlabelled)


def config_fingerprint(project: Project) -> str:
    """SHA-1 of what the check's online learner and the labels' rows are built from: algorithm,
    complete parameters, classes, class descriptions, featurizer config and seed."""
    config = json.dumps([project.algorithm, project.learner_params(), project.classes,
                         project.class_descriptions, project.featurizer_config, project.rng_seed],
                        sort_keys=True, default=str)
    return hashlib.sha1(config.encode()).hexdigest()


def start(project: Project, user: Any) -> tuple[RefitRun, bool]:
    """``(run, created)``: a new WAITING run of the project, or the one that waits or runs already
    (``created`` False: the caller sends nothing). Takes the project's row lock, so two requests
    at once start one run."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).values("pk").first()
        live = project.refit_runs.filter(status__in=LIVE).first()
        if live is not None:
            return live, False
        return RefitRun.objects.create(project=project, created_by=user), True


class _StopError(Exception):
    """The run was cancelled or taken over by another attempt: stop without writing."""


def run(run_id: int) -> RefitRun | None:
    """Fit the refit of a :class:`..models.RefitRun` on every usable label and store it (the
    Celery task's body; module docstring); None when the run is not waiting (a second delivery,
    or cancelled before it started). A run whose worker died is restarted by the sweep
    (:mod:`..engine.jobs`); only the attempt that still holds it writes the outcome."""
    job = jobs.claim(RefitRun, run_id)
    if job is None:
        return None
    project = job.project
    state = LearnerState.objects.get(project=project)
    version, fingerprint = state.version, config_fingerprint(project)
    learner = stored_learner(state)
    labels = count_labels(project, version)
    # the progress bar's steps: label pages, unlabelled pages (at most), the fit's steps
    pages = -(-labels // PAGE) + -(-unlabelled_limit(labels) // PAGE)
    total = pages + steps(unlabelled_limit(labels) > 0)

    def beat(done: int) -> None:
        if not jobs.beat(job, done=done, total=total):
            raise _StopError

    try:
        labelled = read_labels(project, learner, version, page_read=beat)
        label_pages = -(-labelled.X.shape[0] // PAGE)
        unlabelled = read_unlabelled(project, learner, unlabelled_limit(labelled.X.shape[0]),
                                     page_read=lambda page: beat(label_pages + page))
        # the bar's total, now that the pages read are known (the estimate counted the most)
        pages = label_pages + -(-unlabelled.shape[0] // PAGE)
        total = pages + steps(unlabelled.shape[0] > 0)
        result = fit(project, learner, labelled, progress=lambda step: beat(pages + step),
                     unlabelled=unlabelled)
    except _StopError:
        job.refresh_from_db()
        return job
    except ValueError as exc:  # a vector or class that cannot be read: say so on the page
        outcome: dict[str, Any] = {"status": RefitRun.Status.FAILED, "error": str(exc)}
    else:
        outcome = {"status": RefitRun.Status.DONE, "model_version": version, "fingerprint": fingerprint,
                   "labels": labelled.X.shape[0], "chosen": result.chosen, "figures": result.check,
                   "model": None if result.model is None else refit_bytes(result.model),
                   "done": total, "total": total}
    with jobs.finishing(job) as held:
        if held:
            RefitRun.objects.filter(pk=job.pk).update(finished=timezone.now(), **outcome)
            if outcome["status"] == RefitRun.Status.DONE:
                # a model version never comes back, so an earlier version's model can never be
                # current again: its bytes (up to tens of MB with neighbours) go, its figures stay
                project.refit_runs.filter(model_version__lt=version).exclude(model=None).update(model=None)
    job.refresh_from_db()
    return job


def current_run(project: Project, state: LearnerState) -> RefitRun | None:
    """The newest DONE run that is current (module docstring): fitted at ``state.version`` under
    the project's configuration now; None when there is none."""
    return (project.refit_runs.filter(status=RefitRun.Status.DONE, model_version=state.version,
                                      fingerprint=config_fingerprint(project))
            .order_by("-finished", "-id").first())


def stored_result(job: RefitRun) -> RefitResult:
    """A DONE run's outcome as :func:`learners.refit.refit` returned it (what the model file takes)."""
    figures = job.figures or {}
    model = None if job.model is None else refit_from_bytes(bytes(job.model))
    return RefitResult(model, job.chosen, figures.get("online_accuracy"), figures.get("refit_accuracy"),
                       figures)

