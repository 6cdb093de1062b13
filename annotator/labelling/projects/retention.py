"""Retention: storage bounded by a time window rather than by the stream.

A project with ``retention_days`` = N drops the raw content (text, image bytes, vector pairs)
and the featurized vector of its items decided more than N days ago that :func:`droppable_q`
lets go: decided without a query ("auto": no person was asked) and named by no standing label.
Their decision log (prediction, score, q, the Bernoulli outcome, model version, time, gold)
stays, so the metrics, the curves and the aggregates (:mod:`.running_totals`) are unchanged.
Queried items and labelled auto items (an admin's relabel, a label given in Label Studio) keep
everything: a rebuild replays the labels on their vectors, and the label export shows their
content. Once an item's content is gone, a relabel of it is refused
(:class:`.consensus.ContentDroppedError`); docs/operations.md, "Retention".

Items are decided in ``seq`` order, so the decision times grow with ``seq``: the sweep walks
from ``StreamStats.retained_from`` in chunks of :data:`CHUNK` items, one transaction each under
the learner-state lock (the aggregates' writers take it), and stops at the first item decided
inside the window.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from annotator.labelling.engine.running_totals import load
from annotator.labelling.models import Item, Label, LearnerState, Project

#: items examined per transaction
CHUNK = 5000


def droppable_q() -> Q:
    """THE rule of which items may lose their content to the sweep: decided without a query
    (``auto``) and no standing label names them. A label is taught from its item's vector and
    replayed by every rebuild (:func:`.pipeline.replay_labels`), so an item any standing label
    names (primary, or an earlier one a later relabel may make primary again) keeps its vector.
    Read under the learner-state lock, which :func:`.consensus.resolve` (a relabel) also takes
    first: a relabel either finds the vector gone and is refused, or its label keeps it."""
    labelled = Label.objects.filter(item_id=OuterRef("pk"), undone_at__isnull=True)
    return Q(~Exists(labelled), status=Item.Status.AUTO)


def drop_old_content(project: Project) -> int:
    """Drop the content of ``project``'s items decided before the window that :func:`droppable_q`
    lets go; returns how many."""
    if project.retention_days is None:
        return 0
    cutoff = timezone.now() - timedelta(days=project.retention_days)
    dropped = 0
    while True:
        with transaction.atomic():
            state = (LearnerState.objects.select_for_update().filter(project=project)
                     .values("n_decided").first())
            if state is None:
                return dropped
            stats = load(project.pk)
            start = stats.retained_from
            end = min(start + CHUNK, state["n_decided"])
            # the chunk's items decided before the cutoff: a prefix of it (decision times grow with seq)
            old = Item.objects.filter(project=project, seq__gte=start, seq__lt=end, decided_at__lt=cutoff)
            last = old.aggregate(m=Max("seq"))["m"]
            if last is None:
                return dropped
            dropped += (old.filter(droppable_q(), seq__lte=last)
                        .update(text="", data=None, filename="", vector_pairs=None, vector=None))
            stats.retained_from = last + 1
            stats.save(update_fields=["retained_from"])
            if last + 1 < end:
                return dropped


def retained_projects() -> list[Project]:
    """The projects with a retention setting: the sweep runs :func:`drop_old_content` for each
    (one at a time, so that one project's failure stops no other's: :func:`.tasks.sweep`)."""
    return list(Project.objects.filter(retention_days__isnull=False).order_by("pk"))
