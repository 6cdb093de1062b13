"""What an annotator does: lease the oldest waiting item, then label it (DESIGN.md section 5).

* A lease lasts ``project.lease_seconds``; an expired lease puts the item back in the queue.
  An annotator holds at most one lease per project (asking again returns the same item).
* Leasing is a compare-and-set ``UPDATE ... WHERE status is still waiting``, so two
  annotators never get the same item, on any database.
* A label is saved in a transaction; ``on_commit`` sends ``apply_labels``. A label for an
  item whose lease expired is accepted if nobody labelled it yet; otherwise it is kept as an
  extra opinion (``primary=False``) and never lost.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from .faults import hold_point
from .models import Item, Label, LearnerState, Project, Skip
from .stream import look_ahead, waiting_count, waiting_filter
from .tasks import advance_stream, apply_labels, enqueue

#: Attempts at the compare-and-set before giving up (other annotators took the candidates).
LEASE_ATTEMPTS = 5
LABELABLE = (Item.Status.QUEUED, Item.Status.LEASED, Item.Status.LABELLED, Item.Status.SKIPPED)


def current_lease(project: Project, user: Any) -> Item | None:
    """The item ``user`` holds a live lease on in ``project``, if any."""
    return (Item.objects.filter(project=project, status=Item.Status.LEASED, lease_owner=user,
                                lease_expires__gte=timezone.now()).order_by("seq").first())


def lease_next(project: Project, user: Any) -> Item | None:
    """Lease the oldest waiting item to ``user`` (or return their live lease); None if none waits.

    When the queue runs low (fewer than the look-ahead), asks a worker to decide more items
    after this transaction commits.
    """
    item = current_lease(project, user)
    if item is None:
        for _ in range(LEASE_ATTEMPTS):
            now = timezone.now()
            pk = (Item.objects.filter(project=project).filter(waiting_filter(now))
                  .exclude(skips__annotator=user)
                  .order_by("seq").values_list("pk", flat=True).first())
            if pk is None:
                break
            taken = Item.objects.filter(pk=pk).filter(waiting_filter(now)).update(
                status=Item.Status.LEASED, lease_owner=user,
                lease_expires=now + timedelta(seconds=project.lease_seconds))
            if taken:
                item = Item.objects.get(pk=pk)
                break
    low = waiting_count(project) < look_ahead(project)
    if low and Item.objects.filter(project=project, status=Item.Status.PENDING).exists():
        transaction.on_commit(lambda: enqueue(advance_stream, project.pk))
    return item


class DuplicateLabelError(ValueError):
    """The annotator already has a (not undone) label on this item."""


def submit_label(item: Item, user: Any, value: Any, seconds: float | None = None) -> Label:
    """Store ``user``'s label for ``item`` (see module docstring); ValueError for a bad label.

    Raises ValueError when the value is not a class or the item was never queried, and
    :class:`DuplicateLabelError` when ``user`` already labelled it (nothing is stored).
    """
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
        cls = item.project.parse_class(value)
        if item.status not in LABELABLE:
            raise ValueError(f"item {item.pk} was not queried (status {item.status})")
        if Label.objects.filter(item=item, annotator=user, undone_at__isnull=True).exists():
            raise DuplicateLabelError(f"you already labelled item {item.pk} (a double submission?); "
                                 "use undo to change it")
        primary = not Label.objects.filter(item=item, primary=True).exists()
        label = Label.objects.create(item=item, project=item.project, annotator=user, value=cls,
                                     seconds=seconds, primary=primary)
        hold_point("LABEL")
        if primary:
            item.status = Item.Status.LABELLED
            item.lease_owner, item.lease_expires = None, None
            item.save(update_fields=["status", "lease_owner", "lease_expires"])
            project_id = item.project_id
            transaction.on_commit(lambda: enqueue(apply_labels, project_id))
        return label


def skip_item(item: Item, user: Any) -> None:
    """``user`` passes on the item they lease: it returns to the queue for the other annotators.

    ValueError when ``user`` does not hold the item's lease.
    """
    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=item.pk)
        if item.status != Item.Status.LEASED or item.lease_owner_id != user.pk:
            raise ValueError(f"item {item.pk} is not leased to you")
        Skip.objects.get_or_create(item=item, annotator=user)
        item.status, item.lease_owner, item.lease_expires = Item.Status.QUEUED, None, None
        item.save(update_fields=["status", "lease_owner", "lease_expires"])


def undoable_label(project: Project, user: Any) -> Label | None:
    """The label ``user`` may undo: their latest label in the project, if it is still the
    item's label (primary) and not undone. Older labels cannot be undone (one step back)."""
    label = Label.objects.filter(project=project, annotator=user).order_by("-id").first()
    if label is None or not label.primary or label.undone_at is not None:
        return None
    return label


def undo_last_label(project: Project, user: Any) -> Item:
    """Retract ``user``'s last label (see :func:`undoable_label`) and lease its item back to them.

    The label stays in the database with ``undone_at`` set and ``primary=False`` (the undo is
    recorded). If the learner had already learnt from it, ``LearnerState.needs_rebuild`` asks
    the pipeline to rebuild the learner from the remaining labels, in their applied order (the
    learner is corrected exactly, as if the label had never been given). ValueError when there is
    nothing to undo.
    """
    with transaction.atomic():
        label = undoable_label(project, user)
        if label is None:
            raise ValueError("nothing to undo")
        label = Label.objects.select_for_update().get(pk=label.pk)
        item = Item.objects.select_for_update().get(pk=label.item_id)
        label.undone_at, label.primary = timezone.now(), False
        label.save(update_fields=["undone_at", "primary"])
        if label.applied_version is not None:
            LearnerState.objects.filter(project=project).update(needs_rebuild=True)
        item.status, item.lease_owner = Item.Status.LEASED, user
        item.lease_expires = timezone.now() + timedelta(seconds=project.lease_seconds)
        item.save(update_fields=["status", "lease_owner", "lease_expires"])
        transaction.on_commit(lambda: enqueue(apply_labels, project.pk))
        return item
