"""Majority vote over an array of opinions: the baseline Dawid-Skene (:mod:`learners.aggregation`)
is measured against, by its tests and by ``benchmarks/dawid_skene_speed.py`` (docs/teams.md).

The app does not use it: its consensus applies the same strict-majority rule per item, on class
values (:mod:`annotator.labelling.teams.consensus`). Opinions are ``(item, annotator, class)``
triples as in :mod:`learners.aggregation`.
"""

from __future__ import annotations

import numpy as np

from ..aggregation import check_opinions


def vote_counts(opinions: np.ndarray, n_items: int, n_classes: int) -> np.ndarray:
    """``counts[i, j]``: opinions saying item i is class j."""
    ops = check_opinions(opinions, n_items, np.iinfo(np.int64).max, n_classes)
    counts = np.zeros((n_items, n_classes))
    np.add.at(counts, (ops[:, 0], ops[:, 2]), 1.0)
    return counts


def majority_vote(opinions: np.ndarray, n_items: int, n_classes: int) -> np.ndarray:
    """Each item's class said by more than half of its opinions, -1 where none is (a tie, no
    strict majority, or no opinion)."""
    counts = vote_counts(opinions, n_items, n_classes)
    best = np.argmax(counts, axis=1)
    strict = counts[np.arange(n_items), best] * 2 > counts.sum(axis=1)
    return np.where(strict, best, -1)
