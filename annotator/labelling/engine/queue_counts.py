"""Queue queries: how many items wait, who is active and how many items to keep decided ahead.

Read by the decision engine (:mod:`.stream`), the lease (:mod:`.actions`) and the pages;
the states themselves are :class:`.models.ItemQuerySet`'s.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, F, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotator.labelling.models import (
    Consensus,
    Item,
    Label,
    LearnerState,
    Membership,
    Project,
    StreamStats,
    pending_exists,
)

#: A user who found the queue empty counts as active this long (the empty panel polls every 3 s).
WAITED_SECONDS = 30


#: Waiting items counted one by one through the queue index; beyond this the counters say how many.
COUNT_CAP = 20


def waiting_count(project: Project) -> int:
    """Number of items an annotator could lease right now (:meth:`.models.ItemQuerySet.waiting`).

    At most :data:`COUNT_CAP` + 1 rows are read, whatever the queue's length: a short
    queue is counted through its partial index (``item_queue``); a longer one is
    :func:`awaiting_label` less the live leases, from counters kept in the transactions that
    change them (the two agree on every queue, see tests/engine/test_app_flat.py).
    """
    # ordered by seq: the planner walks the queue index and stops at the cap (unordered, with stale
    # statistics, it chose a bitmap scan that reads the whole index first)
    counted = Item.objects.filter(project=project).waiting().order_by("seq")[:COUNT_CAP + 1].count()
    if counted <= COUNT_CAP:
        return counted
    return awaiting_label(project, less_live_leases=True)


def awaiting_label(project: Project, less_live_leases: bool = False) -> int:
    """Queried items without a label (queued or leased; ``less_live_leases``: less the items under
    a live lease, i.e. the waiting ones), in one statement (one snapshot): the queried items
    (``LearnerState.n_queried``, written with the decisions) less the primary labels of queried
    items (each labels one, which it turns ``labelled``; an undo makes it ``leased`` again and not
    primary): the applied ones counted in :class:`.models.StreamStats` (kept with
    ``applied_version``, :mod:`.running_totals`: ``labels``, the ones the query rule drew, plus
    ``undrawn_queried``, the others on queried items, e.g. an admin's relabel of a queued item,
    which takes it out of the queue) plus the ones not applied yet (a few, by their index, counted
    as those two will count them), less the overlapped items whose opinions are all in without a
    consensus class yet (labelled with no primary label: a :class:`.models.Consensus` row without
    a value, :mod:`.consensus`). A label not drawn on an item that was not queried (a relabel of
    an ``auto`` item, a label from Label Studio) is counted in neither."""
    def one(query: Any) -> Coalesce:
        return Coalesce(Subquery(query.order_by().values("n")[:1]), 0)

    def counted(query: Any) -> Any:
        return query.values("project").annotate(n=Count("pk"))

    parts = {
        "q": one(LearnerState.objects.filter(project=project).annotate(n=F("n_queried"))),
        "a": one(StreamStats.objects.filter(project=project).annotate(n=F("labels") + F("undrawn_queried"))),
        "u": one(counted(Label.objects.filter(Q(drawn=True) | Q(item__queried=True), project=project,
                                              primary=True, applied_version__isnull=True))),
        "c": one(counted(Consensus.objects.filter(project=project, value__isnull=True))),
        "l": (one(counted(Item.objects.filter(project=project).live_leases())) if less_live_leases
              else Value(0)),
    }
    row = Project.objects.filter(pk=project.pk).annotate(**parts).values_list(*parts).first()
    return 0 if row is None else row[0] - row[1] - row[2] - row[3] - row[4]


def fresh_count(project: Project) -> int:
    """Waiting items nobody gave an opinion yet: what the look-ahead keeps full. An overlapped
    item waiting for its second or third opinion is work for the others only (:mod:`.overlap`).
    Without overlap this is :func:`waiting_count` (bounded cost); with it, the waiting items that
    have opinions are counted through the queue index (overlap projects have short queues).
    Items left half-overlapped when an admin turns overlap off count as fresh."""
    waiting = waiting_count(project)
    if project.overlap_fraction <= 0 or not waiting:
        return waiting
    return waiting - Item.objects.filter(project=project, n_opinions__gt=0).waiting().count()


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
    :data:`PAUSED` (an admin paused the stream), :data:`CATCHING_UP` (items not decided yet,
    labels not applied yet or opinions waiting for their consensus: a worker has work that may
    queue items) or :data:`CAUGHT_UP`."""
    if not Item.objects.filter(project=project).exists():
        return EMPTY
    if project.stream_state == Project.StreamState.PAUSED:
        return PAUSED
    unapplied = Label.objects.filter(project=project, primary=True, applied_version__isnull=True)
    due = Consensus.objects.filter(project=project, due=True)
    if unapplied.exists() or due.exists() or has_pending(project):
        return CATCHING_UP
    return CAUGHT_UP
