"""Queue queries: how many items wait, who is active and how many items to keep decided ahead.

Read by the decision engine (:mod:`.stream`), the lease (:mod:`.annotation`) and the pages;
the states themselves are :class:`.models.ItemQuerySet`'s.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from .models import Item, Label, Membership, Project, pending_exists

#: A user who found the queue empty counts as active this long (the empty panel polls every 3 s).
WAITED_SECONDS = 30


def waiting_count(project: Project) -> int:
    """Number of items an annotator could lease right now (:meth:`.models.ItemQuerySet.waiting`)."""
    return Item.objects.filter(project=project).waiting().count()


def fresh_count(project: Project) -> int:
    """Waiting items nobody gave an opinion yet: what the look-ahead keeps full. An overlapped
    item waiting for its second or third opinion is work for the others only (:mod:`.overlap`)."""
    return Item.objects.filter(project=project, n_opinions=0).waiting().count()


def active_annotators(project: Project) -> int:
    """Distinct users holding a live lease, who labelled within the last lease period, or who
    asked for an item and found none within :data:`WAITED_SECONDS` (one ``UNION`` query: a
    handful of rows whatever the number of labels). Counting the ones left waiting lets the
    queue grow at once when a team starts together, instead of doubling poll after poll."""
    now = timezone.now()
    leasing = (Item.objects.filter(project=project).live_leases(now)
               .values_list("lease_owner_id", flat=True).order_by())
    since = now - timedelta(seconds=project.lease_seconds)
    recent = (Label.objects.filter(project=project, created__gte=since)
              .values_list("annotator_id", flat=True).order_by())
    waited_since = now - timedelta(seconds=WAITED_SECONDS)
    waited = (Membership.objects.filter(project=project, last_waited__gte=waited_since)
              .values_list("user_id", flat=True).order_by())
    return len(set(leasing.union(recent, waited)) - {None})


def look_ahead(project: Project) -> int:
    """Queued items to keep ready: the project's setting, or max(4, 2 x active annotators)."""
    return project.look_ahead or max(4, 2 * active_annotators(project))


def runs_low(project: Project) -> bool:
    """Fewer fresh items (:func:`fresh_count`) wait than the look-ahead and some are pending: a
    worker should decide more."""
    return fresh_count(project) < look_ahead(project) and has_pending(project)


def has_pending(project: Project) -> bool:
    """Some item of the project is not decided yet (:func:`.models.pending_exists`)."""
    return Project.objects.filter(pk=project.pk).filter(pending_exists(project.pk)).exists()


#: Why nothing waits for an annotator (the queue's empty states, in the order they are checked).
EMPTY, PAUSED, CATCHING_UP, CAUGHT_UP = "empty", "paused", "catching-up", "caught-up"


def why_idle(project: Project) -> str:
    """Why an annotator who asked for an item got none: :data:`EMPTY` (no item uploaded yet),
    :data:`PAUSED` (an admin paused the stream), :data:`CATCHING_UP` (items not decided yet or
    labels not applied yet: a worker has work that may queue items) or :data:`CAUGHT_UP`."""
    if not Item.objects.filter(project=project).exists():
        return EMPTY
    if project.stream_state == Project.StreamState.PAUSED:
        return PAUSED
    unapplied = Label.objects.filter(project=project, primary=True, applied_version__isnull=True)
    if unapplied.exists() or has_pending(project):
        return CATCHING_UP
    return CAUGHT_UP
