"""One decided item of a project's decision log and the rule of the prefix an estimate covers.

The importance-weighted (Horvitz-Thompson) accuracy needs the label of every queried item of the
stream it covers, so it covers the longest prefix of the log (in ``seq`` order) before the first
queried item still waiting for a label (:attr:`Decision.awaiting_label`); queried items that will
never have one (skipped: :attr:`Decision.label_missing`) are left out of that stream, and so are
queried items whose label an admin replaced (``Label.drawn`` False: docs/dataset.md) and the
items logged with query probability 0 (nobody could have been asked: held by the label
budget's hard cap, decided while the stop rule held, labelled before it was decided;
:func:`unasked_cause`, docs/estimates.md "What the estimates cover"). The running
totals (:mod:`.running_totals`) walk their frontier by this rule, so the metrics, the dashboard's
curves and the model card follow it without reading the log. See docs/architecture.md ("Metrics").
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from annotator.labelling.models import Item

#: why an item was logged with query probability 0, in the order :func:`unasked_cause` checks
#: them: ``labelled`` before it was decided (an import with labels), decided while the stop rule
#: held (``stopped``), held by the label budget's hard cap (``cap``, docs/budget.md), the learner's
#: own rule gave 0 (``rule``, e.g. OASIS's threshold rule), or counted from the log, which does not
#: keep the cause (``unrecorded``: decisions made before the cause was counted)
UNASKED_CAUSES: Final = ("labelled", "stopped", "cap", "rule", "unrecorded")


def unasked_cause(query_prob: float, *, labelled: bool, stopped: bool, capped: bool) -> str | None:
    """Why nobody could be asked about an item logged with ``query_prob`` (one of
    :data:`UNASKED_CAUSES`), or None when it could have been asked (``query_prob`` > 0).
    ``labelled``: it had a label before it was decided; ``stopped``: the stop rule held;
    ``capped``: the label budget's hard cap held it (``BudgetController.capped`` before the
    decision)."""
    if query_prob > 0:
        return None
    if labelled:
        return "labelled"
    if stopped:
        return "stopped"
    return "cap" if capped else "rule"


class Decision(NamedTuple):
    """One decided item: the learner's logged decision and what is known of its class."""

    seq: int
    #: the item's status now (:class:`.models.Item.Status` value)
    status: str
    #: the class predicted when the item was decided
    prediction: Any
    #: the probability with which it was queried, in [0, 1] (0: nobody could be asked)
    query_prob: float
    queried: bool
    #: the known class (gold) or None
    gold: Any
    #: the primary label's value, None while there is none
    label: Any

    @property
    def awaiting_label(self) -> bool:
        """Queried and still waiting in the queue for its label."""
        return self.queried and self.label is None and self.status in Item.AWAITING_LABEL

    @property
    def label_missing(self) -> bool:
        """Queried without a label (waiting for it, or skipped for good)."""
        return self.queried and self.label is None

    @property
    def in_stream(self) -> bool:
        """In the estimator's stream (a *covered* item once the frontier passed it): not a queried
        item without a label, nor an item logged with ``query_prob`` 0 (nobody could be asked:
        :func:`unasked_cause`; docs/estimates.md)."""
        return not self.label_missing and self.query_prob > 0

