"""The replay engine: the papers' online active protocol on a labelled stream, run fast.

Protocol (paa.md section 0 and 6, soal.md section 6, dada.md section 7): for each run a random
permutation of the data; on every round a prediction from the current model and a query
decision ``Z_t ~ Bernoulli(q_t)``; mistakes counted on every round, queried or not; the model
learns only from queried labels (and ``observe`` sees the unqueried items).

Two loops give the same trajectory for the same seed:

* :func:`replay_per_item`: the plain contract loop (``decide`` with a real
  ``numpy.random.Generator``, then ``learn`` or ``observe``). Used for learners whose state
  changes between labels (``static_between_labels = False``: OASIS, KMC), with a budget, and
  with every label (``query="all"``) for learners without a compiled loop.
* :func:`replay_fast`: the uniforms of the whole run are drawn at once
  (``rng.random(n)`` yields the same numbers as n calls of ``rng.random()``), a block of
  upcoming items is scored by one ``decide_block`` call, and the loop jumps to the first
  item whose uniform falls below its query probability; ``skip`` accounts for the rounds
  in between. Nothing changes a static learner between labels, so the decisions are
  those of the per-item loop (tests check this for every registered learner).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..base import Learner
from ..budget import BudgetController, knob_name
from ..registry import get_spec, make, validate_params
from .metrics import stream_metrics
from .per_class import stream_figures

#: the metrics reported for every setting (binary-only ones are absent for multiclass tasks)
METRICS = ("accuracy", "f1", "precision", "recall", "sensitivity", "specificity", "sum", "cost",
           "macro_f1", "balanced_accuracy", "baseline_accuracy", "baseline_macro_f1",
           "baseline_balanced_accuracy",
           "query_ratio", "queries", "mistakes", "seconds", "items_per_second")


@dataclass
class Trace:
    """One replayed stream: per-round class codes, query probabilities, query outcomes.

    pred: int (n,) predicted class codes; query_prob: float (n,); queried: bool (n,);
    seconds: wall time of the loop; knob: final value of the budget knob (None without budget).
    """

    pred: np.ndarray
    query_prob: np.ndarray
    queried: np.ndarray
    seconds: float
    knob: float | None = None


def _rows(X: sp.csr_matrix, i: int, j: int) -> sp.csr_matrix:
    """Rows i..j-1 of X as CSR sharing X's buffers."""
    a, b = X.indptr[i], X.indptr[j]
    return sp.csr_matrix((X.data[a:b], X.indices[a:b], X.indptr[i:j + 1] - a),
                         shape=(j - i, X.shape[1]), copy=False)


class _BlockMaker:
    """Builds row blocks of one CSR matrix about ten times faster than ``scipy``'s constructor.

    A block is a ``csr_matrix`` whose attributes are set directly from slices of X (already
    valid CSR: the checks of the constructor would only repeat what holds for X). This relies
    on the attribute layout of ``csr_matrix`` (``data``, ``indices``, ``indptr``, ``_shape``,
    ``maxprint``); when a scipy version has another layout it falls back to the constructor.
    """

    _LAYOUT = frozenset({"data", "indices", "indptr", "_shape", "maxprint"})

    def __init__(self, X: sp.csr_matrix) -> None:
        self.X = X
        template = _rows(X, 0, min(1, X.shape[0]))
        self.direct = set(vars(template)) == self._LAYOUT
        self.maxprint = getattr(template, "maxprint", None)

    def __call__(self, i: int, j: int) -> sp.csr_matrix:
        X = self.X
        if not self.direct:
            return _rows(X, i, j)
        a, b = X.indptr[i], X.indptr[j]
        m = sp.csr_matrix.__new__(sp.csr_matrix)
        m.data, m.indices, m.indptr = X.data[a:b], X.indices[a:b], X.indptr[i:j + 1] - a
        m._shape, m.maxprint = (j - i, X.shape[1]), self.maxprint
        return m


def replay_per_item(learner: Learner, X: sp.csr_matrix, y: np.ndarray, rng: np.random.Generator,
                    budget: BudgetController | None = None) -> Trace:
    """The plain contract loop over the rows of X (already in stream order).

    y: int class codes (n,) indexing ``learner.classes``. ``budget`` (optional) sets the
    learner's query probabilities (budget mode, ``docs/budget.md``).
    """
    n = X.shape[0]
    if X.shape[1] != learner.n_features:
        raise ValueError(f"X has {X.shape[1]} features, the learner {learner.n_features}")
    pred = np.empty(n, dtype=np.int64)
    qp = np.empty(n)
    queried = np.zeros(n, dtype=bool)
    code_of = {c: k for k, c in enumerate(learner.classes)}
    # the rows as decide(), learn() and observe() would convert them (learners.base.sparse_row),
    # sliced from X's buffers: building a CSR matrix per item was half of the loop's time
    indices = X.indices.astype(np.int32, copy=False)
    data = X.data.astype(np.float64, copy=False)
    indptr = X.indptr
    t0 = time.perf_counter()
    for i in range(n):
        a, b = indptr[i], indptr[i + 1]
        idx, vals = indices[a:b], data[a:b]
        d = learner.decide_row(idx, vals, rng, budget)
        pred[i] = code_of[d.prediction]
        qp[i] = d.query_prob
        if d.queried:
            queried[i] = True
            learner.learn_row(idx, vals, int(y[i]))
        else:
            learner.observe_row(idx, vals)
    return Trace(pred, qp, queried, time.perf_counter() - t0, None if budget is None else budget.value)


def replay_fast(learner: Learner, X: sp.csr_matrix, y: np.ndarray, rng: np.random.Generator,
                max_block: int = 4096) -> Trace:
    """Block evaluation for ``static_between_labels`` learners; same trajectory as :func:`replay_per_item`.

    Each block starts at the next undecided item (``decide_block`` may depend on the round
    number, e.g. CSPAA's decaying delta). Its length adapts: twice the distance to the last
    query after a hit, doubled after a block without any query (capped by ``max_block``).
    """
    if not type(learner).static_between_labels:
        raise ValueError(f"{learner.name!r} changes between labels; use replay_per_item")
    n = X.shape[0]
    t0 = time.perf_counter()
    u = rng.random(n)
    pred = np.empty(n, dtype=np.int64)
    qp = np.empty(n)
    queried = np.zeros(n, dtype=bool)
    data, indices, indptr = X.data, X.indices, X.indptr
    block_of = _BlockMaker(X)
    i, block = 0, 8
    while i < n:
        j = min(n, i + block)
        bd = learner.decide_block(block_of(i, j))
        hits = u[i:j] < bd.query_probs
        h = int(hits.argmax())
        if not hits[h]:
            pred[i:j] = bd.codes
            qp[i:j] = bd.query_probs
            learner.skip(j - i)
            i = j
            block = min(2 * block, max_block)
            continue
        k = i + h
        pred[i:k + 1] = bd.codes[:h + 1]
        qp[i:k + 1] = bd.query_probs[:h + 1]
        queried[k] = True
        learner.skip(h + 1)  # h unqueried rounds and the queried one: decide() counts each
        a, b = indptr[k], indptr[k + 1]
        learner.learn_row(indices[a:b], data[a:b], int(y[k]))  # learn() without its conversions
        i = k + 1
        block = max(8, min(2 * (h + 1), max_block))
    return Trace(pred, qp, queried, time.perf_counter() - t0)


def replay_compiled(learner: Learner, X: sp.csr_matrix, y: np.ndarray, rng: np.random.Generator) -> Trace:
    """The learner's compiled loop (:meth:`Learner.compiled_loop`, same uniforms as :func:`replay_fast`).

    Raises ValueError for a learner without one.
    """
    loop = learner.compiled_loop()
    if loop is None:
        raise ValueError(f"{learner.name!r} has no compiled loop; use replay_fast")
    t0 = time.perf_counter()
    out = loop(X, y, rng.random(X.shape[0]))
    return Trace(out.codes, out.query_probs, out.queried, time.perf_counter() - t0)


def replay(learner: Learner, X: sp.csr_matrix, y: np.ndarray, rng: np.random.Generator,
           budget: BudgetController | None = None, fast: bool = True) -> Trace:
    """Replay with the fastest exact path: compiled loop, else block evaluation (static learner,
    no budget, not ``query="all"``), else per item. ``fast=False`` forces the per-item loop.

    With every label (``query="all"``) every block would stop at its first row, so the blocks'
    other rows would be scored for nothing (3-6 times the per-item loop's time for the
    multiclass learners on the raw text streams)."""
    if fast and budget is None and learner.compiled_loop() is not None:
        return replay_compiled(learner, X, y, rng)
    if fast and budget is None and type(learner).static_between_labels and learner.query != "all":
        return replay_fast(learner, X, y, rng)
    return replay_per_item(learner, X, y, rng, budget)


# --------------------------------------------------------------------- experiments
@dataclass(frozen=True)
class Task:
    """How the data's labels become learner classes.

    classes: the class values handed to the learners (binary tasks: ``[negative, positive]``).
    codes: int (n,) index of each item's class in ``classes``.
    binary: binary metrics (code 1 positive) or multiclass accuracy.
    """

    classes: tuple
    codes: np.ndarray
    binary: bool
    positive: Any = None


def make_task(y: np.ndarray, positive: str | None = None, binary: bool | None = None) -> Task:
    """Build the labelling task of a data set.

    positive: the positive class (matched as text or number); with more than two classes it
        turns the data into positive-vs-rest. Default for two classes: the larger value.
    binary: force a binary task (None: binary iff two classes or ``positive`` given).
    """
    values = sorted(set(y.tolist()), key=lambda v: (isinstance(v, str), v))
    if len(values) < 2:
        raise ValueError(f"the data have a single class {values!r}; need at least 2")
    if positive is not None:
        pos = _match_class(positive, values)
    elif len(values) == 2:
        pos = values[1]
    else:
        pos = None
    if binary is None:
        binary = pos is not None
    if not binary:
        index = {c: k for k, c in enumerate(values)}
        return Task(tuple(values), np.array([index[v] for v in y.tolist()], dtype=np.int64), False)
    if pos is None:
        raise ValueError(f"the data have {len(values)} classes; give --positive LABEL for a binary task")
    codes = np.array([1 if v == pos else 0 for v in y.tolist()], dtype=np.int64)
    others = [v for v in values if v != pos]
    negative = others[0] if len(others) == 1 else f"not-{pos}"
    return Task((negative, pos), codes, True, pos)


def _match_class(label: str, values: list) -> Any:
    for v in values:
        if str(v) == str(label):
            return v
    try:
        num = float(label)
    except ValueError:
        num = None
    for v in values:
        if num is not None and not isinstance(v, str) and float(v) == num:
            return v
    raise ValueError(f"class {label!r} is not in the data; classes: {', '.join(map(str, values))}")


@dataclass(frozen=True)
class Setting:
    """One evaluated configuration: algorithm, validated learner params, preprocessing, budget."""

    algo: str
    params: dict[str, Any]
    scale: str = "none"
    bias: bool = False
    budget: float | None = None

    def key(self) -> tuple:
        return (self.algo, tuple(sorted(self.params.items())), self.scale, self.bias, self.budget)


def run_seeds(seed: int, run: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The permutation and decision generators of run ``run`` (shared by every algorithm)."""
    return np.random.default_rng([seed, run, 0]), np.random.default_rng([seed, run, 1])


def permuted(X: sp.csr_matrix, task: Task, seed: int, run: int,
             limit: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """The stream of run ``run``: the rows of X and their class codes in the run's permutation,
    only the first ``limit`` of them when given (the first items of the same stream)."""
    perm_rng, _ = run_seeds(seed, run)
    perm = perm_rng.permutation(X.shape[0])[:limit]
    return X[perm], task.codes[perm]


def fresh_learner(setting: Setting, n_features: int, task: Task) -> Learner:
    """The untrained learner of ``setting`` for ``n_features`` inputs and the task's classes."""
    return make(setting.algo, n_features=n_features, classes=list(task.classes), **setting.params)


def replay_setting(setting: Setting, Xp: sp.csr_matrix, yp: np.ndarray, task: Task, seed: int, run: int,
                   fast: bool = True) -> tuple[Learner, Trace]:
    """Replay ``setting`` on the stream of run ``run`` with the run's decision uniforms; returns
    the learner as the stream left it and the trace of its decisions."""
    _, rng = run_seeds(seed, run)
    learner = fresh_learner(setting, Xp.shape[1], task)
    budget = None
    if setting.budget is not None:
        # the replay knows the stream's length: the plan fits it (docs/budget.md)
        budget = BudgetController.for_learner(setting.budget, learner, length=Xp.shape[0])
    return learner, replay(learner, Xp, yp, rng, budget=budget, fast=fast)


def replay_permuted(setting: Setting, Xp: sp.csr_matrix, yp: np.ndarray, task: Task, seed: int, run: int,
                    fast: bool = True) -> dict[str, float]:
    """Replay ``setting`` on the stream of run ``run`` (:func:`permuted`) with the run's decision
    uniforms and return the metrics of the stream (plus seconds). Several settings can share one
    permuted stream."""
    _, trace = replay_setting(setting, Xp, yp, task, seed, run, fast)
    return trace_metrics(yp, trace, task)


def trace_metrics(yp: np.ndarray, trace: Trace, task: Task) -> dict[str, float]:
    """The metrics of a replayed stream (codes ``yp``, its trace), plus seconds and items/s."""
    out = stream_metrics(yp, trace.pred, trace.queried, task.binary)
    out.update(stream_figures(yp, trace.pred, trace.query_prob, trace.queried, task.classes))
    out["seconds"] = trace.seconds
    out["items_per_second"] = len(yp) / trace.seconds if trace.seconds > 0 else float("inf")
    if trace.knob is not None:
        out["final_knob"] = trace.knob
    return out


def run_once(setting: Setting, X: sp.csr_matrix, task: Task, seed: int, run: int,
             fast: bool = True) -> dict[str, float]:
    """One run: permute, replay, and return the metrics of the stream (plus seconds)."""
    Xp, yp = permuted(X, task, seed, run)
    return replay_permuted(setting, Xp, yp, task, seed, run, fast)


def summarise(per_run: Sequence[dict[str, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Mean and (population) standard deviation over runs of every metric, each over the runs
    that report it (a refit check a run had too few labels for is absent from that run)."""
    keys = list(dict.fromkeys(k for r in per_run for k in r))
    mean = {k: float(np.mean([r[k] for r in per_run if k in r])) for k in keys}
    std = {k: float(np.std([r[k] for r in per_run if k in r])) for k in keys}
    return mean, std


@dataclass
class Result:
    """The outcome of one setting over all runs (JSON: :meth:`as_json`)."""

    setting: Setting
    mean: dict[str, float]
    std: dict[str, float]
    runs: int
    calibration: dict[str, Any] | None = None
    best: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        s = self.setting
        return {
            "algo": s.algo, "params": dict(s.params), "delta": s.params.get("delta"),
            "scale": s.scale, "bias": s.bias, "budget": s.budget, "runs": self.runs,
            "best": self.best, "calibration": self.calibration,
            "mean": self.mean, "std": self.std,
        }


Evaluate = Callable[[Sequence[Setting]], list[Result]]


def calibrate(setting: Setting, target: float, evaluate: Evaluate, tol: float = 0.005,
              max_evals: int = 40) -> Result:
    """Find the knob (delta, or p for ``query="random"``) whose mean query ratio is within ``tol`` of target.

    Bisection on log2 of the knob, refined by false position (Illinois rule) once the target
    is bracketed. The query ratio grows with the knob for every learner, but it may not reach
    every target (forced queries, or ``query="all"``): the result then holds the closest
    setting found and ``calibration["reached"]`` is False.
    """
    query = setting.params.get("query", "active")
    if query == "all":
        (res,) = evaluate([setting])
        res.calibration = {"target": target, "reached": abs(res.mean["query_ratio"] - target) <= tol,
                           "knob": None, "evaluations": 1}
        return res
    knob = knob_name(query)
    lo_bound, hi_bound = (-30.0, 30.0) if knob == "delta" else (-20.0, 0.0)
    seen: dict[float, Result] = {}

    def f(x: float) -> float:
        if x not in seen:
            params = dict(setting.params, **{knob: 2.0 ** x})
            (seen[x],) = evaluate([Setting(setting.algo, params, setting.scale, setting.bias)])
        return seen[x].mean["query_ratio"] - target

    x0 = min(max(math.log2(float(setting.params.get(knob, 1.0))), lo_bound), hi_bound)
    f0 = f(x0)
    lo = hi = None
    if f0 < 0:
        lo = (x0, f0)
    else:
        hi = (x0, f0)
    step = 4.0
    x = x0
    while abs(f(x)) > tol and (lo is None or hi is None) and len(seen) < max_evals:
        x = min(x + step, hi_bound) if f0 < 0 else max(x - step, lo_bound)
        fx = f(x)
        if fx < 0:
            lo = (x, fx)
        else:
            hi = (x, fx)
        if x in (lo_bound, hi_bound):
            break
    side = 0
    while lo is not None and hi is not None and len(seen) < max_evals:
        (xl, fl), (xh, fh) = lo, hi
        if abs(fl) <= tol or abs(fh) <= tol or xh - xl < 1e-9:
            break
        # false position on (log2 knob, ratio), Illinois halving of a stale end, bisection guard
        xm = xl - fl * (xh - xl) / (fh - fl) if fh != fl else 0.5 * (xl + xh)
        if not xl + 0.02 * (xh - xl) < xm < xh - 0.02 * (xh - xl):
            xm = 0.5 * (xl + xh)
        fm = f(xm)
        if fm < 0:
            lo = (xm, fm)
            if side == -1:
                hi = (xh, fh / 2)
            side = -1
        else:
            hi = (xm, fm)
            if side == 1:
                lo = (xl, fl / 2)
            side = 1
    best_x = min(seen, key=lambda k: abs(seen[k].mean["query_ratio"] - target))
    res = seen[best_x]
    err = abs(res.mean["query_ratio"] - target)
    res.calibration = {"target": target, "reached": err <= tol, "knob": knob, "value": 2.0 ** best_x,
                       "evaluations": len(seen)}
    return res


def settings_for(algo: str, common: dict[str, Any], grid: dict[str, list[str]],
                 scale: str, bias: bool, budget: float | None) -> list[Setting]:
    """The product of ``grid`` for one algorithm, keys it does not declare ignored.

    ``scale`` and ``bias`` may appear in ``grid`` (preprocessing), the rest are learner
    parameters validated by the registry (ValueError naming the bad one).
    """
    spec = get_spec(algo)
    own = {p.name for p in spec.all_params()}
    axes: list[tuple[str, list[str]]] = [(k, v) for k, v in grid.items() if k in own | {"scale", "bias"}]
    combos: list[dict[str, Any]] = [{}]
    for key, values in axes:
        combos = [dict(c, **{key: v}) for c in combos for v in values]
    out = []
    for combo in combos:
        sc = combo.pop("scale", scale)
        bi = combo.pop("bias", bias)
        if isinstance(bi, str):
            if bi.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(f"bias must be true or false, got {bi!r}")
            bi = bi.lower() in ("true", "1", "yes")
        params = {k: v for k, v in common.items() if k in own}
        params.update(combo)
        out.append(Setting(algo, validate_params(algo, params), sc, bool(bi), budget))
    return out
