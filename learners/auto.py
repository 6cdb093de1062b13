"""``auto``: several registered learners side by side, the one ahead on the labels decides.

The rule, its cost and its deviations: ``docs/algorithms/auto.md``. In short, ``auto`` holds
one instance of each candidate of its task (:data:`CANDIDATES`; all see the same items, the
same labels and the same query knob). For each item the **leader** (the candidate with the
largest importance-weighted count of correct predictions so far, ties to the earlier
candidate) gives the prediction, the score and the query probability ``q``. When a label ``y``
arrives, every candidate's prediction of its item (made before any of them learns it) is
scored with weight ``1/q``::

    correct_i += 1[prediction_i == y] / q        (q: the probability the item was drawn with)

so that ``correct_i / n_seen`` is an unbiased estimate of candidate i's online accuracy on every
item seen, queried or not (each item is labelled with probability q: E[1[queried] / q] = 1).
Then every candidate learns the label, and the leader is chosen again: the first candidate (the
measured best of its task) unless another one is ahead of it by more than ``Z`` standard errors
of the difference, then the one with the largest count among those ahead.

``static_between_labels`` holds because it holds for every candidate: the estimates move only
on labels, so the leader does not change between labels either. The candidates' own round
counters (``n_seen``) stay at 0: ``auto`` counts the rounds, none of its candidates reads them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .base import BlockDecisions, Learner
from .registry import delta_param, make, register

#: the candidates of each task, the first one the leader until the labels show another is better (ties
#: go to the earlier one). Chosen by measurement: docs/algorithms/auto.md, "Candidates".
CANDIDATES: dict[str, tuple[str, ...]] = {
    "binary": ("d-amd", "d-ada", "soal"),
    "multiclass": ("md-amd", "md-ada"),
}
#: smallest q a label's weight divides by (a q below it, which the active rules never produce
#: unless a budget's cap or thinning does, would let one label outweigh thousands)
MIN_WEIGHT_Q = 1e-6
#: a candidate replaces the first one only when its estimate is ahead by more than Z standard
#: errors of the difference (a one-sided test): a few labels with large weights would otherwise
#: hand the stream to whichever candidate guessed them (measured: docs/algorithms/auto.md)
Z = 2.0


class Auto(Learner):
    """Online choice among :data:`CANDIDATES` by importance-weighted accuracy (module docstring).

    State: each candidate's own state (arrays prefixed ``"<i>:"``, counters and extra meta in
    ``extra["candidates"]``), ``correct`` (float (m,): the weighted counts of correct predictions,
    one per candidate), ``spread`` (float (m,): the sums of squared weighted differences to the
    first candidate, the variance estimate of ``correct_i - correct_0``) and the leader's index.
    Score and query probability: the leader's. ``delta``, ``query`` and ``p`` are passed to every
    candidate, so a budget's knob moves them all together.

    Example (two classes: the binary candidates; before any label the first one leads):

    >>> import numpy as np, learners
    >>> lrn = learners.make("auto", n_features=2, classes=["ham", "spam"])
    >>> lrn.candidate_names, lrn.leader_name
    (('d-amd', 'd-ada', 'soal'), 'd-amd')
    >>> lrn.learn(np.array([1.0, 0.0]), "spam")
    >>> lrn.estimates().tolist()  # every candidate predicted "spam" (margin 0: +1), q = 1
    [1.0, 1.0, 1.0]
    """

    binary = False  # accepts k >= 2 classes; two-class instances set binary = True
    #: every candidate of :data:`CANDIDATES` is static between labels (checked by the tests)
    static_between_labels: ClassVar[bool] = True

    def __init__(self, n_features: int, classes: Sequence[Hashable], **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        self.binary = len(self.classes) == 2
        self.candidate_names = CANDIDATES["binary" if self.binary else "multiclass"]
        self.candidates: list[Learner] = [
            make(name, n_features=self.n_features, classes=list(self.classes), delta=self.delta,
                 query=self.query, p=self.p)
            for name in self.candidate_names]
        self.correct = np.zeros(len(self.candidates))
        self.spread = np.zeros(len(self.candidates))  # sum of (weight * (ok_i - ok_0))^2
        self.leader = 0

    @property
    def leader_name(self) -> str:
        """Registry name of the candidate deciding now."""
        return self.candidate_names[self.leader]

    def estimates(self) -> np.ndarray:
        """Each candidate's estimated online accuracy on the items seen: float (m,), ``correct /
        max(n_seen, n_labels)`` (the denominator counts labels learnt without a decision, e.g.
        in a rebuild); zeros before the first item."""
        n = max(self.n_seen, self.n_labels)
        return self.correct / n if n else np.zeros(len(self.candidates))

    def model_notes(self) -> list[str]:
        est = ", ".join(f"{n} {e:.3f}" for n, e in zip(self.candidate_names, self.estimates(), strict=True))
        return [f"auto: predictions by {self.leader_name}, the candidate with the highest "
                f"importance-weighted accuracy on the labels (estimates: {est}); docs/algorithms/auto.md"]

    # ------------------------------------------------------------------ decisions
    def _predict_and_query(self, idx, vals, predict_only) -> tuple[int, float, float]:
        return self.candidates[self.leader]._predict_and_query(idx, vals, predict_only)

    def _scores(self, idx, vals) -> float | np.ndarray:
        return self.candidates[self.leader]._scores(idx, vals)

    def decide_block(self, X: sp.csr_matrix) -> BlockDecisions:
        return self.candidates[self.leader].decide_block(X)

    def _update(self, idx, vals, code) -> None:
        # the probability the item was drawn with, as the leader's rule gives it now: the same
        # as at its decision when the label follows it (the replay); see docs/algorithms/auto.md
        q = self._decision_parts(idx, vals)[2]
        weight = 1.0 / max(q, MIN_WEIGHT_Q)
        ok = np.array([c._decision_parts(idx, vals, predict_only=True)[0] == code for c in self.candidates],
                      dtype=float)
        self.correct += weight * ok
        self.spread += (weight * (ok - ok[0])) ** 2
        for c in self.candidates:
            c.learn_row(idx, vals, code)
        self.leader = self._choose()

    def _choose(self) -> int:
        """The first candidate, unless others are ahead of it by more than :data:`Z` standard errors
        of the difference (``sqrt(spread)``): then the one with the largest count among those."""
        ahead = self.correct - self.correct[0] > Z * np.sqrt(self.spread)
        ahead[0] = True
        return int(np.flatnonzero(ahead)[np.argmax(self.correct[ahead])])  # ties: the earlier one

    def _observe(self, idx, vals) -> None:
        for c in self.candidates:
            c.observe_row(idx, vals)

    # ------------------------------------------------------------------ parameters
    def set_params(self, **params: Any) -> None:
        super().set_params(**params)
        for c in self.candidates:
            c.set_params(**params)

    # ----------------------------------------------------------------------- state
    def _state_meta(self) -> dict[str, Any]:
        return {"leader": self.leader,
                "candidates": [{"name": c.name, "n_seen": c.n_seen, "n_labels": c.n_labels,
                                "extra": c._state_meta()} for c in self.candidates]}

    def _state_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"correct": self.correct, "spread": self.spread}
        for i, c in enumerate(self.candidates):
            arrays.update({f"{i}:{k}": v for k, v in c._state_arrays().items()})
        return arrays

    def _load_arrays(self, arrays, extra) -> None:
        metas = extra["candidates"]
        if [m["name"] for m in metas] != list(self.candidate_names):
            raise ValueError(f"auto state has candidates {[m['name'] for m in metas]}, "
                             f"this version runs {list(self.candidate_names)}")
        self.correct = arrays["correct"].astype(np.float64)
        self.spread = arrays["spread"].astype(np.float64)
        self.leader = int(extra["leader"])
        for i, (c, meta) in enumerate(zip(self.candidates, metas, strict=True)):
            prefix = f"{i}:"
            c.n_seen, c.n_labels = int(meta["n_seen"]), int(meta["n_labels"])
            c._load_arrays({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)},
                           meta["extra"])


register("auto", Auto, tasks=("binary", "multiclass"),
         params=(delta_param(1.0, "query knob of every candidate (each its own rule's delta): "
                                  "larger delta queries more labels"),),
         summary="runs " + " / ".join(CANDIDATES["binary"]) + " (binary) or "
                 + " / ".join(CANDIDATES["multiclass"]) + " (multiclass) side by side; the one with "
                 "the highest importance-weighted accuracy on the labels predicts and sets q")
