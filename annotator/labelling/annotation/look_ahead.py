"""The items an annotator's queue page holds at once, and a burst of labels stored in order.

The queue page (docs/architecture.md, "The instant queue") shows the next item from the browser
as soon as a key is pressed: it holds up to :data:`HELD_ITEMS` items leased to the annotator, and
sends the labels typed on them in the background, several per request, in the order they were
typed. Each held item is a lease like any other (it expires after ``project.lease_seconds``; a
label on an item whose lease expired is still stored when nobody labelled it, see
:func:`.actions.submit_label`), so an annotator holds at most :data:`HELD_ITEMS` leases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotator.labelling.models import Item, Label, Project

from .actions import DuplicateLabelError, NotOfferedError, held_ids, lease_next, submit_label

#: Items leased to one annotator at once by the queue page (the current one and the next ones).
#: Keys 60 ms apart outrun a 150 ms round trip by about 2.5 items; 6 leaves room for a slow answer.
HELD_ITEMS = 6
#: Labels one request may carry (a page sends what was typed since its last request).
MAX_BURST = 50


def held_items(project: Project, user: Any) -> list[Item]:
    """The items ``user`` holds in ``project`` (their open honeypots and live leases) by ``seq``:
    the order the page shows them; the first is what :func:`.actions.lease_next` returns."""
    order = held_ids(project, user, timezone.now())
    by_pk = Item.objects.in_bulk(order)
    return [by_pk[pk] for pk in order if pk in by_pk]


def lease_ahead(project: Project, user: Any, n: int = HELD_ITEMS) -> list[Item]:
    """Lease items to ``user`` until they hold ``n`` (fewer when fewer wait); the held items in
    the order of :func:`held_items`. Empty when nothing waits for them."""
    with transaction.atomic():
        if lease_next(project, user) is None:
            return []
        held = held_items(project, user)
        while len(held) < n:
            item = lease_next(project, user, another=True)
            if item is None or any(h.pk == item.pk for h in held):
                break
            held.append(item)
    return held


@dataclass
class Outcome:
    """What became of one label of a burst: stored (``label``), or refused with ``error`` and
    the HTTP status a single request would have had (404: no such item, 409: the item is not
    offered to this user or already labelled by them, 400: not a class)."""

    item_id: int
    value: Any
    label: Label | None = None
    error: str = ""
    status: int = 200


def submit_burst(project: Project, user: Any, labels: list[tuple[int, Any]]) -> list[Outcome]:
    """Store ``labels`` (``(item id, value)`` pairs, in the order they were typed) one after the
    other, each as :func:`.actions.submit_label` stores one (a refused one stores nothing and does
    not stop the others). A label equal to one ``user`` already gave on the item counts as stored
    (the page sends a label again when it cannot tell whether an earlier request arrived)."""
    outcomes = []
    for item_id, value in labels:
        outcome = Outcome(item_id, value)
        try:
            outcome.label = submit_label(project, item_id, user, value)
        except Item.DoesNotExist:
            outcome.error, outcome.status = "no such item in this project", 404
        except DuplicateLabelError as exc:
            same = Label.objects.filter(project=project, item_id=item_id, annotator=user,
                                        undone_at__isnull=True).order_by("-pk").first()
            if same is not None and str(same.value) == str(value):
                outcome.label = same
            else:
                outcome.error, outcome.status = str(exc), 409
        except NotOfferedError as exc:
            outcome.error, outcome.status = str(exc), 409
        except ValueError as exc:
            outcome.error, outcome.status = str(exc), 400
        outcomes.append(outcome)
    return outcomes
