"""The app's label budget: the same controller as the replay (:mod:`learners.budget`).

A project sets either ``budget_ratio`` (a target query ratio) or ``budget_per_day`` (labels per
day). Labels per day become a ratio through the arrival rate: items that arrived in the last 24
hours (at least one), capped at 1; so the ratio follows the stream's pace. The controller adapts
the learner's knob and query probabilities (budget mode, ``docs/budget.md``) on every decision;
its state is kept on the learner state row and restarts when the knob changes.

The controller's plan fits the stream's expected length (:func:`expected_length`: the items the
project holds, those its running imports still bring, and a day of API arrivals at the last
24 hours' pace), so that an upload of a few hundred items ends at its budget too
(``docs/budget.md``, "A known length").
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import F, Sum
from django.utils import timezone

from annotator.labelling.models import ImportJob, Item, LearnerState, Project
from learners import Learner
from learners.budget import ADVANCE_HORIZON, REPAY_SPAN, BudgetController

#: a stream this long or longer gets the default plan whatever its length (docs/budget.md)
LONG_STREAM = int(ADVANCE_HORIZON * (1 + REPAY_SPAN))


def has_budget(project: Project) -> bool:
    """Whether the project has a label budget (a target ratio or labels per day): while it has
    one, the budget controller sets the learner's knob (delta) before every decision."""
    return project.budget_ratio is not None or bool(project.budget_per_day)


def target_ratio(project: Project) -> float | None:
    """The project's target query ratio, or None when no budget is set."""
    if not has_budget(project):
        return None
    if project.budget_ratio is not None:
        return float(project.budget_ratio)
    if project.budget_per_day:
        since = timezone.now() - timedelta(days=1)
        arrived = Item.objects.filter(project=project, created__gte=since).count()
        return min(1.0, project.budget_per_day / max(1, arrived))
    return None


def expected_length(project: Project) -> int:
    """Items the project's stream is expected to hold (>= 1): those stored (the last ``seq`` + 1),
    those its waiting or running imports will still store (their counted ``total`` less ``done``)
    and, when that is still short of :data:`LONG_STREAM` (past it the length changes nothing) and
    the stream is older than a day, one more day of API arrivals: the items of the last 24 hours
    that no import brought. A stream younger than a day has no pace yet (its first items may be one
    burst): its length is the items known, and the plan grows with it (``fit_length``)."""
    last = Item.objects.filter(project=project).order_by("-seq").values_list("seq", flat=True).first()
    stored = 0 if last is None else int(last) + 1
    running = ImportJob.objects.filter(project=project, status__in=(ImportJob.Status.WAITING,
                                                                    ImportJob.Status.RUNNING))
    coming = int(running.aggregate(n=Sum(F("total") - F("done")))["n"] or 0)
    known = stored + max(0, coming)
    if known >= LONG_STREAM:
        return known
    since = timezone.now() - timedelta(days=1)
    first = Item.objects.filter(project=project, seq=0).values_list("created", flat=True).first()
    if first is None or first >= since:
        return max(1, known)
    arrived = Item.objects.filter(project=project, created__gte=since).count()
    imported = ImportJob.objects.filter(project=project, created__gte=since).aggregate(n=Sum("done"))["n"]
    return max(1, known + max(0, arrived - int(imported or 0)))


def controller(project: Project, state: LearnerState, learner: Learner) -> BudgetController | None:
    """The running controller for the project's budget (None without one), its plan fitted to
    :func:`expected_length`."""
    target = target_ratio(project)
    if target is None:
        return None
    saved = state.budget_state
    if saved and saved.get("knob") == learner.budget_knob():
        ctl = BudgetController.from_state(saved)
        ctl.retarget(target)  # a per-day budget's ratio follows the arrival rate
    else:
        ctl = BudgetController.for_learner(target, learner)
    ctl.fit_length(expected_length(project))  # only grows: a new upload lengthens the plan
    return ctl


def rate(project: Project, target: float) -> str:
    """The budget's rate in words, ``target`` being its :func:`target_ratio`: "30.0% of the items",
    or for a per-day budget the labels a day and the ratio they make at the last 24 hours' pace."""
    if project.budget_ratio is not None:
        return f"{target:.1%} of the items"
    return f"{project.budget_per_day:,} labels a day, {target:.1%} of the items at the last 24 hours' pace"


def promise(project: Project) -> str | None:
    """The budget's promise in the project's own numbers, for the console (None without a budget):
    the target, the expected length (:func:`expected_length`), the labels the plan allows by its
    end and the advance (docs/budget.md)."""
    target = target_ratio(project)
    if target is None:
        return None
    n = expected_length(project)
    ctl = BudgetController(target, length=n)
    horizon = ctl.fitted_horizon
    repaid = min(n, round(horizon * (1 + REPAY_SPAN)))
    return (f"Label budget: {rate(project, target)}, counted from the first item. On the {n:,} items "
            f"this stream is expected to hold, about {target * n:,.0f} labels in all (at most "
            f"{ctl.plan(n) + ctl.fitted_burst:,.0f}); up to {target * horizon:,.0f} of them may be spent "
            f"early, within the first {horizon:,.0f} items, and are paid back by item {repaid:,}.")
