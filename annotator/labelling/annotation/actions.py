"""What an annotator does: lease the oldest waiting item, then label it.

The locks are described in docs/architecture.md ("Celery tasks, the sweep and the locks").

* A lease lasts ``project.lease_seconds``; an expired lease puts the item back in the queue.
  An annotator holds one lease per project (asking again returns the same item).
* Leasing locks the chosen row (``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL, so
  concurrent annotators take different items without waiting for each other) and then sets
  it with a compare-and-set ``UPDATE ... WHERE status is still waiting``, so two annotators
  never get the same item, on any database (SQLite has no row locks but serialises writers).
* A label is saved under the item's row lock, and only on an item offered to its sender
  (:func:`offered`, docs/teams.md "Who may label an item"): their lease, live or expired
  (a late label: accepted if nobody labelled the item yet, otherwise kept as an extra opinion,
  ``primary=False``, and never lost), or one whose lease passed from them to someone else
  (:class:`~.models.LapsedLease`) while it still takes their label; their open honeypot is
  answered before. Every other label is refused with ONE answer (:class:`NotOfferedError`),
  whatever the item is, so the refusal never tells a honeypot, a disputed or a pending item
  from a real one, and nobody settles an item the review pages decide.
* Overlap (:mod:`.overlap`): an item with ``overlap_k > 1`` goes back to the queue after each
  label until ``overlap_k`` annotators gave a standing opinion; none of its opinions is primary
  until its consensus (:mod:`.consensus`), which the pipeline computes once they are all in.
  Nobody is offered an item they labelled (nor one they skipped). Labels of an item a reviewer
  decided (:func:`.consensus.resolve`) can no longer be undone or changed.

An annotator may also change any of their last labels (:func:`change_label`): the old label is
retracted exactly as an undo retracts it (one definition, :func:`_retract`) and the new one takes
its place. Every label stored here, a changed one too, is told to the project's webhooks
(``label.created``, :func:`.webhooks.outbox.labels_created`), honeypot answers excepted; an undo
and the retraction of a changed label send no event (docs/webhooks.md).

Nothing here sends Celery tasks: the functions return what changed and the caller (a view)
asks :mod:`.send` for the follow-up work (a primary label or an undo: ``apply_labels``; a
queue running low: ``advance_stream``).

The functions join the caller's transaction when there is one (as a savepoint, so a refused
label leaves the caller's transaction usable): the queue's label request stores the label and
leases the next item in ONE transaction.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from annotator.labelling.engine import running_totals
from annotator.labelling.engine.faults import hold_point
from annotator.labelling.models import (
    Honeypot,
    Item,
    Label,
    LabelsGiven,
    LapsedLease,
    LearnerState,
    Membership,
    Project,
    Skip,
    leased_by_q,
    waiting_q,
)
from annotator.labelling.teams import consensus
from annotator.labelling.teams.honeypots import honeypot_of, maybe_serve, open_honeypot_ids
from annotator.labelling.webhooks import outbox

#: Attempts at the compare-and-set before giving up (other annotators took the candidates).
LEASE_ATTEMPTS = 5
#: Item columns a label submission reads and writes (the image and the vector stay in the table).
LEASE_FIELDS = ("id", "project_id", "status", "lease_owner_id", "lease_expires", "overlap_k", "n_opinions")


def lease_next(project: Project, user: Any, another: bool = False) -> Item | None:
    """Lease the oldest waiting item to ``user`` (or return their live lease); None if none waits.

    ``another``: lease a further item even though ``user`` holds one (their open honeypot or a
    live lease): the queue page's look-ahead (:mod:`.look_ahead`) holds a few at once.

    Two bounded queries, each reading ids only: the user's live lease, else the oldest waiting
    item they did not skip, locked (rows another transaction holds are skipped: SKIP LOCKED on
    PostgreSQL). Both walk the partial queue index (``item_queue``) in ``seq`` order and stop
    at the first match, so the cost does not grow with the queue (one query ordered by
    "mine first, then seq" sorted every waiting item before its limit, 0.5 s for a 50k queue).
    The chosen row is then set with a compare-and-set ``UPDATE``. The caller tops the queue up
    when it runs low (:func:`.send.top_up_if_low`).

    Honeypots (:mod:`.honeypots`): an open honeypot is held like a lease (the held item with the
    lowest ``seq`` comes first, whichever it is); when a waiting item would be leased, a honeypot
    is served instead with the project's ``honeypot_rate``.
    """
    # an overlapped item waits for the others once the user gave their opinion on it
    labelled_by = Exists(Label.objects.filter(item=OuterRef("pk"), annotator=user, undone_at__isnull=True))
    with transaction.atomic():
        pk, drawn = None, False
        for _ in range(LEASE_ATTEMPTS):
            now = timezone.now()
            items = Item.objects.filter(project=project)
            pk = None if another else next(iter(held_ids(project, user, now)), None)
            if pk is not None:
                break
            found = (items.select_for_update(skip_locked=True)
                     .filter(waiting_q(now) & ~Q(skips__annotator=user)).exclude(labelled_by)
                     .order_by("seq").values_list("pk", "seq", "lease_owner_id").first())
            if found is None:
                break
            pk = found[0]
            if not drawn:  # one draw per lease: a honeypot in place of the waiting item
                drawn = True
                honeypot = maybe_serve(project, user, found[1])
                if honeypot is not None:
                    return honeypot
            # the owner is part of the compare-and-set: the expired lease noted is the one taken
            if Item.objects.filter(pk=pk, lease_owner_id=found[2]).filter(waiting_q(now)).update(
                    status=Item.Status.LEASED, lease_owner=user,
                    lease_expires=now + timedelta(seconds=project.lease_seconds)):
                if found[2] != user.pk:  # another's expired lease: their late label stays welcome
                    LapsedLease.note(pk, found[2])
                break
            pk = None
        if pk is None:  # the user waits: the look-ahead counts them (see queue.active_annotators)
            Membership.objects.filter(project=project, user=user).update(last_waited=timezone.now())
        return Item.objects.get(pk=pk) if pk is not None else None


def held_ids(project: Project, user: Any, now: Any) -> list[int]:
    """Ids of the items ``user`` holds in ``project`` at ``now`` (their open honeypots and live
    leases), by ``seq``: the order the queue page shows them, so that the ids an annotator sees
    rise as a real queue's do whichever held item is a honeypot (docs/teams.md, "Honeypots")."""
    ids = open_honeypot_ids(project, user)
    ids += Item.objects.filter(project=project).filter(leased_by_q(user, now)).values_list("pk", flat=True)
    return list(Item.objects.filter(pk__in=ids).order_by("seq").values_list("pk", flat=True))


class DuplicateLabelError(ValueError):
    """The annotator already has a (not undone) label on this item."""


class NothingToUndoError(ValueError):
    """The annotator's last label cannot be undone: undone already (a repeated undo), or not
    undoable (:func:`undoable`)."""


class NotChangeableError(ValueError):
    """The label is not one the annotator may change now (:func:`changeable_ids`): changed or
    undone already (a repeated change with another value), or older than their last
    :data:`RECENT_LABELS`."""


class LeasedToOtherError(ValueError):
    """The review is leased to another reviewer (a live lease, :mod:`.teams.reviews`)."""


#: THE answer to a label on an item not offered to its sender (:func:`offered`), whatever the item
#: is: it names no item and no status (either would tell a honeypot or a disputed item apart)
NOT_OFFERED = "this item is not yours to label: another annotator may hold it, or it takes no label from you"


class NotOfferedError(ValueError):
    """The item is not offered to the user (:func:`offered`); the message is always
    :data:`NOT_OFFERED`."""

    def __init__(self) -> None:
        super().__init__(NOT_OFFERED)


def offered(item: Item, user: Any, now: Any) -> bool:
    """THE rule of which items take ``user``'s label (docs/teams.md, "Who may label an item"), for
    ``item`` read under its row lock; their open honeypot is answered before this is asked, and a
    repeat of their own label refused before it too. Offered: the item's lease is theirs (live, or
    expired while nobody took it: a late label); or their lease on it passed to someone else
    (:class:`~.models.LapsedLease`; not when they skipped it since), nobody holds a live lease on
    it now and it still takes a label: waiting (queued, or leased with an expired lease), or
    labelled without overlap (the late label is kept as an extra opinion). Never offered: an item
    leased to someone else, another annotator's honeypot, an item never leased to ``user``
    (pending, decided alone, queued, labelled, disputed), an overlapped item whose opinions are all
    in (a late one would change or settle its consensus: reviewers decide on the review pages).

    The lapsed-lease lookup runs for every item not leased to ``user``, whatever its status, so
    the refusals cost the same statements."""
    if item.status == Item.Status.LEASED and item.lease_owner_id == user.pk:
        return True
    lapsed = (LapsedLease.objects.filter(item_id=item.pk, annotator=user)
              .exclude(Exists(Skip.objects.filter(item_id=item.pk, annotator=user))).exists())
    if not lapsed or item.has_live_lease(now):
        return False
    return item.status in Item.AWAITING_LABEL or (item.status == Item.Status.LABELLED and item.overlap_k <= 1)


def submit_label(project: Project, item_id: int, user: Any, value: Any) -> Label:
    """Store ``user``'s label ``value`` for item ``item_id`` of ``project`` (see module docstring).

    ``seconds`` on the label is the time since the lease began when ``user`` holds the lease,
    else None. Raises ``Item.DoesNotExist`` for an item not in the project, ValueError when the
    value is not a class, :class:`DuplicateLabelError` when ``user`` already labelled it (looked
    at first, whatever the item is) and :class:`NotOfferedError` for any item not
    :func:`offered` to ``user``; nothing is stored then. A ``primary`` label, and the last opinion an
    overlapped item waited for, need ``apply_labels`` (the caller's :func:`.send.labels_changed`
    when :func:`needs_pipeline`). The answer to ``user``'s open honeypot on the
    item is a non-primary label linked to the honeypot (``seconds`` since it was served).
    """
    cls = project.parse_class(value)
    with transaction.atomic():
        now = timezone.now()
        item = Item.objects.select_for_update().only(*LEASE_FIELDS).get(pk=item_id, project=project)
        honeypot = Honeypot.objects.filter(item_id=item.pk, annotator=user, label__isnull=True).first()
        if honeypot is not None:
            honeypot.label = Label.objects.create(
                item_id=item.pk, project=project, annotator=user, value=cls, primary=False,
                seconds=max(0.0, (now - honeypot.served).total_seconds()))
            LabelsGiven.add(project.pk)
            honeypot.save(update_fields=["label"])
            return honeypot.label
        earlier = list(Label.objects.filter(item_id=item.pk)
                       .values_list("annotator_id", "primary", "undone_at"))
        # a repeat first, whatever the item is (a honeypot's repeat answers as a real item's)
        if any(annotator == user.pk and undone is None for annotator, _, undone in earlier):
            raise DuplicateLabelError(f"you already labelled item {item.pk} (a double submission?); "
                                      "use undo to change it")
        if not offered(item, user, now):
            raise NotOfferedError()
        seconds = None
        if item.lease_owner_id == user.pk and item.lease_expires is not None:
            leased_at = item.lease_expires - timedelta(seconds=project.lease_seconds)
            seconds = max(0.0, (now - leased_at).total_seconds())
        overlapped = item.overlap_k > 1
        primary = not overlapped and not any(was_primary for _, was_primary, _ in earlier)
        label = Label.objects.create(item=item, project=project, annotator=user, value=cls,
                                     seconds=seconds, primary=primary)
        LabelsGiven.add(project.pk)
        hold_point("LABEL")
        if item.status == Item.Status.LEASED and item.lease_owner_id != user.pk:
            LapsedLease.note(item.pk, item.lease_owner_id)  # a late label ends another's expired lease
        item.n_opinions += 1
        if primary or (overlapped and item.n_opinions >= item.overlap_k):
            item.status, item.lease_owner_id, item.lease_expires = Item.Status.LABELLED, None, None
        elif overlapped and item.status == Item.Status.LEASED:  # back in the queue for the others
            item.status, item.lease_owner_id, item.lease_expires = Item.Status.QUEUED, None, None
        Item.objects.filter(pk=item.pk).update(status=item.status, lease_owner_id=item.lease_owner_id,
                                               lease_expires=item.lease_expires,
                                               n_opinions=F("n_opinions") + 1)
        if overlapped and item.n_opinions >= item.overlap_k:
            consensus.mark_due(item)
        outbox.labels_created(project.pk, [label])
        return label


def needs_pipeline(label: Label) -> bool:
    """The pipeline has work after storing ``label``: it is primary, or its item's opinions are
    all in and wait to be aggregated (:func:`.consensus.mark_due`)."""
    return label.primary or consensus.is_due(label.item_id)


def skip_item(item: Item, user: Any) -> None:
    """``user`` passes on the item they lease: it returns to the queue for the other annotators.

    ValueError when ``user`` does not hold the item's lease. Skipping an open honeypot closes it
    (it is not served to ``user`` again). Safe to repeat and to race (docs/architecture.md,
    "Repeated and concurrent requests"): under the item's lock, a skip ``user`` already made
    answers as the first one did and changes nothing (unless another annotator leased the item
    since: ValueError).
    """
    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=item.pk)
        if Honeypot.objects.filter(item=item, annotator=user, label__isnull=True).delete()[0]:
            Skip.objects.get_or_create(item=item, annotator=user)
            return
        mine = item.status == Item.Status.LEASED and item.lease_owner_id == user.pk
        taken = item.has_live_lease(timezone.now()) and not mine  # someone else's now: refused
        if not mine and not taken and Skip.objects.filter(item=item, annotator=user).exists():
            return  # a repeat: skipped already
        if not mine:
            raise ValueError(f"item {item.pk} is not leased to you")
        Skip.objects.get_or_create(item=item, annotator=user)
        item.status, item.lease_owner, item.lease_expires = Item.Status.QUEUED, None, None
        item.save(update_fields=["status", "lease_owner", "lease_expires"])


def undoable(label: Label) -> bool:
    """Whether ``label`` can be undone if it is its annotator's latest: an opinion not undone,
    on an item no reviewer decided, and the item's label (primary), an opinion on an overlapped
    item, or the answer to a honeypot."""
    if label.undone_at is not None or label.kind != Label.Kind.OPINION:
        return False
    if not (label.primary or label.item.overlap_k > 1 or honeypot_of(label) is not None):
        return False
    return not consensus.is_adjudicated(label.item_id)


def undoable_label(project: Project, user: Any) -> Label | None:
    """The label ``user`` may undo: their latest label in the project, if :func:`undoable`.
    Older labels cannot be undone (one step back). Read under the state lock when acting on it
    (:func:`undo_last_label`): a label chosen before the lock may be undone meanwhile."""
    label = (Label.objects.filter(project=project, annotator=user).select_related("item")
             .order_by("-id").first())
    return label if label is not None and undoable(label) else None


def _lock_state(project: Project) -> None:
    """Lock the project's learner state row, FIRST (the pipeline's lock order: state, then labels
    and items): the aggregates and the primary labels are written under it only."""
    LearnerState.objects.select_for_update().filter(project=project).values("pk").first()


def _retract(project: Project, label: Label, item: Item) -> None:
    """Take back ``label`` (the state row locked first, then its row and its item's, by the
    caller): the one definition of what an undo does to the label, the learner and the
    aggregates, shared by :func:`undo_last_label` and :func:`change_label`.

    The label stays in the database with ``undone_at`` set and ``primary=False`` (the undo is
    recorded). If it was the item's primary label: when the learner had already learnt from it,
    ``LearnerState.needs_rebuild`` asks the pipeline to rebuild the learner from the remaining
    labels in their applied order (the learner is corrected exactly, as if the label had never
    been given: a new model version), and the aggregates (:func:`.running_totals.record_undo`) lose it.
    An opinion on an overlapped item also withdraws the item's consensus
    (:func:`.consensus.withdraw`: its primary label leaves the learner the same way) until the
    opinions are all in again. An extra opinion (not primary) never reached the learner.
    """
    counts = running_totals.load(project.pk)
    rebuild = consensus.withdraw(item, counts) if item.overlap_k > 1 else False
    label.refresh_from_db(fields=["primary"])
    if label.primary:
        rebuild = consensus.demote(label, item, counts) or rebuild
    label.undone_at = timezone.now()
    label.save(update_fields=["undone_at"])
    # a honeypot's answer never counted (its item is not in the queue)
    if Item.objects.filter(pk=item.pk, n_opinions__gt=0).update(n_opinions=F("n_opinions") - 1):
        item.n_opinions -= 1
    if rebuild:
        LearnerState.objects.filter(project=project).update(needs_rebuild=True)


def undo_last_label(project: Project, user: Any) -> Item:
    """Retract ``user``'s last label (see :func:`undoable_label`) and lease its item back to them.

    What the retraction does to the label, the learner and the aggregates: :func:`_retract`.
    ValueError when there is nothing to undo. The undo needs ``apply_labels`` (the caller's
    :func:`.send.labels_changed`). The answer to a honeypot is undone the same way for the
    user; the honeypot is theirs again (the item, never queued, keeps its status and the learner
    never had the label).

    Safe to repeat and to race (docs/architecture.md, "Repeated and concurrent requests"): the
    state lock is taken FIRST and the label chosen under it, then its row and its item's are
    locked and ``undone_at`` checked again; a second undo sent with the first (a double tap, a
    retrying client) finds the label undone and raises :class:`NothingToUndoError`, so one undo
    never retracts an opinion twice.
    """
    with transaction.atomic():
        _lock_state(project)  # first: undos and changes of the project queue here
        label = undoable_label(project, user)
        if label is None:
            raise NothingToUndoError("nothing to undo (your last label was undone already)")
        label = Label.objects.select_for_update().get(pk=label.pk)
        item = Item.objects.select_for_update().get(pk=label.item_id)
        if label.undone_at is not None:  # cannot happen under the state lock; checked all the same
            raise NothingToUndoError("nothing to undo (your last label was undone already)")
        if Honeypot.objects.filter(label=label).update(label=None):
            _retract(project, label, item)  # not primary: only its row changes
            return item
        _retract(project, label, item)
        if item.status == Item.Status.LEASED and item.lease_owner_id != user.pk:
            LapsedLease.note(item.pk, item.lease_owner_id)  # an overlapped item leased to another meanwhile
        item.status, item.lease_owner = Item.Status.LEASED, user
        item.lease_expires = timezone.now() + timedelta(seconds=project.lease_seconds)
        item.save(update_fields=["status", "lease_owner", "lease_expires"])
        return item


#: THE rule of which labels can be changed: an annotator's last RECENT_LABELS standing labels in
#: a project (the queue lists them beside the item; :func:`change_label` refuses any other)
RECENT_LABELS = 10


def _recent(project: Project, user: Any) -> Any:
    """``user``'s standing labels in ``project``, newest first (slice it)."""
    return Label.objects.filter(project=project, annotator=user, undone_at__isnull=True).order_by("-id")


def recent_labels(project: Project, user: Any, n: int = RECENT_LABELS) -> list[Label]:
    """``user``'s last ``n`` labels in ``project`` that are not undone, newest first, each with
    its item (what the queue lists beside the item; :func:`change_label` changes one)."""
    return list(_recent(project, user).select_related("item").defer("item__data", "item__vector")[:n])


def changeable_ids(project: Project, user: Any) -> set[int]:
    """Ids of the labels ``user`` may change in ``project``: their last :data:`RECENT_LABELS`
    standing labels (the one definition the page's list and :func:`change_label` share; a
    reviewer's adjudication among them is still refused by :func:`change_label`)."""
    return set(_recent(project, user).values_list("pk", flat=True)[:RECENT_LABELS])


def change_label(project: Project, user: Any, label_id: int, value: Any) -> Label:
    """Replace ``user``'s label ``label_id`` by one of class ``value``: the old label is retracted
    exactly as an undo does (:func:`_retract`: a primary label already learnt makes the pipeline
    rebuild the learner without it, a new model version) and the new one is stored in its place
    (primary if the old one was, with the old one's annotator seconds); the item keeps its
    status. Returns the new label, or the old one unchanged when ``value`` is its class already.

    On an overlapped item the new opinion is not primary: the item's consensus is aggregated
    again (:func:`.consensus.mark_due`) once its opinions are all in.

    Raises ``Label.DoesNotExist`` for a label that is not ``user``'s opinion in ``project``,
    ValueError when ``value`` is not a class or a reviewer decided the item,
    :class:`NotChangeableError` for a label undone or changed already, or older than the user's
    last :data:`RECENT_LABELS` (:func:`changeable_ids`). A primary change,
    and a change on an overlapped item, need ``apply_labels`` (the caller's
    :func:`.send.labels_changed` when :func:`needs_pipeline`).

    Safe to repeat and to race (docs/architecture.md, "Repeated and concurrent requests"): the
    state lock first, then the label's row, checked again; a repeat of a change that happened
    (same label, same value) returns the label that replaced it and changes nothing.
    """
    with transaction.atomic():
        _lock_state(project)
        label = Label.objects.select_for_update().get(pk=label_id, project=project, annotator=user,
                                                      kind=Label.Kind.OPINION)
        cls = project.parse_class(value)  # after the lookup: another's label is 404 whatever the value
        if label.undone_at is not None:
            done = (Label.objects.filter(item_id=label.item_id, annotator=user, undone_at__isnull=True,
                                         kind=Label.Kind.OPINION, pk__gt=label.pk).order_by("-id").first())
            if done is not None and done.value == cls:
                return done  # a repeat: that change happened
            raise NotChangeableError("this label was changed or undone already")
        if label.value == cls:
            return label
        if label.pk not in changeable_ids(project, user):
            raise NotChangeableError(f"only your last {RECENT_LABELS} labels can be changed")
        if consensus.is_adjudicated(label.item_id):
            raise ValueError("a reviewer decided this item: its labels cannot change")
        item = Item.objects.select_for_update().get(pk=label.item_id)
        overlapped = item.overlap_k > 1
        primary = label.primary and not overlapped
        counted = item.n_opinions
        _retract(project, label, item)
        new = Label.objects.create(item_id=item.pk, project=project, annotator=user, value=cls,
                                   seconds=label.seconds, primary=primary)
        LabelsGiven.add(project.pk)
        if not Honeypot.objects.filter(label=label).update(label=new):  # a honeypot's answer stays linked
            outbox.labels_created(project.pk, [new])  # (told, unless it answers a honeypot)
        if counted > item.n_opinions:  # the old one counted: the new one does
            Item.objects.filter(pk=item.pk).update(n_opinions=F("n_opinions") + 1)
        if overlapped and counted >= item.overlap_k:
            consensus.mark_due(item)
        return new
