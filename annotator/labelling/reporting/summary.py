"""The console's one-screen summary of a project (docs/architecture.md, "The instant queue" is
the annotators' side; this is the admin's): items, waiting, items labelled, labels given and their
cost, the label budget's target and what was achieved, the delta in use and the model version."""

from __future__ import annotations

import math
from typing import Any

from annotator.labelling.engine.label_budget import target_ratio
from annotator.labelling.engine.queue_counts import waiting_count
from annotator.labelling.models import Item, LearnerState, Project

from .metrics import model_metrics


def budget_summary(project: Project, state: LearnerState | None = None) -> dict[str, Any]:
    """The label budget and delta as :func:`console_summary` states them: ``target``, ``achieved``,
    ``delta``, ``budget_steers`` (``state``: the project's learner state, read when None)."""
    if state is None:
        state = LearnerState.objects.filter(project=project).only(
            "version", "n_decided", "n_queried", "budget_state").first()
    decided = state.n_decided if state else 0
    queried = state.n_queried if state else 0
    delta = project.learner_params().get("delta")
    budget = state.budget_state if state else None
    steers = bool(budget and budget.get("knob") == "delta" and budget.get("log_value") is not None)
    if steers and budget is not None:  # as learners.budget.BudgetController.value clips it
        delta = min(max(math.exp(float(budget["log_value"])), float(budget.get("low", 0.0))),
                    float(budget.get("high", math.inf)))
    return {"target": target_ratio(project), "achieved": queried / decided if decided else None,
            "delta": delta, "budget_steers": steers}


def console_summary(project: Project) -> dict[str, Any]:
    """``items`` (uploaded), ``decided``, ``queried`` (asked of a person), ``waiting`` (for a
    label), ``items_labelled``, ``labels_given`` and ``label_cost`` (the metrics' figures, one
    definition each: :func:`.metrics.model_metrics`, docs/cost.md), ``target`` (the budget's
    target query ratio, None when off),
    ``achieved`` (queried / decided, None before any decision), ``delta`` (the value the learner
    uses now: the budget controller's when it steers delta, else the project's parameter; None
    for a learner without one), ``budget_steers`` (whether the controller sets it) and
    ``version`` (labels applied)."""
    state = LearnerState.objects.filter(project=project).only(
        "version", "n_decided", "n_queried", "budget_state").first()
    figures = model_metrics(project)
    return {
        "items": Item.objects.filter(project=project).count(), "decided": state.n_decided if state else 0,
        "queried": state.n_queried if state else 0,
        "waiting": waiting_count(project),
        **{k: figures[k] for k in ("items_labelled", "labels_given", "label_cost")},
        **budget_summary(project, state), "version": state.version if state else 0,
    }
