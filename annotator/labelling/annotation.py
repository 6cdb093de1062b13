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

from .models import Item, Label, Project
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


def submit_label(item: Item, user: Any, value: Any, seconds: float | None = None) -> Label:
    """Store ``user``'s label for ``item`` (see module docstring); ValueError for a bad label.

    Raises ValueError when the value is not a class or the item was never queried.
    """
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
        cls = item.project.parse_class(value)
        if item.status not in LABELABLE:
            raise ValueError(f"item {item.pk} was not queried (status {item.status})")
        primary = not Label.objects.filter(item=item, primary=True).exists()
        label = Label.objects.create(item=item, project=item.project, annotator=user, value=cls,
                                     seconds=seconds, primary=primary)
        if primary:
            item.status = Item.Status.LABELLED
            item.lease_owner, item.lease_expires = None, None
            item.save(update_fields=["status", "lease_owner", "lease_expires"])
            project_id = item.project_id
            transaction.on_commit(lambda: enqueue(apply_labels, project_id))
        return label
