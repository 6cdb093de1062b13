"""The delta planner: replay candidate settings on what a project already knows, before spending
human labels.

Data: the latest items with a gold label (at most :func:`window`), in arrival order; with fewer than
``MIN_ITEMS`` of those, the items labelled so far (their latest primary labels). Each candidate
(algorithm, delta; the algorithm's other parameters at their registry defaults, or at the project's
values when it is the project's algorithm) is replayed by
:func:`learners.evaluation.engine.run_once` on ``runs`` random permutations (the papers' protocol: a
prediction on every round, mistakes counted on every round, learning from queried labels only),
giving online accuracy and query ratio (and F1 for binary tasks), macro-F1, balanced accuracy and
the majority-class baseline (:func:`learners.evaluation.per_class.stream_figures`).

Each candidate is replayed without a label budget, at its own query ratio. While the project has a
budget, the budget sets delta before every decision (docs/budget.md), so no candidate is what runs
(:func:`is_current`), and none can be used until the budget is off (:func:`budget_refusal`).

A run's results are ranked by the metric the admin picks (:data:`RANK_METRICS`; by default
macro-F1 when the classes are imbalanced, accuracy otherwise: :func:`default_metric`), and a
setting whose figure does not beat the majority-class baseline's is marked (:func:`ranked`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from django.conf import settings as django_settings

import learners
from annotator.labelling.engine import jobs
from annotator.labelling.engine.label_budget import has_budget, rate, target_ratio
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import Item, Label, PlannerRun, Project
from learners.evaluation.engine import Setting, Task, run_once, summarise
from learners.evaluation.per_class import beats_baseline

MAX_CANDIDATES = 4
MIN_ITEMS = 10


def window() -> int:
    """Most items a replay reads: the latest ones, as many as one candidate replayed once may
    cost (``settings.PLANNER_MAX_COST``), so that neither the replay nor its count grows with
    the stream."""
    return int(django_settings.PLANNER_MAX_COST)


def _source(project: Project) -> tuple[Any, str]:
    """The replay's rows ``(vector, class)`` in arrival order and their source: the latest
    :func:`window` items with a gold label, or, with fewer than ``MIN_ITEMS`` of those, the
    latest primary labels. A list (at most :func:`window` rows)."""
    # items whose content the retention sweep dropped have no vector left
    gold = Item.objects.filter(project=project, gold__isnull=False, vector__isnull=False)
    if gold.order_by()[:MIN_ITEMS].count() >= MIN_ITEMS:
        rows = gold.order_by("-seq").values_list("vector", "gold")[:window()]
        return list(rows)[::-1], "gold"
    labels = (Label.objects.filter(project=project, primary=True).order_by("-item__seq")
              .values_list("item__vector", "value")[:window()])
    return list(labels)[::-1], "labels"


def _count(project: Project) -> int:
    """How many rows :func:`_source` gives, at most :func:`window` (counted, not loaded)."""
    gold = Item.objects.filter(project=project, gold__isnull=False, vector__isnull=False).order_by()
    if gold[:MIN_ITEMS].count() >= MIN_ITEMS:
        return gold[:window()].count()
    return Label.objects.filter(project=project, primary=True).order_by()[:window()].count()


def planner_data(project: Project) -> tuple[sp.csr_matrix, Task, str]:
    """``(X (n, d), task, source)`` from gold labels, else from collected labels.

    ValueError when fewer than ``MIN_ITEMS`` items have either.
    """
    n_features = project.featurizer().n_features
    rows, source = _source(project)
    _check_enough(len(rows))
    index = {str(c): k for k, c in enumerate(project.classes)}
    X = sp.vstack([sp.csr_matrix(decode(v, n_features)) for v, _ in rows], format="csr")
    codes = np.array([index[str(y)] for _, y in rows], dtype=np.int64)
    binary = project.task != Project.Task.MULTICLASS
    return X, Task(tuple(project.classes), codes, binary, project.classes[1] if binary else None), source


def cost(project: Project, n_candidates: int, runs: int) -> tuple[int, int]:
    """``(items, cost)``: the rows a run would replay and its cost, items x candidates x runs
    (the item steps it replays; the time and memory grow with it)."""
    items = _count(project)
    return items, items * n_candidates * runs


def _check_enough(items: int) -> None:
    """ValueError saying why when ``items`` labelled (or gold) items are too few to plan on."""
    if items < MIN_ITEMS:
        raise ValueError(f"the planner needs at least {MIN_ITEMS} items with a gold label or a label; "
                         f"this project has {items}")


def check_cost(project: Project, n_candidates: int, runs: int) -> int:
    """The run's cost; ValueError saying why when it is above ``settings.PLANNER_MAX_COST`` or
    the project has too few labelled items (:data:`MIN_ITEMS`: the run would fail afterwards)."""
    items, total = cost(project, n_candidates, runs)
    _check_enough(items)
    bound = django_settings.PLANNER_MAX_COST
    if total > bound:
        raise ValueError(f"this run would replay {items} items x {n_candidates} candidate(s) x {runs} "
                         f"permutation(s) = {total:,} item steps, above the bound of {bound:,} "
                         f"(PLANNER_MAX_COST); use fewer permutations or candidates")
    return total


def candidate_params(project: Project, algorithm: str, delta: float | str) -> dict[str, Any]:
    """Validated parameters of one candidate (ValueError naming a bad one); ``delta`` may be the
    posted text. The learner is built once on the project's features, so a candidate that
    cannot be (e.g. an OASIS filter above its memory limit) is refused with the form."""
    if algorithm not in learners.names_for_task(project.task):
        raise ValueError(f"algorithm {algorithm!r} does not support the project's task {project.task!r}")
    base = {k: v for k, v in project.params.items()} if algorithm == project.algorithm else {}
    params = learners.validate_params(algorithm, {**base, "delta": delta})
    learners.make(algorithm, n_features=project.featurizer().n_features, classes=project.classes, **params)
    return params


def run(run_id: int) -> PlannerRun | None:
    """Replay every candidate of a :class:`PlannerRun` (the Celery task's body); None when the
    run is not waiting (a second delivery, or cancelled before it started).

    Progress (and each candidate's result as soon as it is known) is saved after every
    permutation; the run stops there when it was cancelled. A run whose worker died is restarted
    by the sweep (:mod:`.jobs`); only the attempt that still holds it writes the outcome.
    """
    job = jobs.claim(PlannerRun, run_id)
    if job is None:
        return None
    project = job.project
    try:
        check_cost(project, len(job.candidates), job.runs)
        X, task, source = planner_data(project)
        settings = [Setting(c["algorithm"], candidate_params(project, c["algorithm"], c["delta"]))
                    for c in job.candidates]
    except ValueError as exc:
        with jobs.finishing(job) as held:
            if held:
                PlannerRun.objects.filter(pk=job.pk).update(status=PlannerRun.Status.FAILED, error=str(exc))
        job.refresh_from_db()
        return job
    jobs.beat(job, source=source, total=len(settings) * job.runs, done=0, results=None)
    results = []
    done = 0
    for cand, setting in zip(job.candidates, settings, strict=True):
        per_run = []
        for r in range(job.runs):
            per_run.append(run_once(setting, X, task, seed=0, run=r))
            done += 1
            finished = r == job.runs - 1
            if finished:
                mean, std = summarise(per_run)
                results.append({**cand, "items": X.shape[0], "mean": mean, "std": std})
            if not jobs.beat(job, done=done, **({"results": results} if finished else {})):
                job.refresh_from_db()  # cancelled, or restarted elsewhere: stop here
                return job
    with jobs.finishing(job) as held:
        if held:
            PlannerRun.objects.filter(pk=job.pk).update(status=PlannerRun.Status.DONE, results=results)
    job.refresh_from_db()
    return job


def is_current(project: Project, algorithm: str, delta: float) -> bool:
    """Whether ``(algorithm, delta)`` is the setting the project runs now: never while the project
    has a label budget (the budget sets delta before every decision, and the candidates were
    replayed without it)."""
    return (not has_budget(project) and algorithm == project.algorithm
            and float(delta) == float(project.learner_params()["delta"]))


def budget_refusal(project: Project) -> str | None:
    """Why no planner setting can be used now (None when one can): the project's label budget
    sets delta while it is on, and the planner's figures were replayed without it."""
    target = target_ratio(project)
    if target is None:
        return None
    return (f"The label budget is on ({rate(project, target)}): while it is on, it sets delta before "
            f"every decision, whatever delta a setting names, and the planner replayed each setting "
            f"without it, at its own query ratio. A setting can be used once the budget is off "
            f"(the console's stream settings); the figures show what it would do then.")


#: earlier runs listed in the planner's "settings tried" table
TRIED_RUNS = 20


def tried_settings(project: Project) -> list[dict[str, Any]]:
    """Every candidate of the project's last :data:`TRIED_RUNS` runs, newest first: the run, the
    candidate's index in it, its setting, its result (mean and std over the permutations, None
    until replayed), whether it is the project's current setting and ``below_baseline``: its
    macro-F1 does not beat the majority-class baseline's (False when unknown)."""
    rows = []
    for job in project.planner_runs.all()[:TRIED_RUNS]:
        results = {(r["algorithm"], float(r["delta"])): r for r in job.results or []}
        for index, cand in enumerate(job.candidates or []):
            result = results.get((cand["algorithm"], float(cand["delta"])))
            below = result is not None and "baseline_macro_f1" in result["mean"] \
                and not beats_baseline(result["mean"], "macro_f1")
            rows.append({"job": job, "index": index, "algorithm": cand["algorithm"], "delta": cand["delta"],
                         "result": result, "current": is_current(project, cand["algorithm"], cand["delta"]),
                         "below_baseline": below})
    return rows


#: the metrics a run's results may be ranked by, with their labels
RANK_METRICS = {"macro_f1": "macro-F1", "accuracy": "accuracy", "balanced_accuracy": "balanced accuracy"}
#: the classes are imbalanced when the majority class holds more than this multiple of 1/k of the items
IMBALANCE = 1.5


def imbalanced(results: list[dict[str, Any]], n_classes: int) -> bool:
    """Whether the replayed items' majority class (``baseline_accuracy``: its share) holds more than
    :data:`IMBALANCE` / k of them; False for results without the baseline (runs from before it)."""
    shares = [r["mean"]["baseline_accuracy"] for r in results if "baseline_accuracy" in r["mean"]]
    return bool(shares) and shares[0] > IMBALANCE / max(1, n_classes)


def default_metric(project: Project, results: list[dict[str, Any]]) -> str:
    """macro-F1 when the classes of ``results``' items are imbalanced (:func:`imbalanced`), else accuracy."""
    return "macro_f1" if imbalanced(results, len(project.classes)) else "accuracy"


def ranked(results: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """The results, best ``metric`` first (results without it last, in run order), each with
    ``index`` (its place in the run, what "use this setting" posts), ``rank`` (from 1),
    ``value`` / ``std`` of the metric, ``baseline`` (the majority-class baseline's figure, None
    when unknown), ``beats`` (False: does not beat the baseline; None: unknown) and
    ``recommended``: True for at most one row, the best-ranked one that beats the baseline on
    ``metric`` and on online accuracy; never a setting that does not."""
    if metric not in RANK_METRICS:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(RANK_METRICS)}")
    rows = []
    for index, r in enumerate(results):
        value = r["mean"].get(metric)
        base = r["mean"].get(f"baseline_{metric}")
        rows.append({**r, "index": index, "value": value, "std_value": r["std"].get(metric), "baseline": base,
                     "beats": None if value is None or base is None else beats_baseline(r["mean"], metric)})
    rows.sort(key=lambda row: (row["value"] is None, -(row["value"] or 0.0), row["index"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    # the recommendation: the best-ranked setting that beats the majority-class baseline on the
    # rank metric and on online accuracy (a constant answer must not be the better choice by
    # either); none when no setting does
    pick = next((row for row in rows if row["beats"] and beats_baseline(row["mean"], "accuracy")), None)
    for row in rows:
        row["recommended"] = row is pick
    return rows
