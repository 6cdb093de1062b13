"""An admin relabels any decided item, labelled by people or by the model (the item browser,
docs/dataset.md).

The relabel goes through the normal label pipeline: it becomes the item's primary label, a
label the learner had learnt is overturned by a rebuild (a new model version), and the caller's
``apply_labels`` (:func:`.send.labels_changed`) teaches it to the learner like any other. It is
recorded as the item's final decision (:func:`.consensus.resolve`, method
:data:`.consensus.RELABEL`, so a later consensus never overrides it) and its label is marked
``drawn=False``: the admin chose the item, the query rule did not draw it, so the
importance-weighted estimates leave it out (:mod:`.running_totals`, docs/dataset.md).
"""

from __future__ import annotations

from typing import Any

from annotator.labelling.models import Consensus, Item, Project
from annotator.labelling.teams import consensus


def relabel(project: Project, item_id: int, value: Any, by: Any) -> Consensus:
    """Make class ``value`` (a class or its string form) the final label of item ``item_id`` of
    ``project``, decided by the admin ``by``. Raises ``Item.DoesNotExist`` for an item not in the
    project, ValueError for a value that is not a class or an item not decided yet (the stream
    engine has not reached it: its decision would be logged after the label) and
    :class:`.consensus.ContentDroppedError` (a ValueError) for an item whose content the
    retention sweep dropped (docs/operations.md, "Retention"); nothing is stored then. The caller
    checks that ``by`` is a project admin and sends ``apply_labels``."""
    cls = project.parse_class(value)
    item = Item.objects.only("id", "project_id", "status").get(pk=item_id, project=project)
    if item.status == Item.Status.PENDING:
        raise ValueError(f"item {item.pk} is not decided yet; relabel it once the model has seen it")
    item.project = project
    return consensus.resolve(item, cls, by, method=consensus.RELABEL, drawn=False)
