"""One decided item of a project's decision log and the rule of the prefix an estimate covers.

The importance-weighted (Horvitz-Thompson) accuracy needs the label of every queried item of the
stream it covers, so it covers the longest prefix of the log (in ``seq`` order) before the first
queried item still waiting for a label (:attr:`Decision.awaiting_label`); queried items without a
label drawn by the query rule are left out of that stream (:attr:`Decision.label_missing`; why:
:attr:`Decision.left_out`): those whose label an admin replaced (``Label.drawn`` False:
docs/dataset.md), those in dispute until a reviewer settles them (they join the stream then) and
skipped ones; and so are the items logged with query probability 0 (nobody could have been asked:
held by the label budget's hard cap, decided while the stop rule held, labelled before it was
decided; :func:`unasked_cause`, docs/estimates.md "What the estimates cover"). The running
totals (:mod:`.running_totals`) walk their frontier by this rule, so the metrics, the dashboard's
curves and the model card follow it without reading the log. See docs/architecture.md ("Metrics").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, NamedTuple

from django.db.models import Q

from annotator.labelling.models import Consensus, Item, Label

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


#: why a decided item the frontier passed is outside the estimator's stream (:attr:`Decision.left_out`):
#: logged with query probability 0 (``unasked``, :func:`unasked_cause`), or queried without a label
#: drawn by the query rule: an admin (or Label Studio) gave its label (``relabelled``), its
#: opinions are in without a settled consensus (``disputed``: in dispute under majority vote, or
#: not aggregated yet; it joins the stream once settled, :func:`.running_totals.record_new_primary`),
#: or anything else (``skipped``: left by an earlier version of the queue, whose skip ended an item)
LEFT_OUT_CAUSES: Final = ("unasked", "relabelled", "disputed", "skipped")


def left_out_flags(item_ids: Iterable[int]) -> dict[int, tuple[bool, bool]]:
    """``{item id: (relabelled, in_dispute)}`` for the items ``item_ids`` (the few queried items
    without a drawn label a walk meets: two indexed queries): ``relabelled``, a standing primary
    label not drawn by the query rule (``Label.drawn`` False: an admin's relabel, a label from
    Label Studio); ``in_dispute``, a consensus not settled (:class:`.models.Consensus` due, or
    disputed: no value under majority vote, docs/teams.md)."""
    ids = list(item_ids)
    if not ids:
        return {}
    relabelled = set(Label.objects.filter(item_id__in=ids, primary=True, drawn=False)
                     .values_list("item_id", flat=True))
    in_dispute = set(Consensus.objects.filter(item_id__in=ids)
                     .filter(Q(due=True) | Q(status=Consensus.Status.DISPUTED))
                     .values_list("item_id", flat=True))
    return {pk: (pk in relabelled, pk in in_dispute) for pk in ids}


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
    #: the value of the primary label drawn by the query rule (``Label.drawn``), None while there is none
    label: Any
    #: a standing primary label not drawn by the query rule (:func:`left_out_flags`)
    relabelled: bool = False
    #: opinions in without a settled consensus (:func:`left_out_flags`)
    in_dispute: bool = False

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

    def flagged(self, flags: dict[int, tuple[bool, bool]], pk: int) -> Decision:
        """This decision with the flags of its item ``pk`` in ``flags`` (:func:`left_out_flags`),
        unchanged when they are not there."""
        if pk not in flags:
            return self
        relabelled, in_dispute = flags[pk]
        return self._replace(relabelled=relabelled, in_dispute=in_dispute)

    @property
    def left_out(self) -> str | None:
        """Why the item, once the frontier passed it, is outside the estimator's stream (one of
        :data:`LEFT_OUT_CAUSES`); None when it is in it, or when it awaits its label (the frontier
        stops there). Without its flags (:func:`left_out_flags`) a queried item without a drawn
        label reads ``skipped``."""
        if self.in_stream or self.awaiting_label:
            return None
        if self.query_prob <= 0:
            return "unasked"
        return "relabelled" if self.relabelled else "disputed" if self.in_dispute else "skipped"

