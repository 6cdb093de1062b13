"""The learner contract shared by every online active learner (docs/algorithms/common.md).

A learner lives in a stream. For each arriving item ``x`` the caller does::

    d = learner.decide(x, rng)        # prediction, score, query probability, Z ~ Bernoulli(q)
    if d.queried:
        learner.learn(x, y)           # the revealed label updates the model
    else:
        learner.observe(x)            # unlabelled item (no-op except semi-supervised learners)

Conventions every learner follows (so replays, the app and exported models agree):

* ``x`` is a dense 1-D float array of length ``n_features`` or a single CSR row
  (``scipy.sparse`` matrix/array of shape ``(1, n_features)``). :func:`sparse_row` turns
  either into ``(indices, values)`` so that first-order and diagonal learners cost
  O(nnz(x)) per round.
* **One uniform draw per decision.** :meth:`Learner.decide` draws exactly one
  ``u = rng.random()`` per item and queries iff ``u < q`` (so ``q = 1`` always queries and
  ``q = 0`` never does). A replay can therefore pre-draw the uniforms of a whole stream and
  reproduce the per-item loop exactly.
* Labels are the caller's class values. ``classes`` is declared up front. Binary learners
  map ``classes[0]`` to -1 and ``classes[1]`` to +1 (for cost-sensitive tasks ``classes[1]``
  is the rare, positive class). Multiclass learners use the position in ``classes``.
* ``delta`` is always the admin's query-sampling knob: larger delta, more queries.
* Every learner supports ``query="active"`` (its published rule), ``query="random"``
  (Bernoulli(``p``), the random-query baseline of every update rule) and ``query="all"``
  (fully supervised: every label is queried).
* State is plain data: :meth:`Learner.get_state` returns a dict of JSON-able values and
  numpy arrays, :func:`state_to_bytes` writes it with ``np.savez`` (no pickle) and
  :func:`state_from_bytes` reads it back with ``allow_pickle=False``.
"""

from __future__ import annotations

import io
import json
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .budget import BudgetController, knob_name

# the query-probability rules are plain arithmetic in kernels.py, which compiled loops use too
from .kernels import margin_query_probability, mode_probability, statistic_query_probability

__all__ = [
    "QUERY_MODES", "TASKS", "BlockDecisions", "CompiledLoop", "Decision", "Learner", "StreamDecisions",
    "as_csr", "dense_row", "iter_rows", "margin_query_probability", "mode_probability", "sparse_row",
    "state_from_bytes", "state_to_bytes", "statistic_query_probability",
]

QUERY_MODES = ("active", "random", "all")
TASKS = ("binary", "multiclass", "cost-sensitive")


@dataclass(frozen=True)
class Decision:
    """What a learner decided about one item.

    prediction: a class value from ``classes``.
    score: the scalar confidence the query rule used: the signed margin ``w.x`` for binary
        linear learners, the top-1 minus top-2 score gap for multiclass ones; each learner's
        docstring says what its score is.
    query_prob: the probability q in [0, 1] with which the item was queried.
    queried: the outcome of the Bernoulli draw (``u < q``).
    """

    prediction: Hashable
    score: float
    query_prob: float
    queried: bool


@dataclass(frozen=True)
class StreamDecisions:
    """What a compiled loop (:meth:`Learner.compiled_loop`) decided on a stream of n items.

    codes: int (n,) predicted class codes; query_probs: float (n,); queried: bool (n,).
    """

    codes: np.ndarray
    query_probs: np.ndarray
    queried: np.ndarray


#: ``loop(X, codes, u) -> StreamDecisions``: see :meth:`Learner.compiled_loop`.
CompiledLoop = Callable[[sp.csr_matrix, np.ndarray, np.ndarray], StreamDecisions]


@dataclass(frozen=True)
class BlockDecisions:
    """Vectorised decisions for a block of items, computed as if none of them were queried.

    codes: int array (n,), index into ``classes`` of each prediction.
    scores: float array (n,), as :attr:`Decision.score`.
    query_probs: float array (n,), in [0, 1].
    """

    codes: np.ndarray
    scores: np.ndarray
    query_probs: np.ndarray


def sparse_row(x: Any, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(indices, values)`` of the non-zero entries of one item.

    x: dense 1-D array-like of length ``n_features``, or a sparse matrix/array with one row.
    Returns int32 indices and float64 values (copies only when a conversion is needed).
    Raises ValueError when the shape does not match ``n_features``.
    """
    if sp.issparse(x):
        if x.shape != (1, n_features):
            raise ValueError(f"x must have shape (1, {n_features}), got {x.shape}")
        row = x.tocsr() if x.format != "csr" else x
        return row.indices.astype(np.int32, copy=False), row.data.astype(np.float64, copy=False)
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.shape != (n_features,):
        raise ValueError(f"x must have {n_features} features, got shape {arr.shape}")
    idx = np.flatnonzero(arr).astype(np.int32)
    return idx, arr[idx]


def dense_row(x: Any, n_features: int) -> np.ndarray:
    """Return one item as a dense float64 vector of length ``n_features``."""
    idx, vals = sparse_row(x, n_features)
    out = np.zeros(n_features)
    out[idx] = vals
    return out


def as_csr(X: Any, n_features: int) -> sp.csr_matrix:
    """Return a batch of items (2-D dense, sparse, or one 1-D row) as CSR float64 (n, n_features)."""
    if sp.issparse(X):
        M = sp.csr_matrix(X, dtype=np.float64)
    else:
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim == 1:
            arr = arr[None, :]
        M = sp.csr_matrix(arr)
    if M.shape[1] != n_features:
        raise ValueError(f"X must have {n_features} features, got {M.shape[1]}")
    return M


def iter_rows(M: sp.csr_matrix) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(indices, values)`` of each row of a CSR matrix, in order."""
    for a, b in zip(M.indptr[:-1], M.indptr[1:], strict=True):
        yield M.indices[a:b], M.data[a:b]


def _validate_classes(classes: Sequence[Hashable], n_min: int, n_max: int | None) -> tuple:
    cls = tuple(classes)
    if len(cls) < n_min or (n_max is not None and len(cls) > n_max):
        want = f"exactly {n_min}" if n_max == n_min else f"at least {n_min}"
        raise ValueError(f"classes must list {want} distinct values, got {len(cls)}: {cls!r}")
    if len(set(cls)) != len(cls):
        raise ValueError(f"classes must be distinct, got {cls!r}")
    for c in cls:
        if not isinstance(c, (str, int)) or isinstance(c, bool):
            raise ValueError(f"class values must be str or int (JSON-able), got {c!r}")
    return cls


class Learner(ABC):
    """Base class of every online active learner.

    Subclasses implement :meth:`_scores`, :meth:`_predict_and_query`, :meth:`_update` and the
    ``_state_arrays`` / ``_load_arrays`` pair; optionally :meth:`_observe`, the vectorised
    :meth:`decide_block` and ``_compiled_stream`` (see :meth:`compiled_loop`). They must not
    override :meth:`decide`, :meth:`learn` or :meth:`learn_row`.

    Constructor parameters common to all learners (validated by the registry before they
    arrive here): ``n_features`` (int >= 1), ``classes`` (class values), ``delta`` (> 0, the
    query knob), ``query`` (one of :data:`QUERY_MODES`), ``p`` (random-query probability).
    """

    #: set by :func:`learners.registry.register`; the registry name this instance was built as.
    name: str = ""
    #: True for learners that take labels in {-1, +1} internally (two classes); the registry
    #: reads the class value, a learner taking k >= 2 classes may set it per instance.
    binary: bool = True
    #: True when a round without a label changes nothing but the round counter ``n_seen``
    #: (no observe effect): :meth:`decide_block` followed by :meth:`skip` then reproduces
    #: the per-item decisions of a run of unqueried items, which the replay fast path uses.
    static_between_labels: ClassVar[bool] = True

    def __init__(
        self,
        n_features: int,
        classes: Sequence[Hashable],
        *,
        delta: float = 1.0,
        query: str = "active",
        p: float = 0.1,
    ) -> None:
        if int(n_features) < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}")
        self.n_features = int(n_features)
        self.classes = _validate_classes(classes, 2, 2 if self.binary else None)
        self._class_index = {c: i for i, c in enumerate(self.classes)}
        self.delta = float(delta)
        self.query = query
        self.p = float(p)
        self.n_seen = 0  # decisions made (items seen through decide)
        self.n_labels = 0  # labels applied through learn

    # ------------------------------------------------------------------ labels
    def class_code(self, y: Hashable) -> int:
        """Index of class value ``y`` in ``classes``; ValueError for an unknown label."""
        try:
            return self._class_index[y]
        except (KeyError, TypeError):
            raise ValueError(f"label {y!r} is not one of the classes {self.classes!r}") from None

    def sign_of(self, y: Hashable) -> int:
        """Binary learners: -1 for ``classes[0]``, +1 for ``classes[1]``."""
        return 1 if self.class_code(y) == 1 else -1

    # ------------------------------------------------------------ per-item API
    def score(self, x: Any) -> float | np.ndarray:
        """Margin ``w.x`` (binary, float) or class scores (multiclass, array (k,)) for one item."""
        idx, vals = sparse_row(x, self.n_features)
        s = self._scores(idx, vals)
        return float(s) if self.binary else np.asarray(s, dtype=float)

    def query_probability(self, x: Any) -> float:
        """Probability in [0, 1] that :meth:`decide` would query this item now."""
        idx, vals = sparse_row(x, self.n_features)
        _, _, q = self._decision_parts(idx, vals)
        return q

    def decide(self, x: Any, rng: np.random.Generator, budget: BudgetController | None = None) -> Decision:
        """Predict, compute q and draw exactly one uniform ``u``; queried iff ``u < q``.

        Advances ``n_seen`` by one. Does not learn: call :meth:`learn` with the revealed
        label when ``queried`` (or :meth:`observe` when not).

        budget: budget mode (``docs/budget.md``): the controller sets the knob before the
            decision, turns the rule's q into the probability drawn with (the one reported)
            and records the outcome. None (default): the published rule alone.
        """
        idx, vals = sparse_row(x, self.n_features)
        return self.decide_row(idx, vals, rng, budget)

    def decide_row(self, indices: np.ndarray, values: np.ndarray, rng: np.random.Generator,
                   budget: BudgetController | None = None) -> Decision:
        """:meth:`decide` for an item already given as one sparse row (int32 ``indices`` in
        ``[0, n_features)``, float64 ``values``, as :func:`sparse_row` returns them; not checked
        again: the fast path of callers that decode rows themselves, e.g. the app's stream)."""
        idx, vals = indices, values
        if budget is not None:
            budget.apply(self)
        code, stat, q = self._decision_parts(idx, vals)
        q_rule = q
        if budget is not None:
            q = budget.adjust(q_rule)  # DEVIATION (budget mode): docs/budget.md
        u = rng.random()
        self.n_seen += 1
        queried = bool(u < q)
        if budget is not None:
            budget.record(q_rule, queried)
        return Decision(self.classes[code], float(stat), float(q), queried)

    #: True when :meth:`start_from` can set the model's initial weights (the linear learners)
    accepts_prior: ClassVar[bool] = False

    def start_from(self, prior: np.ndarray) -> None:
        """Start from ``prior`` weights instead of zeros (docs/algorithms/cold_start.md).

        prior: float (n_features,) margin weights for a binary learner, (k, n_features) class
        weights for a multiclass one. Call it on an untrained learner, before its first
        decision. Raises ValueError for a learner without weights to start from
        (``accepts_prior`` False) or a prior of another shape.
        """
        if not self.accepts_prior:
            raise ValueError(f"{self.name or type(self).__name__} cannot start from prior weights")
        shape = (self.n_features,) if self.binary else (len(self.classes), self.n_features)
        prior = np.asarray(prior, dtype=np.float64)
        if prior.shape != shape:
            raise ValueError(f"the prior must have shape {shape}, got {prior.shape}")
        self._start_from(prior.copy())

    def _start_from(self, prior: np.ndarray) -> None:
        """Hook of :meth:`start_from` (a validated copy)."""
        raise NotImplementedError

    def model_notes(self) -> list[str]:
        """Sentences for an exported model's card on how the learner sees its input (default none)."""
        return []

    def set_budget_knob(self, knob: str, value: float) -> None:
        """Budget mode sets its knob before each decision (default: ``set_params(knob=value)``)."""
        self.set_params(**{knob: value})

    def budget_knob(self) -> str:
        """The parameter budget mode adapts (``docs/budget.md``): ``delta`` for the active
        rule, ``p`` (the drawn probability itself) for random or supervised querying."""
        return knob_name(self.query)

    def learn(self, x: Any, y: Hashable) -> None:
        """Apply one revealed label ``y`` (a class value) for item ``x``."""
        code = self.class_code(y)
        idx, vals = sparse_row(x, self.n_features)
        self.learn_row(idx, vals, code)

    def learn_row(self, indices: np.ndarray, values: np.ndarray, code: int) -> None:
        """:meth:`learn` for an item already given as one sparse row and a label as a class code.

        indices: int array (nnz,) of feature indices in ``[0, n_features)``; values: float64
        (nnz,), as :func:`sparse_row` returns them (not checked again: this is the replay's
        fast path). code: index of the label in ``classes`` (ValueError otherwise).
        """
        if not 0 <= code < len(self.classes):
            raise ValueError(f"class code {code!r} is not in [0, {len(self.classes)})")
        self._update(indices, values, int(code))
        self.n_labels += 1

    def observe(self, x: Any) -> None:
        """Tell the learner about an item whose label was not queried (default: no-op)."""
        idx, vals = sparse_row(x, self.n_features)
        self._observe(idx, vals)

    def observe_row(self, indices: np.ndarray, values: np.ndarray) -> None:
        """:meth:`observe` for an item already given as one sparse row (see :meth:`decide_row`)."""
        self._observe(indices, values)

    # ----------------------------------------------------------------- batches
    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of a batch: margins (n,) for binary learners, class scores (n, k) otherwise."""
        M = as_csr(X, self.n_features)
        rows = [self._scores(idx, vals) for idx, vals in iter_rows(M)]
        if self.binary:
            return np.asarray(rows, dtype=float).reshape(-1)
        return np.asarray(rows, dtype=float).reshape(M.shape[0], len(self.classes))

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class values of a batch (object array of length n)."""
        M = as_csr(X, self.n_features)
        codes = [self._decision_parts(idx, vals, predict_only=True)[0] for idx, vals in iter_rows(M)]
        out = np.empty(len(codes), dtype=object)
        out[:] = [self.classes[c] for c in codes]
        return out

    def decide_block(self, X: sp.csr_matrix) -> BlockDecisions:
        """Decisions for the rows of ``X`` as if none of them were queried (no draws, no state change).

        The default evaluates the rows one by one; learners with ``static_between_labels``
        override it with a vectorised version giving the same numbers.
        """
        codes, scores, qs = [], [], []
        for idx, vals in iter_rows(X):
            c, s, q = self._decision_parts(idx, vals)
            codes.append(c)
            scores.append(s)
            qs.append(q)
        return BlockDecisions(np.asarray(codes, dtype=np.int64), np.asarray(scores, dtype=float),
                              np.asarray(qs, dtype=float))

    def skip(self, n: int) -> None:
        """Account for ``n`` unqueried decisions made through :meth:`decide_block`."""
        self.n_seen += int(n)

    # ----------------------------------------------------------- compiled loop
    def compiled_loop(self) -> CompiledLoop | None:
        """The learner's compiled stream loop, or None when it has none (the default).

        ``loop(X, codes, u)`` runs :meth:`decide` then :meth:`learn` (when queried) on every
        row of ``X`` (CSR (n, n_features)) in one compiled function, row i being queried iff
        ``u[i] < q_i`` (u: the pre-drawn uniforms (n,), as ``rng.random(n)``) and learning
        the class code ``codes[i]`` (int (n,)). It updates the model, ``n_seen`` and
        ``n_labels`` in place, exactly as the per-item loop with the same uniforms, and
        returns the :class:`StreamDecisions`. Learners provide one by implementing
        ``_compiled_stream`` with the same update code as ``_update`` (see
        :mod:`learners.kernels`).
        """
        if type(self)._compiled_stream is Learner._compiled_stream:
            return None
        return self._run_compiled

    def _run_compiled(self, X: sp.csr_matrix, codes: np.ndarray, u: np.ndarray) -> StreamDecisions:
        n = X.shape[0]
        if X.shape[1] != self.n_features or len(codes) != n or len(u) != n:
            raise ValueError(f"X {X.shape}, codes ({len(codes)},) and u ({len(u)},) do not match "
                             f"n_features = {self.n_features}")
        out = self._compiled_stream(X, np.ascontiguousarray(codes, dtype=np.int64),
                                    np.ascontiguousarray(u, dtype=np.float64))
        self.n_seen += n
        self.n_labels += int(out.queried.sum())
        return out

    def _compiled_stream(self, X: sp.csr_matrix, codes: np.ndarray, u: np.ndarray) -> StreamDecisions:
        """Hook of :meth:`compiled_loop`: run the stream, update the model (not the counters)."""
        raise NotImplementedError

    # ---------------------------------------------------------- query control
    def _decision_parts(self, idx: np.ndarray, vals: np.ndarray,
                        predict_only: bool = False) -> tuple[int, float, float]:
        """``(class code, score statistic, query probability)`` for one item, from the current state."""
        code, stat, q_active = self._predict_and_query(idx, vals, predict_only)
        return code, stat, mode_probability(QUERY_MODES.index(self.query), self.p, q_active)

    @abstractmethod
    def _predict_and_query(self, idx: np.ndarray, vals: np.ndarray,
                           predict_only: bool) -> tuple[int, float, float]:
        """Return ``(class code, score statistic, active-rule query probability)``.

        ``predict_only`` may let a learner skip query work (the probability is then ignored).
        """

    @abstractmethod
    def _scores(self, idx: np.ndarray, vals: np.ndarray) -> float | np.ndarray:
        """Margin (binary) or class scores (multiclass) of one sparse item."""

    @abstractmethod
    def _update(self, idx: np.ndarray, vals: np.ndarray, code: int) -> None:
        """Apply a revealed label (class code) to the model."""

    def _observe(self, idx: np.ndarray, vals: np.ndarray) -> None:  # noqa: B027 - optional hook
        """Unlabelled item hook; supervised learners ignore it."""

    # ------------------------------------------------------------------ state
    def get_params(self) -> dict[str, Any]:
        """Constructor parameters as a JSON-able dict (enough to rebuild an empty learner)."""
        return {"delta": self.delta, "query": self.query, "p": self.p, **self._own_params()}

    def _own_params(self) -> dict[str, Any]:
        """The learner's own parameters (those its registry entry declares besides delta), read
        from its attributes; the registry's fixed constructor arguments are not included."""
        return {}

    def set_params(self, **params: Any) -> None:
        """Change parameters that may change mid-stream (``delta``, ``p``, ``query``).

        Values must already be validated (see :func:`learners.registry.validate_params`).
        """
        for key, value in params.items():
            if key == "delta":
                self.delta = float(value)
            elif key == "p":
                self.p = float(value)
            elif key == "query":
                self.query = value
            else:
                raise ValueError(f"parameter {key!r} cannot change mid-stream; rebuild the learner")

    def get_state(self) -> dict[str, Any]:
        """The whole learner as ``{"meta": JSON-able dict, "arrays": {name: ndarray}}``."""
        meta = {
            "name": self.name,
            "n_features": self.n_features,
            "classes": list(self.classes),
            "params": self.get_params(),
            "n_seen": self.n_seen,
            "n_labels": self.n_labels,
            "extra": self._state_meta(),
        }
        return {"meta": meta, "arrays": dict(self._state_arrays())}

    def _state_meta(self) -> dict[str, Any]:
        """Extra JSON-able state (counters, RNG state); default none."""
        return {}

    @abstractmethod
    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The model's numpy arrays (returned by reference is fine: callers copy when saving)."""

    @abstractmethod
    def _load_arrays(self, arrays: dict[str, np.ndarray], extra: dict[str, Any]) -> None:
        """Restore the arrays (and ``extra`` meta) written by :meth:`_state_arrays`."""

    def set_state(self, state: dict[str, Any]) -> None:
        """Load the counters and arrays of a :meth:`get_state` output into this learner.

        The learner must have been built with the same name, classes, width and parameters
        (:func:`learners.registry.from_state` does that); the arrays are copied.
        """
        meta = state["meta"]
        self.n_seen = int(meta["n_seen"])
        self.n_labels = int(meta["n_labels"])
        self._load_arrays({k: np.array(v, copy=True) for k, v in state["arrays"].items()},
                          meta.get("extra", {}))


_META_KEY = "__meta__"


def state_to_bytes(state: dict[str, Any]) -> bytes:
    """Serialise a learner state with ``np.savez`` (JSON meta stored as a uint8 array, no pickle)."""
    arrays = state["arrays"]
    if _META_KEY in arrays:
        raise ValueError(f"array name {_META_KEY!r} is reserved")
    for key, arr in arrays.items():
        if np.asarray(arr).dtype == object:
            raise ValueError(f"state array {key!r} has dtype object; only numeric arrays are allowed")
    meta = np.frombuffer(json.dumps(state["meta"], allow_nan=False).encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    entries: dict[str, Any] = {_META_KEY: meta, **{k: np.asarray(v) for k, v in arrays.items()}}
    np.savez(buf, **entries)
    return buf.getvalue()


def state_from_bytes(data: bytes) -> dict[str, Any]:
    """Inverse of :func:`state_to_bytes`; refuses pickled content (``allow_pickle=False``)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            if _META_KEY not in npz.files:
                raise ValueError("no metadata record")
            meta = json.loads(npz[_META_KEY].tobytes().decode("utf-8"))
            arrays = {k: npz[k] for k in npz.files if k != _META_KEY}
    except (OSError, ValueError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ValueError(f"not a learner state file: {exc}") from None
    return {"meta": meta, "arrays": arrays}
