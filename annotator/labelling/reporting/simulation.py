"""Replay inside the app: an oracle user answers every query with the item's gold label.

Runs the real pipeline in this process (no worker needed), exactly as the worker would:
decide up to the look-ahead, label the queued items in ``seq`` order, apply, repeat.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from annotator.labelling.annotation.actions import lease_next, submit_label
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Membership, Project

ORACLE = "oracle"


def simulate(project: Project, max_labels: int | None = None) -> int:
    """Label queued items with their gold class until the stream ends; returns labels given.

    Stops early at ``max_labels``. ValueError when a queued item has no gold label.
    """
    user: Any = get_user_model().objects.get_or_create(username=ORACLE)[0]
    Membership.objects.get_or_create(user=user, project=project)
    given = 0
    update_project(project.pk)
    while max_labels is None or given < max_labels:
        item = lease_next(project, user)
        if item is None:
            if not Item.objects.filter(project=project).pending().exists():
                break
            update_project(project.pk)
            continue
        if item.gold is None:
            raise ValueError(f"item {item.pk} (seq {item.seq}) was queried but has no gold label")
        submit_label(project, item.pk, user, item.gold)
        given += 1
        update_project(project.pk)
    return given
