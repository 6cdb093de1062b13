"""Honeypots (docs/teams.md "Honeypots"): known-gold items seeded into the
annotators' queues at the project's ``honeypot_rate``, without telling them which.

Whenever an annotator is about to lease a waiting item, with probability ``honeypot_rate`` they
get a honeypot instead: a decided AUTO item with a gold class that they have neither labelled nor
skipped nor been served before (AUTO items are never queued, so a honeypot never meets the
queue, overlap or the consensus). It is recorded as a :class:`~.models.Honeypot` and stays theirs
until they answer (their answer is a non-primary :class:`~.models.Label`, never applied to the
learner), skip or undo, exactly like a leased item: same panel, same URLs, same answers, the
label counted in their progress, the waiting count one fewer while they hold it, the same
answers to a repeat (a repeated label is 409 before the item's status is looked at) and to
anyone else's label (the one refusal of an item not offered, :func:`.actions.offered`), the
answer listed in "My last labels" as any label. The items
API shows annotators and reviewers no decision field at all (status, query flag, model version,
prediction: null for every item). Only the project's admins see which items were honeypots
(the annotator quality on the dashboard).
"""

from __future__ import annotations

import random
from typing import Any

from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from annotator.labelling.models import Honeypot, Item, Label, Project, Skip, leased_by_q

#: not seeded: honeypots must not be predictable from the outside
_random = random.SystemRandom()
#: the largest rate an admin may set: most items an annotator sees stay real work
MAX_RATE = 0.5


def open_honeypot_ids(project: Project, user: Any) -> list[int]:
    """Ids of the honeypot items served to ``user`` and not answered yet (one, or none, in
    practice: a honeypot stays theirs until they answer, skip or undo)."""
    return list(Honeypot.objects.filter(project=project, annotator=user, label__isnull=True)
                .values_list("item_id", flat=True))


def holds_honeypot(project: Project, user: Any) -> bool:
    """Whether ``user`` holds an open honeypot in ``project`` (the queue's waiting count then
    shows one item fewer, as after a real lease)."""
    return Honeypot.objects.filter(project=project, annotator=user, label__isnull=True).exists()


def candidates(project: Project, user: Any) -> Any:
    """Items that can be served to ``user`` as honeypots (see the module docstring): decided alone,
    with a gold class and their content kept, not labelled, skipped or served to ``user`` before."""
    return (Item.objects.filter(project=project, status=Item.Status.AUTO, gold__isnull=False,
                                vector__isnull=False)
            .exclude(Exists(Label.objects.filter(item=OuterRef("pk"), annotator=user)))
            .exclude(Exists(Skip.objects.filter(item=OuterRef("pk"), annotator=user)))
            .exclude(Exists(Honeypot.objects.filter(item=OuterRef("pk"), annotator=user))))


def served_floor(project: Project, user: Any) -> int:
    """The highest ``seq`` among the items ``user`` has been shown in ``project``: labelled (undone
    ones included), skipped, served as honeypots, or leased now (held by the queue page); -1 when
    none. Each is a bounded aggregate over that user's own rows."""
    now = timezone.now()
    highs = [Label.objects.filter(project=project, annotator=user).aggregate(m=Max("item__seq"))["m"],
             Skip.objects.filter(item__project=project, annotator=user).aggregate(m=Max("item__seq"))["m"],
             Honeypot.objects.filter(project=project, annotator=user).aggregate(m=Max("item__seq"))["m"],
             Item.objects.filter(project=project).filter(leased_by_q(user, now)).aggregate(m=Max("seq"))["m"]]
    return max((h for h in highs if h is not None), default=-1)


def maybe_serve(project: Project, user: Any, front: int) -> Item | None:
    """With probability ``project.honeypot_rate``, serve ``user`` a honeypot (recorded) and return
    it; None otherwise or when no candidate fits. ``front``: the ``seq`` of the waiting item it
    replaces. The candidate is the first one between the newest item ``user`` was shown
    (:func:`served_floor`) and ``front``: the items around it were decided at the same time, and
    its id and ``seq`` are above every item the annotator has seen and below the next real one, as
    a real item's would be, so neither its look nor its place in the order stands out (the first,
    not the last, so that the candidates after it stay for the next draws; for an annotator who was
    shown nothing yet, the last, so that their first item is not the project's oldest). When no candidate lies
    in that window (every item between was queried) no honeypot is served: the served rate is then
    below ``honeypot_rate`` rather than a honeypot out of order.
    """
    rate = float(project.honeypot_rate or 0.0)
    if rate <= 0.0 or _random.random() >= rate:
        return None
    pool = candidates(project, user).values_list("pk", flat=True)
    floor = served_floor(project, user)
    window = pool.filter(seq__gt=floor, seq__lt=front)
    # a newcomer has seen nothing: the candidate nearest the front, not the project's oldest item
    pk = (window.order_by("-seq") if floor < 0 else window.order_by("seq")).first()
    if pk is None:
        return None
    Honeypot.objects.create(project=project, item_id=pk, annotator=user)
    return Item.objects.get(pk=pk)


def honeypot_of(label: Label) -> Honeypot | None:
    """The honeypot ``label`` answered, if it is a honeypot answer."""
    return Honeypot.objects.filter(label=label).first()
