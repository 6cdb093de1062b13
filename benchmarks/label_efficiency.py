"""Labels that pay off on raw streams: write ``benchmarks/LABEL_EFFICIENCY.md``.

::

    python benchmarks/label_efficiency.py              # the report (under 30 min on 2 idle cores)
    python benchmarks/label_efficiency.py --full       # every featurizer, slow learners' prefixes
    python benchmarks/label_efficiency.py --plan-only  # featurize, probe, print the plan's CPU time
    python benchmarks/label_efficiency.py --quick      # a small subset for development

The default run covers each stream's default featurizer (a new project's,
``learners.features.DEFAULT``) with every registered learner whose replays of the whole stream fit
``--cell-minutes`` (the default learner ``auto`` among them), and river; the slower ones (the
OASIS family, KMC) are listed as not run with their probed cost. ``--full`` adds every other
featurizer of the kind and replays the slow learners on prefixes (below). After the tables, the
default learner on short streams (the first 200, 500 and 1,800 items: achieved query ratio
against the budget, online accuracy; :func:`short_stream_lines`, ``benchmarks/budget_held.py``'s
section on this run's matrices).

The report ends with the exported model (a batch refit, docs/algorithms/refit.md) on a held-out
split beside a batch logistic regression on every label, and the cold start from class names
(docs/algorithms/cold_start.md), from ``benchmarks/refit.py`` and ``benchmarks/cold_start.py``
(:func:`append_final_models`; ``--no-final-models`` skips them).

The streams (:mod:`benchmarks.raw_streams`: SMS spam, AG News, the 10,000 MNIST test digits as
PNG files, 10,000 URLs binary and in 4 classes) are written as the app's upload files and read
through the replay's raw path (:func:`learners.evaluation.raw.load_raw`, the app's own parser
and featurizers). With ``--full`` every featurizer of the stream's kind
(``learners.features.featurizer_names``) is measured, and every registered learner of the task
always is, so featurizers and learners added later are picked up by a re-run. The featurized
matrices are cached outside the repository (``--cache``), keyed by a digest of the upload file, the
featurizer's config and the code of the featurizer's modules (and every ``learners`` module they
use) and of the upload parser. For each stream x featurizer x learner, ``--runs`` permutations (run
r uses the permutation and decision uniforms of ``learners.evaluation.engine.run_seeds``, the same
for every learner and for river):

* ``active`` at each budget r in 2%, 5%, 10%, 20%: the published query rule with the replay's
  ``--budget r`` (``learners.budget.BudgetController`` steering delta);
* ``all``: every label (100%);
* ``random`` at each budget: ``query=random`` with ``p = r`` (the block loop of a learner static
  between labels: probed on its own, as it costs far less than the budget's item-by-item loop).

Peer: river's ``active.EntropySampler`` around ``linear_model.LogisticRegression`` (binary) or
``linear_model.SoftmaxRegression`` (multiclass, the multinomial logistic regression), on the
same vectors as dicts, with the same permutations. Its query knob (``discount_factor``) is
steered to each budget by the same ``BudgetController`` (knob ``1 / discount_factor``, starting
at river's default 3); the classes are declared up front, as our learners get them (an empty
``SoftmaxRegression`` predicts nothing, so the sampler would never ask). Its learning rate is
tuned: every value of ``RIVER_LR`` is run on permutation 0 at the 10% budget and the best one is
used at every budget (per stream x featurizer). river is a benchmark-only dependency
(``requirements-bench.txt``).

Accuracy is online (the prediction made before the label, on every item); the query ratio is
the one achieved (a setting more than ``HELD`` x over its budget is flagged and not counted as
the best at that budget; on a stream or prefix shorter than the budget plan's repayment, 3,000
items, the plan's own allowance applies: :func:`allowed_ratio`); items/s is the replay's own
loop (featurizing is timed separately).

Against river, the summary gives for each stream x featurizer x budget the best learner's paired
difference (same permutation, same decision uniforms) with the permutations won (:func:`_paired`).

Time. A learner that refuses the features (its constructor raises, e.g. a particle memory over
OASIS's limit) is listed as not applicable with its message. Every other cell is first probed
(a forked process replays the first items at the 10% budget, with every label and with
``query=random`` at 10%: :data:`PROBED`, killed past
``PROBE_SECONDS`` of CPU or ``PROBE_RSS_MB``) for its CPU seconds per item; a cell whose replays of
the whole stream would take more than ``--cell-minutes`` of CPU (the OASIS family, whose particle
filter costs milliseconds per item per class, and KMC with many labels) is not run by default
(:func:`disposition`); with ``--full`` it runs on the first items of each permutation (the longest
of ``PREFIXES`` whose replays take at most ``--prefix-minutes``, said in its row and never counted
as the best), or, when even the shortest does not fit, is listed as not run with its cost. The two
limits are apart so that a linear learner whose probe comes out a little slow still replays whole
streams while the slow cells stay short. No permutation is cut. The jobs (one per cell and
permutation: its 9 replays share the permuted stream) run on ``--jobs`` forked processes of one BLAS
thread each, the most expensive first (river's tuning before all, as its other replays wait for it).
The report states the wall time, the load average, and the CPU time of the workers and of the main
process, from which the time on an idle machine is estimated (main's CPU + the workers' / jobs).
Figures are never asserted by tests.
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import inspect
import json
import multiprocessing
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.raw_streams import STREAMS, prepare
from learners.budget import BudgetController
from learners.evaluation.charts import line_chart
from learners.evaluation.datasets import class_values
from learners.evaluation.engine import Setting, Task, make_task, permuted, replay_permuted, run_seeds
from learners.evaluation.raw import featurizer_config, load_raw
from learners.features import DEFAULT, featurizer_class, featurizer_names, measured_speed
from learners.registry import REGISTRY, default_algorithm, make, validate_params

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = (0.02, 0.05, 0.10, 0.20)
#: river's learning rates tried (a half-decade grid: with only 0.1 / 1 / 10 the best rate on AG News
#: was the grid's edge, 0.1)
RIVER_LR = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
#: the goals: online accuracy of the best learner and featurizer at a 10% budget
GOALS = {"sms": 0.980, "urls": 0.950, "mnist": 0.900, "ag_news": 0.850}
#: a budget counts as held when the achieved ratio is at most HELD x the budget
HELD = 1.25
PROBE_ITEMS = 50
#: of CPU time (a loaded machine slows the probes' wall clock, not their CPU); a cell that needs more
#: for PROBE_ITEMS items (over 80 ms per item for its two probed replays) could not run whole
#: streams or long prefixes in any --prefix-minutes worth having
PROBE_SECONDS = 8.0
PROBE_CHEAP = 0.5
PROBE_RSS_MB = 3000
#: the prefixes (items of each permutation) a cell too slow for the whole stream is replayed on
PREFIXES = (200, 500, 1000, 2000, 5000)
SEED = 0
#: default of ``--cell-minutes``: CPU minutes one learner's replays of a whole stream may take (the
#: costliest linear learner, md-amd on MNIST's HOG rows, is probed at 1.3-1.6)
CELL_MINUTES = 3.0
#: default of ``--prefix-minutes``: CPU minutes the replays of a slower cell's prefixes may take
PREFIX_MINUTES = 1.0

# -------------------------------------------------------------------------- stream data
_DATA: dict[tuple[str, str], tuple[sp.csr_matrix, Task]] = {}


def _code_digest(kind: str, fname: str) -> str:
    """Digest of the code that makes ``fname``'s vectors: the featurizer's module and every
    ``learners`` module it uses, transitively (modules and objects found in their namespaces),
    with the upload parser's. A cached matrix is reused only by the code that made it, even
    when an edit kept a featurizer's version; an edit to another featurizer keeps it."""
    todo = [featurizer_class(kind, fname).__module__, "learners.features.base",
            *(m for m in sys.modules if m.startswith("learners.uploads"))]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in sys.modules or not name.startswith("learners"):
            continue
        seen.add(name)
        for value in vars(sys.modules[name]).values():
            used = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
            if isinstance(used, str) and used.startswith("learners"):
                todo.append(used)
    h = hashlib.sha256()
    for name in sorted(seen):
        source = sys.modules[name].__file__
        h.update(name.encode() + b"\0" + (Path(source).read_bytes() if source else b""))
    return h.hexdigest()


def featurized(path: Path, kind: str, fname: str, cache: Path) -> tuple[sp.csr_matrix, np.ndarray]:
    """The upload file ``path`` featurized by a new project's ``fname`` config: rows and class
    values. Kept in ``cache`` (an ``.npz`` keyed by a digest of the file's bytes, the config and
    the featurizer's code, no pickle), so a rerun does not pay the text embedding again."""
    config = featurizer_config(kind, fname)
    key = hashlib.sha256(path.read_bytes())
    key.update(json.dumps(config, sort_keys=True).encode() + _code_digest(kind, fname).encode())
    entry = cache / f"{path.name}.{fname}.{key.hexdigest()[:16]}.npz"
    if entry.exists():
        with np.load(entry, allow_pickle=False) as z:
            X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
            return X, class_values(z["y"])
    ds = load_raw([path], kind, config)
    tmp = entry.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, data=ds.X.data, indices=ds.X.indices, indptr=ds.X.indptr, shape=ds.X.shape,
             y=np.array([str(v) for v in ds.y]))
    tmp.replace(entry)  # whole entries only, also when two runs share the cache
    return ds.X, ds.y


@contextmanager
def embeddings_once() -> Iterator[None]:
    """Within the block, the MiniLM encoder answers a call it has already answered (the same
    texts in the same order, the same ``max_tokens``) with the stored result: the featurizers
    that embed a stream (``minilm``, ``minilm-ngrams``, ``minilm-chars``) embed it once. Exact:
    they ask for the same calls and the encoder is deterministic (its vectors do not depend on
    its threads, :meth:`learners.features.embedding.MiniLM.embed`)."""
    from learners.features import embedding

    stored: dict[tuple[int, str], np.ndarray] = {}
    original = embedding.MiniLM.embed

    def embed(self: Any, texts: Sequence[str], max_tokens: int, n_threads: int | None = None) -> np.ndarray:
        key = (max_tokens, hashlib.sha256("\0".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
               + f":{len(texts)}")
        if key not in stored:
            stored[key] = original(self, texts, max_tokens, n_threads)
        return stored[key].copy()

    embedding.MiniLM.embed = embed  # type: ignore[method-assign]
    try:
        yield
    finally:
        embedding.MiniLM.embed = original  # type: ignore[method-assign]


def load_streams(names: Sequence[str], featurizers: dict[str, list[str]], cache: Path,
                 limit: int | None) -> dict[tuple[str, str], dict[str, Any]]:
    """Featurize every stream with every featurizer of its kind into ``_DATA`` (inherited by the
    forked workers; the texts embedded once, :func:`embeddings_once`); returns per (stream,
    featurizer) its size and the featurizer's speed as the console shows it
    (:func:`learners.features.measured_speed`)."""
    with embeddings_once():
        return _load_streams(names, featurizers, cache, limit)


def _load_streams(names: Sequence[str], featurizers: dict[str, list[str]], cache: Path,
                  limit: int | None) -> dict[tuple[str, str], dict[str, Any]]:
    paths = prepare(cache, list(names))
    info = {}
    for name in names:
        stream = STREAMS[name]
        for fname in featurizers[stream.kind]:
            X, y = featurized(paths[name], stream.kind, fname, cache)
            ips = measured_speed(fname)
            n_all = X.shape[0]
            if limit is not None:
                X, y = X[:limit], y[:limit]
            task = make_task(y)
            _DATA[(name, fname)] = (X, task)
            info[(name, fname)] = {"n": X.shape[0], "d": X.shape[1], "classes": len(task.classes),
                                   "featurize_ips": ips}
            print(f"{name} / {fname}: {X.shape[0]} of {n_all} items x {X.shape[1]} features",
                  file=sys.stderr, flush=True)
    return info


# ------------------------------------------------------------------------------ one job
def _setting(algo: str, mode: str, ratio: float) -> Setting:
    if mode == "active":
        return Setting(algo, validate_params(algo, {}), budget=ratio)
    if mode == "random":
        return Setting(algo, validate_params(algo, {"query": "random", "p": ratio}))
    return Setting(algo, validate_params(algo, {"query": "all"}))


def settings_of() -> tuple[tuple[str, float], ...]:
    """The (mode, ratio) replays of a learner on one permutation: active and random at every
    budget, and every label."""
    return (*(("active", r) for r in BUDGETS), ("all", 1.0), *(("random", r) for r in BUDGETS))


def river_rows(Xp: sp.csr_matrix) -> list[dict[int, float]]:
    """The rows of ``Xp`` as river's feature dicts (built once per permutation)."""
    return [dict(zip(Xp.indices[a:b].tolist(), Xp.data[a:b].tolist(), strict=True))
            for a, b in zip(Xp.indptr[:-1], Xp.indptr[1:], strict=True)]


def river_once(rows: list[dict[int, float]], yp: np.ndarray, task: Task, ratio: float, lr: float,
               run: int) -> dict[str, float]:
    """river's EntropySampler + logistic regression on the stream of permutation ``run``
    (``rows``, ``yp``: :func:`learners.evaluation.engine.permuted`), as in the module docstring."""
    from river import active, linear_model, optim

    if task.binary:
        model = linear_model.LogisticRegression(optimizer=optim.SGD(lr))
        labels = [bool(c) for c in yp]
    else:
        model = linear_model.SoftmaxRegression(optimizer=optim.SGD(lr))
        for k in range(len(task.classes)):
            model.weights[k]  # declare the class (defaultdict): uniform probabilities at start
        labels = [int(c) for c in yp]
    sampler = active.EntropySampler(model, discount_factor=3.0, seed=run)
    budget = BudgetController(ratio, 1.0 / 3.0, length=len(rows))  # as our learners' replays
    _, rng = run_seeds(SEED, run)
    correct = queried = 0
    t0 = time.perf_counter()
    for x, label in zip(rows, labels, strict=True):
        # the sampler's own rule (entropy ** discount_factor), with the budget's knob, thinning
        # and cap applied exactly as for our learners (learners.base.Learner.decide)
        sampler.discount_factor = 1.0 / budget.value
        proba = model.predict_proba_one(x)
        pred = max(proba, key=proba.get) if proba else None
        q = sampler._p(proba)
        ask = bool(rng.random() < budget.adjust(q))
        budget.record(q, ask)
        correct += pred == label
        if ask:
            queried += 1
            model.learn_one(x, label)
    seconds = time.perf_counter() - t0
    n = len(labels)
    return {"accuracy": correct / n, "query_ratio": queried / n, "items_per_second": n / seconds}


@dataclass(frozen=True)
class Job:
    """The replays of one stream x featurizer x learner on permutation ``run``, which share its
    permuted stream: each ``(mode, ratio)`` of ``settings`` on the first ``items`` items of the
    permutation (None: all of them). River's jobs have algo and mode ``river`` and ``lr`` set."""

    stream: str
    featurizer: str
    algo: str
    run: int
    settings: tuple[tuple[str, float], ...]
    items: int | None = None
    lr: float = 0.0


Outcome = tuple[Job, list[tuple[str, float, dict[str, float]]], float]


def run_job(job: Job) -> Outcome:
    """Every replay of ``job``: ``(job, [(mode, ratio, metrics), ...], CPU seconds)``."""
    c0 = time.process_time()
    X, task = _DATA[(job.stream, job.featurizer)]
    Xp, yp = permuted(X, task, SEED, job.run, job.items)
    out = []
    if job.algo == "river":
        rows = river_rows(Xp)
        out = [(mode, r, river_once(rows, yp, task, r, job.lr, job.run)) for mode, r in job.settings]
    else:
        for mode, r in job.settings:
            m = replay_permuted(_setting(job.algo, mode, r), Xp, yp, task, SEED, job.run)
            out.append((mode, r, {k: m[k] for k in ("accuracy", "query_ratio", "items_per_second")}))
    return job, out, time.process_time() - c0


def _one_thread() -> None:
    """Each worker computes on one core: two jobs on two cores, not two BLAS pools fighting."""
    threadpool_limits(1)


# ------------------------------------------------------------------------- guarded probe
#: the replays a probe times, in this order (river's own loop ignores the mode): the budget's
#: item-by-item loop, every label, and ``query=random`` (the block loop of a learner static
#: between labels, often far cheaper than the budget's)
PROBED = (("active", 0.10), ("all", 1.0), ("random", 0.10))


def _probe_child(key: tuple[str, str], algo: str, done: Any, seconds: Any) -> None:
    """CPU seconds per item of each replay of :data:`PROBED` of ``algo`` on permutation 0,
    written one after the other into ``seconds`` (so a probe killed during one still tells
    the ones before); ``done`` counts the finished ones. Each is timed on the
    first PROBE_ITEMS items and, when that took less than PROBE_CHEAP seconds, again on ten
    times as many: the difference per item leaves out what a replay costs whatever its length."""
    _one_thread()
    X, task = _DATA[key]
    short = min(PROBE_ITEMS, X.shape[0])
    for k, (mode, r) in enumerate(PROBED[:1] if algo == "river" else PROBED):

        def cpu(items: int, mode: str = mode, r: float = r) -> float:
            Xp, yp = permuted(X, task, SEED, 0, items)
            c0 = time.process_time()
            if algo == "river":
                river_once(river_rows(Xp), yp, task, r, 1.0, 0)
            else:
                replay_permuted(_setting(algo, mode, r), Xp, yp, task, SEED, 0)
            return time.process_time() - c0

        cpu(min(5, short))  # untimed: compiled code of this stream's index types, river's import
        first = cpu(short)
        per_item = first / short
        longer = min(10 * short, X.shape[0])
        if first < PROBE_CHEAP and longer > short:
            per_item = max((cpu(longer) - first) / (longer - short), 0.1 * per_item)
        seconds[k] = per_item
        done.value = k + 1


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass
class _Probe:
    proc: Any
    done: Any
    seconds: Any
    peak: float = 0.0


def _start_probe(key: tuple[str, str], algo: str) -> _Probe:
    ctx = multiprocessing.get_context("fork")
    done, seconds = ctx.Value("i", 0), ctx.Array("d", len(PROBED))
    proc = ctx.Process(target=_probe_child, args=(key, algo, done, seconds))
    proc.start()
    return _Probe(proc, done, seconds)


@dataclass(frozen=True)
class ProbeResult:
    """CPU seconds per item at a 10% budget, with every label and with ``query=random`` at 10%
    (None: not measured)."""

    active: float | None
    every: float | None
    random: float | None = None
    why: str = ""


def _finish_probe(p: _Probe) -> ProbeResult | None:
    """None while the probe runs within its limits, else what it measured and why it stopped."""
    why = ""
    if p.proc.is_alive():
        p.peak = max(p.peak, _rss_mb(p.proc.pid))
        if p.peak > PROBE_RSS_MB:
            why = f"over {PROBE_RSS_MB} MB of memory"
        elif _cpu_seconds(p.proc.pid) > PROBE_SECONDS:
            why = f"not done with {PROBE_ITEMS} items in {PROBE_SECONDS:.0f} s of CPU"
        else:
            return None
        p.proc.kill()
    p.proc.join()
    if not why and p.proc.exitcode != 0:
        why = f"failed (exit code {p.proc.exitcode})"
    got = [p.seconds[k] if p.done.value > k else None for k in range(len(PROBED))]
    if "memory" in why:
        return ProbeResult(None, None, None, why)
    return ProbeResult(*got, why=why)


def probe_all(tasks: list[tuple[tuple[str, str], str]], jobs: int) -> list[ProbeResult]:
    """:class:`ProbeResult` of each ``(stream key, algo)``, measured in forked processes (``jobs``
    at a time) killed past PROBE_SECONDS of CPU or PROBE_RSS_MB."""
    results: list[ProbeResult | None] = [None] * len(tasks)
    pending, running = list(range(len(tasks))), {}
    while pending or running:
        while pending and len(running) < jobs:
            k = pending.pop(0)
            running[k] = _start_probe(*tasks[k])
        for k, p in list(running.items()):
            out = _finish_probe(p)
            if out is not None:
                results[k] = out
                del running[k]
        time.sleep(0.01)
    return [r for r in results if r is not None]


# -------------------------------------------------------------------------------- plan
@dataclass
class Cell:
    """A stream x featurizer x learner (or river): its probe, its replays and their results."""

    stream: str
    featurizer: str
    algo: str
    runs: int = 0
    items: int | None = None  # replayed on the first `items` of each permutation (None: all)
    per_item: float = 0.0  # estimated CPU seconds per item of one permutation's replays
    note: str = ""
    cpu: float = 0.0  # measured CPU seconds of all its replays
    lr: float = 0.0  # river: the tuned learning rate
    results: dict[tuple[str, float], list[dict[str, float]]] = field(
        default_factory=lambda: defaultdict(list))


def _refusal(algo: str, d: int, task: Task) -> str | None:
    """Why ``algo`` cannot be built for ``d`` features and these classes (None: it can)."""
    try:
        make(algo, n_features=d, classes=list(task.classes))
    except ValueError as exc:
        return str(exc)
    return None


def per_item_cost(algo: str, p: ProbeResult) -> float:
    """Estimated CPU seconds per item of one permutation's replays of ``algo`` from its probe
    (``p.active`` measured): river's 4 budgets cost the 10% budget's each; a learner's 4 active
    replays too, its 4 random ones ``p.random`` each (the 10% budget's when the probe did not
    get there), and every label ``p.every`` (ten times the 10% budget's when not measured)."""
    assert p.active is not None
    if algo == "river":
        return len(BUDGETS) * p.active
    every = p.every if p.every is not None else 10 * p.active
    rand = p.random if p.random is not None else p.active
    return len(BUDGETS) * (p.active + rand) + every


def disposition(per_item: float, n: int, runs: int, cell_seconds: float, prefix_seconds: float,
                prefixes: bool) -> tuple[int, int | None, str]:
    """How a learner cell of ``n`` items costing ``per_item`` CPU seconds per item and
    permutation is run: ``(permutations, items of each, note)`` (items None: the whole stream;
    permutations 0: not run). Within ``cell_seconds`` for ``runs`` whole permutations: whole
    streams. Else, with ``prefixes`` (``--full``), the longest prefix of PREFIXES whose replays
    take at most ``prefix_seconds`` (none fits: not run); without, not run (the default run
    leaves the slow learners to ``--full``). The note says why, with the cost.

    >>> disposition(1e-4, 5000, 5, 180.0, 60.0, prefixes=False)
    (5, None, '')
    >>> disposition(0.01, 5000, 5, 180.0, 60.0, prefixes=True)[:2]
    (5, 1000)
    >>> disposition(0.01, 5000, 5, 180.0, 60.0, prefixes=False)[:2]
    (0, None)
    """
    if runs * n * per_item <= cell_seconds:
        return runs, None, ""
    cost = (f"{1e3 * per_item:.1f} ms of CPU per item for its {len(settings_of())} replays, "
            f"{runs * n * per_item / 60:.0f} CPU-min for the whole stream")
    if not prefixes:
        return 0, None, f"not run by default: {cost} (`--full` replays its first items)"
    fits = [k for k in PREFIXES if k < n and runs * k * per_item <= prefix_seconds]
    if not fits:
        return 0, None, (f"not run: {cost}, {runs * min(PREFIXES) * per_item / 60:.1f} CPU-min for its "
                         f"first {min(PREFIXES)} items (over --prefix-minutes {prefix_seconds / 60:g})")
    return runs, max(fits), f"first {max(fits)} items of each permutation: {cost}"


def plan(info: dict, algos: dict[str, list[str]], runs: int, cell_seconds: float, prefix_seconds: float,
         jobs: int, river: bool, prefixes: bool = True) -> list[Cell]:
    """Every stream x featurizer x learner cell with ``runs`` permutations, and river's.

    A learner that refuses the features (its constructor raises) is listed with its reason and
    not run. The others are probed (``jobs`` at a time) and run as :func:`disposition` says:
    whole streams, or (a cell over ``cell_seconds``) the first items of each permutation when
    ``prefixes``, else not run, with its cost. Prints the plan's CPU time."""
    cells = [Cell(stream, fname, algo) for (stream, fname) in info
             for algo in algos["binary" if STREAMS[stream].binary else "multiclass"]]
    for c in cells:
        why = _refusal(c.algo, info[(c.stream, c.featurizer)]["d"], _DATA[(c.stream, c.featurizer)][1])
        c.note = f"not applicable: {why}" if why else ""
    probed = [c for c in cells if not c.note]
    if river:
        probed += [Cell(stream, fname, "river") for (stream, fname) in info]
    cells += [c for c in probed if c.algo == "river"]
    probes = probe_all([((c.stream, c.featurizer), c.algo) for c in probed], jobs)
    for c, p in zip(probed, probes, strict=True):
        if p.active is None:
            c.note = f"skipped: {p.why}"
            continue
        c.per_item = per_item_cost(c.algo, p)
        c.runs = runs
        if c.algo != "river":
            c.runs, c.items, c.note = disposition(c.per_item, info[(c.stream, c.featurizer)]["n"], runs,
                                                  cell_seconds, prefix_seconds, prefixes)
        print(f"probe {c.stream}/{c.featurizer}/{c.algo}: {1e6 * c.per_item:.0f} us of CPU per item and "
              f"permutation" + (f" ({p.why})" if p.why else "") + (f"; {c.note}" if c.note else ""),
              file=sys.stderr, flush=True)
    total = plan_seconds(cells, info)
    print(f"plan: {total / 60:.1f} CPU-min of replays in {sum(len(jobs_of(c)) for c in cells)} jobs "
          f"(and river's after its tuning), about {total / jobs / 60:.1f} min on {jobs} idle cores",
          file=sys.stderr, flush=True)
    return cells


def plan_seconds(cells: list[Cell], info: dict) -> float:
    """The planned CPU seconds of every cell's replays, from the probes (river's tuning
    included: its RIVER_LR replays at 10% on permutation 0, each a quarter of a permutation's)."""
    return sum((c.runs + (len(RIVER_LR) / len(BUDGETS) if c.algo == "river" and c.runs else 0))
               * (c.items or info[(c.stream, c.featurizer)]["n"]) * c.per_item for c in cells)


def jobs_of(cell: Cell) -> list[Job]:
    """A learner cell's jobs (one per permutation), or river's learning-rate tuning jobs (its
    other replays follow the tuning, :func:`river_jobs`)."""
    if cell.algo == "river":
        return [Job(cell.stream, cell.featurizer, "river", 0, (("river", 0.10),), None, lr)
                for lr in RIVER_LR] if cell.runs else []
    return [Job(cell.stream, cell.featurizer, cell.algo, run, settings_of(), cell.items)
            for run in range(cell.runs)]


def river_jobs(cell: Cell) -> list[Job]:
    """River's replays at the tuned rate: every budget and permutation but the tuning's own."""
    return [Job(cell.stream, cell.featurizer, "river", run,
                tuple(("river", r) for r in BUDGETS if (run, r) != (0, 0.10)), None, cell.lr)
            for run in range(cell.runs)]


def execute(cells: list[Cell], info: dict, jobs: int) -> None:
    """Run every cell's jobs on ``jobs`` forked processes, the most expensive first (estimated
    from the probes; river's tuning first of all, as its other replays wait for it), and store
    the results and CPU seconds in the cells."""
    index = {(c.stream, c.featurizer, c.algo): c for c in cells}
    tuning: dict[tuple[str, str], list[tuple[float, dict[str, float]]]] = defaultdict(list)

    def cost(job: Job) -> float:
        c = index[(job.stream, job.featurizer, job.algo)]
        n = job.items or info[(job.stream, job.featurizer)]["n"]
        if job.algo == "river":
            own = len(job.settings) * n * c.per_item / len(BUDGETS)
            return own + (c.runs * n * c.per_item if job.run == 0 and len(job.settings) == 1 else 0.0)
        return n * c.per_item

    def finished(outcome: Outcome) -> list[Job]:
        job, out, cpu = outcome
        c = index[(job.stream, job.featurizer, job.algo)]
        c.cpu += cpu
        for _, _, m in out:
            m["run"] = job.run  # pairs a learner's permutation with river's (_paired)
            m["items"] = job.items or info[(job.stream, job.featurizer)]["n"]  # for allowed_ratio
        if job.algo != "river":
            for mode, r, m in out:
                c.results[(mode, r)].append(m)
            return []
        if len(job.settings) == 1 and job.run == 0 and not c.lr:  # a tuning job
            tuning[(c.stream, c.featurizer)].append((job.lr, out[0][2]))
            tried = tuning[(c.stream, c.featurizer)]
            if len(tried) < len(RIVER_LR):
                return []
            c.lr, best = max(tried, key=lambda t: t[1]["accuracy"])
            c.results[("river", 0.10)].append(best)
            return river_jobs(c)
        for mode, r, m in out:
            c.results[(mode, r)].append(m)
        return []

    heap: list[tuple[float, int, Job]] = []
    seq = 0

    def push(new: list[Job]) -> None:
        nonlocal seq
        for j in new:
            heapq.heappush(heap, (-cost(j), seq, j))
            seq += 1

    for c in cells:
        push(jobs_of(c))
    total, t0, k = len(heap), time.monotonic(), 0
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_one_thread) as pool:
        running: set[Future] = set()
        while heap or running:
            while heap and len(running) < jobs + 1:  # one queued: no worker waits for the next
                running.add(pool.submit(run_job, heapq.heappop(heap)[2]))
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for f in done:
                new = finished(f.result())
                push(new)
                total += len(new)
                k += 1
                if k % 25 == 0 or not (heap or running):
                    print(f"  {k}/{total} jobs, {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ report
def _summary(rows: list[dict[str, float]]) -> dict[str, float]:
    acc = np.array([r["accuracy"] for r in rows])
    return {"acc": float(acc.mean()), "std": float(acc.std()),
            "q": float(np.mean([r["query_ratio"] for r in rows])),
            "ips": float(np.mean([r["items_per_second"] for r in rows])), "runs": len(rows),
            "items": rows[0]["items"]}


def allowed_ratio(r: float, items: int) -> float:
    """The largest query ratio that holds budget ``r`` on a stream of ``items`` items: the
    tolerance ``HELD * r``, or the plan's own allowance ``(plan(items) + burst) / items``
    when that is more. The replays know the length of their stream (or prefix), so the plan
    repays its advance by the last item (docs/budget.md) and the allowance is ``HELD * r``
    unless the burst alone is more."""
    ctl = BudgetController(r, length=items)
    return max(HELD * r, (ctl.plan(items) + ctl.fitted_burst) / items)


def _held(s: dict[str, float], r: float) -> bool:
    """True when the achieved query ratio holds budget ``r`` (:func:`allowed_ratio`)."""
    return s["q"] <= allowed_ratio(r, int(s["items"]))


def _fmt(s: dict[str, float] | None, r: float | None = None) -> str:
    """``acc ± std (query%)``, flagged when budget ``r`` was overspent, or said when it was held
    only by the plan's own allowance (:func:`allowed_ratio`: the burst on a very short stream)."""
    if s is None:
        return "-"
    over = ""
    if r is not None and not _held(s, r):
        over = ", **over budget**"
    elif r is not None and s["q"] > HELD * r:
        over = ", the plan's advance"
    return f"{s['acc']:.3f} ± {s['std']:.3f} ({100 * s['q']:.1f}%{over})"


def _sums(c: Cell | None) -> dict[tuple[str, float], dict[str, float]]:
    return {k: _summary(v) for k, v in c.results.items() if v} if c else {}


@dataclass(frozen=True)
class RunFacts:
    """How the report was made: wall time, load averages, CPU seconds (workers and main)."""

    wall: float
    load_start: float
    load_end: float
    cpu_workers: float
    cpu_main: float
    featurize_cpu: float


def write_report(out: Path, svg_dir: Path, info: dict, cells: list[Cell], args: argparse.Namespace,
                 facts: RunFacts) -> None:
    idle = facts.cpu_main + facts.cpu_workers / args.jobs
    lines = ["# Label efficiency on raw streams", "",
             "Written by `python benchmarks/label_efficiency.py"
             + (" " + " ".join(args.argv) if args.argv else "")
             + f"` in {facts.wall / 60:.1f} min on {args.jobs} processes, load average "
             f"{facts.load_start:.1f} at the start and {facts.load_end:.1f} at the end. CPU time: "
             f"{facts.cpu_workers / 60:.1f} min in the forked probes and replays, "
             f"{facts.cpu_main / 60:.1f} min in the main process (featurizing: "
             f"{facts.featurize_cpu / 60:.1f} min, none when the matrices were cached), so about "
             f"{idle / 60:.1f} min on an idle machine (main's CPU + the rest / {args.jobs}). Online accuracy "
             f"(prediction before the label, every item), mean ± std over permutations, with the "
             f"achieved query ratio in brackets; `active` = the learner's published query rule held to "
             f"the budget by the replay's `--budget`; `random` = `query=random` with p = budget; `all` = "
             f"every label. river = `EntropySampler` + logistic regression, its discount factor steered to "
             f"the same budget, learning rate tuned (see the script's docstring). `CPU s` = CPU seconds of "
             f"all of a row's replays. A learner whose replays of the whole stream would take more than "
             f"{args.cell_minutes:g} CPU-min "
             + (f"runs on the first items of each permutation, as many as its "
                f"replays can take in {args.prefix_minutes:g} CPU-min (said in its row; not comparable with "
                f"whole streams, so never 'best'; the budget's plan fits the prefix's length, "
                f"docs/budget.md)" if args.full else
                "is not run (its probed cost in its row; `--full` replays it on prefixes and measures every "
                "featurizer of the kind)")
             + ". A new project's default featurizer of each kind: "
             + ", ".join(f"{k} `{v}`" for k, v in DEFAULT.items() if k != "vectors")
             + ("" if args.full or args.featurizers else " (the only one measured in this run)") + ".", ""]
    by_stream: dict[str, list[Cell]] = defaultdict(list)
    for c in cells:
        by_stream[c.stream].append(c)
    goal_rows, peer_rows, default_rows = [], [], []
    for stream, all_cells in by_stream.items():
        mine = [c for c in all_cells if c.algo != "river"]
        rivers = {c.featurizer: c for c in all_cells if c.algo == "river" and c.results}
        fnames = list(dict.fromkeys(c.featurizer for c in all_cells))
        meta = info[(stream, fnames[0])]
        lines += [f"## {stream} ({meta['n']} items, {meta['classes']} classes)", ""]
        for fname in fnames:
            fm = info[(stream, fname)]
            speed = fm["featurize_ips"]
            lines += [f"### featurizer `{fname}` ({fm['d']} features, "
                      + (f"{speed:,.0f} items/s as the console shows it)" if speed
                         else "speed not measured)"), ""]
            head = " | ".join(f"{int(100 * r)}%" for r in BUDGETS)
            lines += [f"| learner | query | {head} | 100% | items/s (10%) | runs | CPU s |",
                      "|---|---|" + "---|" * (len(BUDGETS) + 4)]
            for c in (c for c in mine if c.featurizer == fname):
                if not c.results:
                    lines.append(f"| {c.algo} | | {c.note} |" + " |" * (len(BUDGETS) + 3))
                    continue
                s = _sums(c)
                ips = s.get(("active", 0.10), {}).get("ips", float("nan"))
                lines.append(f"| {c.algo} | active | "
                             + " | ".join(_fmt(s.get(("active", r)), r) for r in BUDGETS)
                             + f" | {_fmt(s.get(('all', 1.0)))} | {ips:.0f} | {c.runs}"
                             + (f" ({c.note})" if c.note else "") + f" | {c.cpu:.1f} |")
                lines.append(f"| {c.algo} | random | "
                             + " | ".join(_fmt(s.get(("random", r))) for r in BUDGETS)
                             + " | | | | |")
            rv = rivers.get(fname)
            rs = _sums(rv)
            if rv:
                lines.append(f"| river (lr {rv.lr:g}) | entropy | "
                             + " | ".join(_fmt(rs.get(("river", r)), r) for r in BUDGETS)
                             + f" | | {rs.get(('river', 0.10), {}).get('ips', float('nan')):.0f} |"
                             f" {rs.get(('river', 0.10), {}).get('runs', 0)} | {rv.cpu:.1f} |")
            lines.append("")
            for r in BUDGETS[1:]:
                best = _best([c for c in mine if c.featurizer == fname], r)
                if best and rv and rs.get(("river", r)):
                    peer_rows.append((stream, fname, r, best, rs[("river", r)],
                                      _paired(best[0].results[("active", r)], rv.results[("river", r)])))
                default = default_algorithm("binary" if meta["classes"] == 2 else "multiclass")
                dc = next((c for c in _whole(mine) if c.featurizer == fname and c.algo == default
                           and c.results.get(("active", r))), None)
                other = _best([c for c in mine if c.featurizer == fname and c.algo != default], r)
                if other and dc and rv and rs.get(("river", r)):
                    default_rows.append((stream, fname, r, dc, _summary(dc.results[("active", r)]),
                                         rs[("river", r)], other,
                                         _paired(dc.results[("active", r)], rv.results[("river", r)]),
                                         _paired(dc.results[("active", r)], other[0].results[("active", r)])))
        svg = svg_dir / f"{stream}.svg"
        svg.write_text(_chart(stream, mine, rivers, meta["n"]))
        lines += [f"![learning curve]({os.path.relpath(svg, out.parent)})", ""]
        best10 = _best(mine, 0.10)
        if best10:
            c, s = best10
            s20 = _sums(c).get(("active", 0.20))
            goal_rows.append((stream, c, s, s20, _sums(c).get(("all", 1.0))))
    lines[len(lines):] = _summary_tables(goal_rows, peer_rows) + _default_table(default_rows)
    out.write_text("\n".join(lines) + "\n")


def _whole(cells: list[Cell]) -> list[Cell]:
    """The cells replayed on whole streams (the others are not comparable with them)."""
    return [c for c in cells if c.results and c.items is None]


def _best(cells: list[Cell], r: float) -> tuple[Cell, dict[str, float]] | None:
    """The most accurate whole-stream cell at budget ``r`` among those that held it (all when none did)."""
    scored = [(c, _summary(c.results[("active", r)])) for c in _whole(cells) if c.results.get(("active", r))]
    held = [t for t in scored if _held(t[1], r)]
    return max(held or scored, key=lambda t: t[1]["acc"], default=None)


def _summary_tables(goal_rows: list, peer_rows: list) -> list[str]:
    out = ["## Summary", "", "Best learner and featurizer at a 10% budget (the goals), and the same "
           "learner at 20% and with every label. 'Best' is taken among the settings that held the "
           f"budget (achieved ratio at most {HELD:g} x the budget) when any did:", "",
           "| stream | learner | featurizer | accuracy at 10% | goal | at 20% | all labels |",
           "|---|---|---|---|---|---|---|"]
    for stream, c, s, s20, full in goal_rows:
        goal = GOALS.get(stream)
        mark = "" if goal is None else (f"{goal:.3f} {'met' if s['acc'] >= goal else 'NOT met'}")
        out.append(f"| {stream} | {c.algo} | {c.featurizer} | {_fmt(s, 0.10)} | {mark} | {_fmt(s20, 0.20)} | "
                   f"{_fmt(full)} |")
    out += ["", "Best learner against river on the same vectors, the default featurizer "
            "of each stream in bold. The difference is paired: best learner minus river on the same "
            "permutation (same order of items, same decision uniforms), mean ± std over the "
            "permutations, with how many of them the learner won or tied. 'ahead': the mean difference "
            "is >= 0; 'level': below 0 by less than its standard error (std / sqrt(permutations)), "
            "that is within what another draw of permutations could reverse; 'behind' otherwise.", "",
            "| stream | featurizer | budget | best learner | its accuracy | river | difference (pt) | won "
            "| ahead |", "|---|---|---|---|---|---|---|---|---|"]
    for stream, fname, r, (cell, s), rs, (diff, sd, won, n) in peer_rows:
        name = f"**{fname}**" if DEFAULT.get(STREAMS[stream].kind) == fname else fname
        out.append(f"| {stream} | {name} | {int(100 * r)}% | {cell.algo} | {_fmt(s, r)} | {_fmt(rs, r)} | "
                   f"{100 * diff:+.2f} ± {100 * sd:.2f} | {won} of {n} | {_verdict(diff, sd, n)} |")
    return out


def _verdict(diff: float, sd: float, n: int) -> str:
    """'yes' (mean paired difference >= 0), 'level' (below 0 by less than its standard error) or 'behind'."""
    return "yes" if diff >= 0 else ("level" if -diff < sd / np.sqrt(n) else "behind")


def _default_table(rows: list) -> list[str]:
    """A new project's learner (``learners.DEFAULT_ALGORITHM``) against river and against the best
    other learner of its stream x featurizer x budget, both paired (docs/algorithms/auto.md)."""
    out = ["", "## The default learner", "",
           "A new project's learner (`learners.DEFAULT_ALGORITHM`: docs/algorithms/auto.md) against "
           "river and against the best other registered learner of the same vectors and budget (whole "
           "streams, 'best' as above), both paired as above: default minus the other, mean ± std over the "
           "permutations, won or tied. The goals (docs/algorithms/auto.md): ahead of river or level, and "
           "at most 0.3 points below the best ('within 0.3').", "",
           "| stream | featurizer | budget | default learner | its accuracy | river | minus river (pt) | won "
           "| ahead | best other | its accuracy | minus best (pt) | won | within 0.3 |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for stream, fname, r, cell, s, rs, (best, bs), (diff, sd, won, n), (gap, gsd, gwon, gn) in rows:
        name = f"**{fname}**" if DEFAULT.get(STREAMS[stream].kind) == fname else fname
        out.append(f"| {stream} | {name} | {int(100 * r)}% | {cell.algo} | {_fmt(s, r)} | {_fmt(rs, r)} | "
                   f"{100 * diff:+.2f} ± {100 * sd:.2f} | {won} of {n} | {_verdict(diff, sd, n)} | "
                   f"{best.algo} | {_fmt(bs, r)} | {100 * gap:+.2f} ± {100 * gsd:.2f} | {gwon} of {gn} | "
                   f"{'yes' if gap >= -0.003 else 'no'} |")
    return out


def _paired(mine: list[dict[str, float]], river: list[dict[str, float]]) -> tuple[float, float, int, int]:
    """Accuracy differences of a learner's replays minus river's on the same permutations
    (matched by ``run``): ``(mean, std, permutations won or tied, permutations)``."""
    theirs = {m["run"]: m["accuracy"] for m in river}
    d = np.array([m["accuracy"] - theirs[m["run"]] for m in mine if m["run"] in theirs])
    return float(d.mean()), float(d.std()), int((d >= 0).sum()), len(d)


def _chart(stream: str, cells: list[Cell], rivers: dict[str, Cell], n: int) -> str:
    """Accuracy against labels spent: the 4 best learner x featurizer at 10% (active, with the
    100% point), random querying of the best one, and river on the best one's vectors."""
    scored = sorted((c for c in _whole(cells) if c.results.get(("active", 0.10))),
                    key=lambda c: -_summary(c.results[("active", 0.10)])["acc"])

    def curve(c: Cell, mode: str) -> list[tuple[float, float]]:
        s = _sums(c)
        return [(s[(mode, r)]["q"] * n, s[(mode, r)]["acc"]) for r in BUDGETS if (mode, r) in s]

    series = []
    for c in scored[:4]:
        pts = curve(c, "active")
        if c.results.get(("all", 1.0)):
            pts.append((float(n), _summary(c.results[("all", 1.0)])["acc"]))
        series.append((f"{c.algo} / {c.featurizer}", pts, True))
    if scored:
        c = scored[0]
        series.append((f"{c.algo} random", curve(c, "random"), True))
        if c.featurizer in rivers:
            series.append((f"river / {c.featurizer}", curve(rivers[c.featurizer], "river"), True))
    return line_chart(series, title=f"{stream}: online accuracy against labels spent", x_label="labels spent",
                      y_label="online accuracy (mean over permutations)", log_x=True)


# -------------------------------------------------------------------------------- main
def warm_up(algos: dict[str, list[str]]) -> None:
    """Run every learner once in every mode on a few items of a stream of its task, so that
    its compiled (numba) code is loaded in this process and inherited by the forked ones
    rather than loaded again by each of them (one stream per task: the code is the same)."""
    first: dict[bool, tuple[str, str]] = {}
    for key in _DATA:
        first.setdefault(STREAMS[key[0]].binary, key)
    for binary, key in first.items():
        X, task = _DATA[key]
        for algo in algos["binary" if binary else "multiclass"]:
            for mode, r in (("active", 0.1), ("all", 1.0), ("random", 0.1)):
                if _refusal(algo, X.shape[1], task) is None:
                    replay_permuted(_setting(algo, mode, r), X[:20], task.codes[:20], task, SEED, 0)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("::")[0].strip())
    p.add_argument("--streams", default=",".join(STREAMS),
                   help="comma-separated subset of " + ", ".join(STREAMS))
    p.add_argument("--learners", default=None,
                   help="comma-separated subset (default: every registered one)")
    p.add_argument("--featurizers", default=None,
                   help="comma-separated names (default: every one of the kind)")
    p.add_argument("--runs", type=int, default=5, help="permutations per setting")
    p.add_argument("--limit", type=int, default=None, help="use only the first N items of each stream")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--cell-minutes", type=float, default=CELL_MINUTES,
                   help="CPU minutes a learner's replays of a whole stream may take; a slower one runs on "
                        f"the first items of each permutation (one of {', '.join(map(str, PREFIXES))})")
    p.add_argument("--prefix-minutes", type=float, default=PREFIX_MINUTES,
                   help="CPU minutes the replays of a slower learner's prefixes may take (the longest "
                        "prefix that fits; none: listed as not run)")
    p.add_argument("--full", action="store_true",
                   help="every featurizer of each stream's kind (default: a new project's, "
                        "learners.features.DEFAULT) and the slow learners' prefixes (default: a learner "
                        "over --cell-minutes is listed as not run)")
    p.add_argument("--plan-only", action="store_true",
                   help="featurize, probe and print the plan's CPU time, then stop (no report)")
    p.add_argument("--no-river", action="store_true")
    p.add_argument("--no-final-models", action="store_true",
                   help="skip the exported-model (refit) and cold-start sections (append_final_models)")
    p.add_argument("--quick", action="store_true",
                   help="development subset: sms and mnist, 2000 items, 2 permutations, 4 learners")
    p.add_argument("--cache", default=str(default_cache()),
                   help="folder of the upload files written from the shared datasets and of the "
                        "featurized matrices (outside the repository)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "LABEL_EFFICIENCY.md"))
    args = p.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    if args.quick:
        args.streams, args.limit, args.runs = "sms,mnist", args.limit or 2000, min(args.runs, 2)
        args.learners = args.learners or "paa-i,d-ada,mpaa-i,md-ada"
    return args


def default_cache() -> Path:
    """``$LABEL_EFFICIENCY_CACHE``, else ``$XDG_CACHE_HOME/label_efficiency``, else
    ``/tmp/label_efficiency_cache``."""
    if os.environ.get("LABEL_EFFICIENCY_CACHE"):
        return Path(os.environ["LABEL_EFFICIENCY_CACHE"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "label_efficiency"
    return Path("/tmp/label_efficiency_cache")


#: the prefixes of the small-stream budgets section (:func:`short_stream_lines`)
SHORT_LENGTHS = (200, 500, 1800)


def short_stream_lines(names: list[str], command: str) -> list[str]:
    """The report's section of the default learner's achieved query ratio and online accuracy on the
    first ``SHORT_LENGTHS`` items of seeded orders of each stream in ``names`` featurized by its
    default featurizer (the section of ``benchmarks/budget_held.py``, :func:`short_streams`, on
    this run's matrices; a stream whose default featurizer was not run is left out)."""
    from benchmarks.budget_held import short_streams

    data = {}
    for name in names:
        key = (name, DEFAULT.get(STREAMS[name].kind))
        if key in _DATA:
            X, task = _DATA[key]
            data[name] = (STREAMS[name].kind, list(task.classes), X, task.codes)
    return ["", *short_streams(data, SHORT_LENGTHS, command)] if data else []


def append_final_models(out: Path, cache: Path, names: list[str], runs: int) -> None:
    """Append to the report the exported model on a held-out split beside a batch fit on every
    label (``benchmarks/refit.py --default-only``, the streams measured, at most 2 permutations:
    a new project's default learner alone, so that the whole command stays under 30 minutes;
    ``benchmarks/REFIT*.md`` have more permutations) and the cold
    start from class names (``benchmarks/cold_start.py``, when SMS and AG News are measured),
    each run by its own script's ``main`` and appended with its headings one level down."""
    from benchmarks import cold_start, refit

    parts = [(refit, ["--streams", ",".join(names), "--runs", str(min(runs, 2)), "--default-only"])]
    if {"sms", "ag_news"} <= set(names):
        parts.append((cold_start, ["--runs", str(runs)]))
    for module, extra in parts:
        part = out.with_name(f".{out.stem}.{module.__name__.rpartition('.')[2]}.md")
        module.main(["--cache", str(cache), "--out", str(part), *extra])
        text = part.read_text(encoding="utf-8")
        part.unlink()
        with out.open("a", encoding="utf-8") as fh:
            fh.write("\n" + "\n".join("#" + line if line.startswith("#") else line
                                       for line in text.splitlines()) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    t_start, load_start = time.monotonic(), os.getloadavg()[0]
    names = [s.strip() for s in args.streams.split(",") if s.strip()]
    unknown = [s for s in names if s not in STREAMS]
    if unknown:
        raise SystemExit(f"unknown stream(s) {unknown}; valid: {', '.join(STREAMS)}")
    featurizers = {}
    for kind in {STREAMS[s].kind for s in names}:
        listed = featurizer_names(kind)
        chosen = (([DEFAULT[kind]] if not args.full and DEFAULT.get(kind) in listed else listed)
                  if args.featurizers is None else [f for f in args.featurizers.split(",") if f in listed])
        featurizers[kind] = chosen or listed
    wanted = None if args.learners is None else set(args.learners.split(","))
    algos = {task: [a for a, spec in REGISTRY.items()
                    if task in spec.tasks and (wanted is None or a in wanted)]
             for task in ("binary", "multiclass")}
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    c0 = time.process_time()
    info = load_streams(names, featurizers, cache, args.limit)
    featurize_cpu = time.process_time() - c0
    _one_thread()
    warm_up(algos)
    cells = plan(info, algos, args.runs, args.cell_minutes * 60, args.prefix_minutes * 60, args.jobs,
                 not args.no_river, prefixes=args.full)
    if args.plan_only:
        return 0
    execute(cells, info, args.jobs)
    command = "python benchmarks/label_efficiency.py" + "".join(" " + a for a in args.argv)
    short = short_stream_lines(names, command)
    out = Path(args.out)
    svg_dir = out.parent / "label_efficiency"
    svg_dir.mkdir(parents=True, exist_ok=True)
    t = os.times()
    facts = RunFacts(time.monotonic() - t_start, load_start, os.getloadavg()[0],
                     t.children_user + t.children_system, t.user + t.system, featurize_cpu)
    write_report(out, svg_dir, info, cells, args, facts)
    with out.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(short) + "\n")
    if not args.no_final_models:
        append_final_models(out, cache, names, args.runs)
        title, first, rest = out.read_text(encoding="utf-8").split("\n\n", 2)
        whole = (f"The whole command, the two sections appended at the end included: "
                 f"{(time.monotonic() - t_start) / 60:.1f} min, load average {os.getloadavg()[0]:.1f} "
                 f"at the end.")
        out.write_text(f"{title}\n\n{first} {whole}\n\n{rest}", encoding="utf-8")
    print(f"wrote {out} in {facts.wall / 60:.1f} min; CPU {facts.cpu_workers / 60:.1f} min in workers, "
          f"{facts.cpu_main / 60:.1f} min in main", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
