"""What the importance-weighted estimates cover (docs/estimates.md, "What the estimates cover"):
one definition for every reader of them (the metrics API, the dashboard and its fragments, the
exported model card, the stop rule).

An estimate weighted by ``1/q`` speaks for the items that had a positive chance ``q`` of being
asked: an item logged with ``q = 0`` (held by the label budget's hard cap, decided while the stop
rule held, labelled before it was decided, :func:`.decision_log.unasked_cause`) is outside the
estimator's stream, since no label could stand for it. The **covered** items are the decided items
in the estimator's stream that the running totals have reached (``StreamStats.iw_seen``: the
frontier's prefix less its queried items without a drawn label and its ``q = 0`` items). The
decided items split exactly into

* ``covered_items``;
* ``unasked_items``: logged with ``q = 0``, per cause (``unasked_by_cause``; ``held_by_cap`` is
  the cap's share), which no estimate can ever cover;
* ``not_reached_items``: the rest, per cause (``not_reached_by_cause``): queried items the
  running totals' walk passed and left out for want of a label drawn by the query rule
  (``relabelled``: an admin or Label Studio gave its label, never covered; ``disputed``: its
  opinions are in without a settled consensus, covered once a reviewer decides; ``skipped``:
  left by an earlier version of the queue; :attr:`.decision_log.Decision.left_out`), and the items
  after the frontier (``waiting``: from the first queried item still waiting for its label on,
  covered once it has one).

When items nobody could be asked about exist and the covered share of the decided items is
under :data:`COVERED_SHARE_WARNING`, every place that shows the estimates shows a warning: they
describe the covered items only, and the rest may differ (the audit's example: a 300-item MNIST
upload at a 10% budget, the cap holding 131 items, estimated 31.7% [24.5-38.8] against 55.5%
exact).
"""

from __future__ import annotations

from typing import Any, Final

from annotator.labelling.engine.decision_log import LEFT_OUT_CAUSES, UNASKED_CAUSES
from annotator.labelling.models import StreamStats

#: under this share of the decided items covered (with items nobody could be asked about), the
#: estimates carry a warning
COVERED_SHARE_WARNING: Final = 0.9

#: how each cause of ``q = 0`` is told (the count first)
CAUSE_TEXT: Final = {
    "cap": "held by the label budget's cap",
    "stopped": "decided while the stop rule held (nobody was asked)",
    "labelled": "labelled before they were decided (imported with labels)",
    "rule": "given probability 0 by the learner's own rule",
    "unrecorded": "logged with probability 0 before their cause was counted",
}

#: why items the estimates could cover are not covered, in the order they are told
NOT_REACHED_CAUSES: Final = (*(c for c in LEFT_OUT_CAUSES if c != "unasked"), "waiting")

#: how each cause of ``not_reached_by_cause`` is told (the count first; ``{frontier}``: the item
#: the frontier stops at)
NOT_REACHED_TEXT: Final = {
    "relabelled": "relabelled by an admin or in Label Studio (not a draw of the query rule)",
    "disputed": "in dispute, without a settled consensus (covered once a reviewer decides)",
    "skipped": "skipped",
    "waiting": "at or after item {frontier}, the first queried item still waiting for its label "
               "(covered once it has one)",
}

#: where the covered items lie, per cause, for the warning
WHERE: Final = {
    "cap": "the cap holds nearly every item once the budget's early advance is spent, so the covered "
           "items are mostly the first of the stream, decided while the model knew least",
    "stopped": "the items decided while the stop rule held come after the covered ones",
}


def _items(n: int) -> str:
    return f"{n:,} item{'' if n == 1 else 's'}"


def estimate_coverage(stats: StreamStats, decided: int) -> dict[str, Any]:
    """The coverage of the project's importance-weighted estimates (module docstring), JSON-able:
    ``decided_items``, ``covered_items``, ``covered_share`` (None before any decision),
    ``held_by_cap``, ``unasked_items``, ``unasked_by_cause`` ({cause: count}, causes in
    :data:`UNASKED_CAUSES` order, none with 0), ``not_reached_items``, ``warning`` (bool),
    ``warning_below`` (:data:`COVERED_SHARE_WARNING`), ``summary`` (one sentence with these
    numbers, None before any decision) and ``warning_text`` (None without the warning).
    ``decided``: the decided items (``LearnerState.n_decided``). ``not_reached_by_cause``:
    {cause: count}, causes in :data:`NOT_REACHED_CAUSES` order, none with 0, summing to
    ``not_reached_items``."""
    counts = stats.unasked or {}
    by_cause = {c: int(counts[c]) for c in UNASKED_CAUSES if counts.get(c)}
    covered = int(stats.iw_seen)
    unasked = sum(by_cause.values())
    not_reached = max(0, decided - covered - unasked)
    left = stats.left_out or {}
    # after the frontier: the decided items past it less those of them logged with q = 0
    waiting = decided - int(stats.frontier) - (unasked - int(left.get("unasked", 0)))
    reasons = {**{c: int(left.get(c, 0)) for c in NOT_REACHED_CAUSES if c != "waiting"}, "waiting": waiting}
    not_reached_by = {c: n for c, n in reasons.items() if n > 0}
    share = covered / decided if decided else None
    warning = share is not None and unasked > 0 and share < COVERED_SHARE_WARNING
    summary = None
    if decided:
        summary = (f"Estimated on {covered:,} of the {decided:,} decided item{'' if decided == 1 else 's'} "
                   f"({share:.1%}), those that could have been asked")
        if unasked:
            told = "; ".join(f"{_items(n)} {CAUSE_TEXT[c]}" for c, n in by_cause.items())
            summary += f"; not covered: {told}"
        if not_reached:
            told = ", ".join(f"{_items(n)} {NOT_REACHED_TEXT[c].format(frontier=stats.frontier)}"
                             for c, n in not_reached_by.items())
            summary += f"; not reached: {told}"
        summary += "."
    warning_text = None
    if warning:
        where = "; ".join(WHERE[c] for c in by_cause if c in WHERE)
        warning_text = (f"The estimates describe the {covered:,} covered items only, {share:.1%} of the "
                        f"{decided:,} decided (under {COVERED_SHARE_WARNING:.0%}): no estimate can speak for "
                        f"the {_items(unasked)} nobody could be asked about"
                        + (f" ({where})" if where else "")
                        + ". The rest of the stream may differ: read them as figures of the covered items; "
                          "the exact figures on items with a gold class and the audit of the model's "
                          "labels speak for the rest.")
    return {"decided_items": decided, "covered_items": covered, "covered_share": share,
            "held_by_cap": by_cause.get("cap", 0), "unasked_items": unasked, "unasked_by_cause": by_cause,
            "not_reached_items": not_reached, "not_reached_by_cause": not_reached_by,
            "warning": warning, "warning_below": COVERED_SHARE_WARNING,
            "summary": summary, "warning_text": warning_text}
