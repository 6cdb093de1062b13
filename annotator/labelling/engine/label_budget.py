"""The app's label budget: the same controller as the replay (:mod:`learners.budget`).

A project sets either ``budget_ratio`` (a target query ratio) or ``budget_per_day`` (labels per
day). Labels per day become a ratio through the arrival rate: items that arrived in the last 24
hours (at least one), capped at 1; so the ratio follows the stream's pace. The controller adapts
the learner's knob and query probabilities (budget mode, ``docs/budget.md``) on every decision;
its state is kept on the learner state row and restarts when the knob changes.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotator.labelling.models import Item, LearnerState, Project
from learners import Learner
from learners.budget import BudgetController


def target_ratio(project: Project) -> float | None:
    """The project's target query ratio, or None when no budget is set."""
    if project.budget_ratio is not None:
        return float(project.budget_ratio)
    if project.budget_per_day:
        since = timezone.now() - timedelta(days=1)
        arrived = Item.objects.filter(project=project, created__gte=since).count()
        return min(1.0, project.budget_per_day / max(1, arrived))
    return None


def controller(project: Project, state: LearnerState, learner: Learner) -> BudgetController | None:
    """The running controller for the project's budget (None without one)."""
    target = target_ratio(project)
    if target is None:
        return None
    saved = state.budget_state
    if saved and saved.get("knob") == learner.budget_knob():
        ctl = BudgetController.from_state(saved)
        ctl.retarget(target)  # a per-day budget's ratio follows the arrival rate
        return ctl
    return BudgetController.for_learner(target, learner)
