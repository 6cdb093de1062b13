"""The review queue (docs/teams.md "Review"): reviewers lease one open
:class:`~.models.Review` at a time, oldest item first, and decide its class; a reviewer may
undo their latest decision (:func:`undo_decision`), which reopens the review for them.

Reviews come from three sources: labels suspected wrong (:mod:`.suspects`), audits of
auto-decisions (:mod:`.audit_sampling`, opened by the stream
engine) and disagreements between annotators: the disputed items of
:func:`.consensus.disagreements`, opened and closed where their consensus changes, in the same
transaction (:func:`.consensus.sync_reviews`), or any item passed to :func:`request_review`. The decision on a
disagreement is the item's final label (:func:`.consensus.resolve`: the learner is corrected when
it overturns a label it had). Leases work as the annotators' (:mod:`.actions`): a
compare-and-set ``UPDATE`` so that two reviewers never get the same review,
``project.lease_seconds`` long.

Nothing here sends Celery tasks: after a disagreement's decision the caller (a view) asks
:mod:`.send` for the follow-up work.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Case, Exists, OuterRef, Q, When
from django.utils import timezone

from annotator.labelling.annotation.actions import LeasedToOtherError
from annotator.labelling.models import Item, Label, LearnerState, Project, Review
from annotator.labelling.projects.access import may_review

from . import consensus

#: Attempts at the compare-and-set before giving up (other reviewers took the candidates).
LEASE_ATTEMPTS = 5


#: reasons whose decision is the item's final label (an audit's never reaches the learner)
FINAL_REASONS = (Review.Reason.DISAGREEMENT, Review.Reason.SUSPECT)


class AlreadyDecidedError(ValueError):
    """The review was decided already (by this reviewer or another): decisions are final."""


class WithdrawnReviewError(ValueError):
    """A suspect review whose item no longer has a label to suspect (:func:`suspect_opinions`:
    the label sent was undone meanwhile): the review was withdrawn, nothing decided."""


def suspect_opinions(project: Project) -> Any:
    """The labels that can be suspected wrong (docs/estimates.md, "Suspected label errors"): the
    standing opinions (not undone) on the items the model queried and scored. The one rule of the
    ranking (:func:`.suspects.ranked_suspects`), of what may be sent to review
    (:func:`.suspects.send_to_review`) and of which suspect reviews still stand."""
    return Label.objects.filter(project=project, kind=Label.Kind.OPINION, undone_at__isnull=True,
                                item__queried=True, item__score__isnull=False)


def _unfounded_suspects(project: Project) -> Any:
    """The project's open suspect reviews whose item has no label :func:`suspect_opinions` keeps."""
    founded = suspect_opinions(project).filter(item_id=OuterRef("item_id"))
    return Review.objects.filter(project=project, reason=Review.Reason.SUSPECT, decided_at__isnull=True
                                 ).exclude(Exists(founded))


def open_q(now: Any) -> Q:
    """Reviews a reviewer can lease at ``now``: undecided, not leased or with an expired lease."""
    return Q(decided_at__isnull=True) & (Q(lease_owner__isnull=True) | Q(lease_expires__lt=now))


def mine_q(user: Any, now: Any) -> Q:
    """``user``'s live review lease."""
    return Q(decided_at__isnull=True, lease_owner=user, lease_expires__gte=now)


def request_review(item: Item, reason: str, sample_prob: float | None = None) -> Review:
    """Queue ``item`` for the reviewers for ``reason`` (a :class:`~.models.Review.Reason`); the
    existing review when there is one (an item is reviewed once per reason)."""
    review, _ = Review.objects.get_or_create(item=item, reason=reason, defaults={
        "project_id": item.project_id, "sample_prob": sample_prob})
    return review


def withdraw_unfounded_suspects(project: Project, user: Any) -> None:
    """Delete the open suspect reviews whose label was undone since it was sent (the item has no
    label left to suspect, :func:`suspect_opinions`), except those another reviewer holds a live
    lease on (their decision is refused and withdraws it, :func:`decide`)."""
    now = timezone.now()
    _unfounded_suspects(project).filter(open_q(now) | mine_q(user, now)).delete()


def lease_review(project: Project, user: Any) -> Review | None:
    """Lease the open review of the oldest item to ``user`` (or return their live lease); None
    when nothing waits. The caller checks that ``user`` may review (:func:`.access.may_review`).
    Suspect reviews whose label was undone leave the queue first (:func:`withdraw_unfounded_suspects`);
    disagreement reviews follow the consensus as it changes (:func:`.consensus.sync_reviews`)."""
    withdraw_unfounded_suspects(project, user)
    with transaction.atomic():
        for _ in range(LEASE_ATTEMPTS):
            now = timezone.now()
            mine = mine_q(user, now)
            found = (Review.objects.filter(project=project).filter(mine | open_q(now))
                     .order_by(Case(When(mine, then=0), default=1), "item__seq", "id")
                     .values_list("pk", Case(When(mine, then=True), default=False)).first())
            if found is None:
                return None
            if found[1] or Review.objects.filter(pk=found[0]).filter(open_q(now)).update(
                    lease_owner=user, lease_expires=now + timedelta(seconds=project.lease_seconds)):
                return Review.objects.select_related("item").get(pk=found[0])
        return None


def opinions(review: Review, blind: bool = False) -> list[dict[str, Any]]:
    """Each annotator's standing label of the review's item, in label order: ``{"annotator",
    "value", "created"}`` (what the reviewer sees next to the item). ``blind`` (the project's
    ``blind_review``): "annotator 1", "annotator 2", ... in label order instead of the names."""
    rows = (Label.objects.filter(item_id=review.item_id, undone_at__isnull=True)
            .order_by("id").values_list("annotator__username", "value", "created"))
    return [{"annotator": f"annotator {i}" if blind else (name or "(deleted user)"), "value": value,
             "created": created}
            for i, (name, value, created) in enumerate(rows, start=1)]


def decide(project: Project, review_id: int, user: Any, value: Any) -> Review:
    """Record ``user``'s final decision ``value`` on review ``review_id`` (who and when).

    Raises ``Review.DoesNotExist`` for a review not in the project, ValueError when the value is
    not a class or ``user`` may not review, :class:`~.actions.LeasedToOtherError` when another
    reviewer holds a live lease on it and :class:`AlreadyDecidedError` when it was decided.
    Nothing is stored then. :class:`WithdrawnReviewError` for a suspect review whose item has no
    label left to suspect (:func:`suspect_opinions`: the label sent was undone meanwhile): the
    review is deleted (withdrawn, as :func:`withdraw_unfounded_suspects` does) and nothing else
    changes: no label, no consensus. A disagreement's (or a suspected label's) decision is the
    item's final label (:func:`.consensus.resolve`; the caller sends ``apply_labels``,
    :func:`.send.labels_changed`); an audit's decision never reaches the learner.

    Safe to repeat and to race (docs/architecture.md, "Repeated and concurrent requests"): the
    learner state is locked FIRST (the pipeline's lock order; :func:`.consensus.resolve` writes
    under it), then the review's row, whose decision is checked again; ``user`` repeating their
    own decision with the same value gets the review back unchanged (nothing is applied twice).
    """
    cls = project.parse_class(value)
    if not may_review(user, project):
        raise ValueError("only the project's reviewers may decide reviews")
    with transaction.atomic():
        LearnerState.objects.select_for_update().filter(project=project).values("pk").first()
        now = timezone.now()
        review = Review.objects.select_for_update().get(pk=review_id, project=project)
        if review.decided_at is not None and review.decided_by_id == user.pk and review.value == cls:
            return review  # a repeat: decided so already
        if review.decided_at is not None:
            raise AlreadyDecidedError(f"this item was already decided ({review.value!r}): "
                                      "decisions are final")
        if (review.lease_owner_id not in (None, user.pk) and review.lease_expires is not None
                and review.lease_expires >= now):
            raise LeasedToOtherError("this review is leased to another reviewer")
        withdrawn = (review.reason == Review.Reason.SUSPECT
                     and _unfounded_suspects(project).filter(pk=review.pk).delete()[0] > 0)
        if not withdrawn:
            review.value, review.decided_by, review.decided_at = cls, user, now
            review.lease_owner, review.lease_expires = None, None
            review.save(update_fields=["value", "decided_by", "decided_at", "lease_owner", "lease_expires"])
            if review.reason in FINAL_REASONS:
                consensus.resolve(review.item, cls, by=user)
            return review
    raise WithdrawnReviewError(f"item #{review.item.seq}'s label was undone after it was sent for review: "
                               "there is no label left to judge, so the review was withdrawn and "
                               "nothing was decided")


def last_decision(project: Project, user: Any) -> Review | None:
    """``user``'s latest standing review decision in ``project`` (what :func:`undo_decision`
    would reopen), or None."""
    return (Review.objects.filter(project=project, decided_by=user, decided_at__isnull=False)
            .order_by("-decided_at", "-pk").first())


def undo_decision(project: Project, user: Any) -> Review:
    """Reopen ``user``'s latest decision (:func:`last_decision`) and lease the review back to
    them: its value, who and when are cleared. An audit's decision never reached the learner, so
    nothing else changes. A disagreement's decision stays the item's final label until the
    reviewer decides it again (:func:`decide` then :func:`.consensus.resolve` it anew); a reviewer
    who leaves it open leaves that label in place. ValueError when there is none to undo."""
    with transaction.atomic():
        review = last_decision(project, user)
        if review is None:
            raise ValueError("you have no review decision to undo in this project")
        review = Review.objects.select_for_update().get(pk=review.pk)
        review.value, review.decided_by, review.decided_at = None, None, None
        review.lease_owner = user
        review.lease_expires = timezone.now() + timedelta(seconds=project.lease_seconds)
        review.save(update_fields=["value", "decided_by", "decided_at", "lease_owner", "lease_expires"])
        return Review.objects.select_related("item").get(pk=review.pk)


def review_rows(project: Project, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
    """The project's reviews with id > ``after``, at most ``limit``, in id order, JSON-able (the
    API): ``review_id, item_id, seq, reason, sample_prob, model_label`` (audits only: what the
    model said), ``value``, ``decided_by``, ``decided_at`` (None while open)."""
    rows = (Review.objects.filter(project=project, pk__gt=after).order_by("id")
            .values_list("id", "item_id", "item__seq", "reason", "sample_prob", "item__prediction", "value",
                         "decided_by__username", "decided_at")[:limit])
    return [{"review_id": pk, "item_id": item, "seq": seq, "reason": reason, "sample_prob": prob,
             "model_label": prediction if reason == Review.Reason.AUDIT else None, "value": value,
             "decided_by": by, "decided_at": at.isoformat() if at else None}
            for pk, item, seq, reason, prob, prediction, value, by, at in rows]


def review_counts(project: Project) -> dict[str, int]:
    """Open and decided reviews of the project (the review queue's progress line)."""
    reviews = Review.objects.filter(project=project)
    return {"open": reviews.filter(decided_at__isnull=True).count(),
            "decided": reviews.filter(decided_at__isnull=False).count()}
