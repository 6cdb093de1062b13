"""Labels people gave elsewhere (a Label Studio export's annotations, a Label Studio install
calling this app as its ML backend), stored as this app's labels.

Who gave a label is kept as its provenance through the label's annotator: one inactive
account per outside person, ``<source>+<their name>`` (e.g. ``labelstudio+alice@example.com``),
with no password, no membership and no rights; it can never log in. The dataset export, the
opinions export and the agreement figures then name them as they name any annotator.

Such a label is not drawn by this app's query rule (``drawn=False``: the importance-weighted
estimates leave it out, as an admin's relabel, docs/dataset.md). On an item the stream engine has
not decided yet it is stored with the item's ``n_opinions`` (:func:`store_opinions`); the engine
then logs the item's decision as labelled, never queues it (:mod:`..engine.stream`), and the label
pipeline teaches the label like any other (a new model version).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model

from annotator.labelling.models import Item, Label, Project
from annotator.labelling.webhooks import outbox
from learners.uploads import Record

#: the source of labels from Label Studio (the account name's prefix)
LABEL_STUDIO = "labelstudio"
#: characters Django's user names take (anything else becomes ``_``)
_NOT_IN_NAME = re.compile(r"[^\w.@+-]")


def outside_user(source: str, name: str) -> Any:
    """The inactive account standing for ``name`` of ``source`` (created on first use)."""
    username = _NOT_IN_NAME.sub("_", f"{source}+{name}")[:150]
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    if user is None:
        user = user_model(username=username, is_active=False)
        user.set_unusable_password()
        user.save()
    return user


def store_opinions(project: Project, records: Sequence[Record], ids: Sequence[tuple[int, int]],
                   source: str = LABEL_STUDIO) -> int:
    """Store the :attr:`~learners.uploads.Record.opinions` of the just inserted pending
    ``records`` (their items' ``(id, seq)`` in ``ids``, in order) as labels: per item one
    opinion per person (their first), the first one primary; returns how many. Each is told to
    the project's webhooks (``label.created``, :func:`.webhooks.outbox.labels_created`). Call
    inside the transaction that inserted the items."""
    users: dict[str, Any] = {}
    labels = []
    counts: dict[int, list[int]] = {}
    for record, (pk, _) in zip(records, ids, strict=True):
        seen: set[str] = set()
        for value, who in record.opinions:
            if who in seen:
                continue
            seen.add(who)
            if who not in users:
                users[who] = outside_user(source, who)
            labels.append(Label(item_id=pk, project=project, annotator=users[who], value=value,
                                primary=len(seen) == 1, drawn=False))
        if seen:
            counts.setdefault(len(seen), []).append(pk)
    Label.objects.bulk_create(labels, batch_size=500)
    for n, pks in counts.items():
        Item.objects.filter(pk__in=pks).update(n_opinions=n)
    outbox.labels_created(project.pk, labels)
    return len(labels)
