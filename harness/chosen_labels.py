"""Labels on items a test or a benchmark chooses, stored through the label path.

The app takes a label only on an item offered to its sender (``actions.offered``, docs/teams.md
"Who may label an item"), and the queue offers the oldest waiting item. Fixtures that pick their
items (this one for ann, that one for bob) first put the item in the state the queue would have
left it in: leased to the user when it waits, else with the user's lease lapsed on it (their
lease passed to someone else before the item was labelled). The label itself goes through
``actions.submit_label``, refusals and all. Shared by ``tests/`` and ``benchmarks/``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from annotator.labelling.annotation.actions import submit_label
from annotator.labelling.models import Item, Label, LapsedLease, Project, waiting_q


def lease_chosen(project: Project, item_id: int, user: Any) -> bool:
    """Lease item ``item_id`` of ``project`` to ``user`` as ``actions.lease_next`` leases the oldest
    waiting one: only while it waits (queued, or leased with an expired lease, whose owner's
    lease then lapses); False when it does not wait."""
    now = timezone.now()
    owner = (Item.objects.filter(pk=item_id, project=project).filter(waiting_q(now))
             .values_list("lease_owner_id", flat=True).first())
    expires = now + timedelta(seconds=project.lease_seconds)
    same = Item.objects.filter(pk=item_id, project=project, lease_owner_id=owner).filter(waiting_q(now))
    if not same.update(status=Item.Status.LEASED, lease_owner=user, lease_expires=expires):
        return False
    if owner not in (None, user.pk):
        LapsedLease.note(item_id, owner)
    return True


def user_of(client: Any) -> Any:
    """The user a Django test client is logged in as."""
    return get_user_model().objects.get(pk=client.session["_auth_user_id"])


def label_chosen(project: Project, item_id: int, user: Any, value: Any) -> Label:
    """``user``'s label ``value`` on item ``item_id`` of ``project``: the item, when it waits, is
    leased to ``user`` first (:func:`lease_chosen`: the label is primary when nobody labelled it,
    a vote on an overlapped item); otherwise ``user``'s lease on it lapsed (a late label: an extra
    opinion on a labelled item, refused where the app refuses it). Returns the stored label;
    raises what ``submit_label`` raises."""
    if not lease_chosen(project, item_id, user) and Item.objects.filter(
            pk=item_id, project=project).exclude(lease_owner=user).exists():
        LapsedLease.note(item_id, user.pk)
    return submit_label(project, item_id, user, value)
