"""Overlap (docs/teams.md): some queried items are labelled by several people.

When the stream engine queries an item, it is drawn for overlap with probability
``project.overlap_fraction``; a drawn item needs ``project.overlap_k`` distinct annotators
(``Item.overlap_k``), the others one. The probability is logged on the item
(``Item.overlap_prob``). The draw comes from a generator seeded by the project's ``rng_seed`` and
the item's ``seq``, not from the decision RNG: turning overlap on or off never changes which
items the learner queries, and the draw of an item is reproducible.

An overlapped item stays in the queue until ``overlap_k`` annotators gave it a standing opinion:
each label returns it to the queue (one lease at a time, as any item), and nobody is offered an
item they labelled or skipped (:func:`.actions.lease_next`). The look-ahead counts only the
waiting items nobody labelled yet (:func:`.queue_counts.waiting_count`): an item that waits for a
second or third opinion is work for the others, not for the annotator who gave the first, so the
stream keeps deciding new items for them.
"""

from __future__ import annotations

import numpy as np

from annotator.labelling.models import Project

#: third word of the draw's seed, so that no other per-item generator shares its stream
OVERLAP_STREAM = 19


def draw(project: Project, seq: int) -> tuple[int, float | None]:
    """``(overlap_k of the item, probability logged)`` for the queried item ``seq`` of ``project``:
    ``(project.overlap_k, fraction)`` with probability ``fraction``, else ``(1, fraction)``;
    ``(1, None)`` when overlap is off (fraction 0: no draw)."""
    fraction = project.overlap_fraction
    if fraction <= 0:
        return 1, None
    rng = np.random.default_rng([project.rng_seed % 2**63, seq, OVERLAP_STREAM])
    return (project.overlap_k if rng.random() < fraction else 1), float(fraction)
