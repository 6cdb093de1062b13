"""Items/second of a one-pass replay of paa-i, soal (diagonal) and d-ada on a8a at ~10% queries.

For each algorithm, in the same run and on the same permutation and uniforms:

* ``naive``: a straightforward per-item numpy transcription of the spec on dense rows;
* ``per-item``: the learner API, ``decide(x, rng)`` then ``learn(x, y)`` when queried, on
  pre-sliced CSR rows (as the app passes them);
* ``block``: ``decide_block`` on blocks + ``skip`` between queried items, the replay engine's
  fast path (:func:`learners.evaluation.engine.replay_fast`).

All three draw the same uniforms and must query the same items (checked). Delta is calibrated to
~10% queries by the engine's :func:`~learners.evaluation.engine.calibrate`. Prints the median of 5
repeats and the ratios to the naive loop. Usage:
``.venv/bin/python benchmarks/learners_throughput.py [--repeats 5]``
(reads ``libsvm_binary/a8a*.gz`` of the data sets, docs/architecture.md "Data sets").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import learners  # noqa: E402
from learners.evaluation.datasets import load  # noqa: E402
from learners.evaluation.engine import Result, Setting, calibrate, make_task, replay_fast  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets" / "libsvm_binary"
FILES = [DATA / "a8a.gz", DATA / "a8a.t.gz"]

CONFIGS = {
    "paa-i": dict(C=0.03),
    "soal": dict(covariance="diagonal", eta=1.0, gamma=10.0),
    "d-ada": dict(smoothing=1.0, eta=0.1, a_t="feature"),
}


def naive(name: str, X: np.ndarray, y: np.ndarray, u: np.ndarray, delta: float, p: dict) -> int:
    """Per-item numpy transcription of the spec (dense rows); returns the number of queries."""
    T, d = X.shape
    w = np.zeros(d)
    sig, s, theta = np.ones(d), np.zeros(d), np.zeros(d)
    n_q = 0
    for t in range(T):
        x, yt = X[t], y[t]
        m = w @ x
        if name == "paa-i":
            q = delta / (delta + abs(m))
        elif name == "soal":
            v = x @ (sig * x)
            rho = abs(m) - p["eta"] * p["gamma"] * v / (2 * p["gamma"] + 2 * v)
            q = 1.0 if rho <= 0 else delta / (delta + rho)
        else:
            v = np.sum(x * x / (p["smoothing"] + s))
            stat = abs(m) - 0.5 * p["eta"] / max(1.0, x @ x) * v
            q = 1.0 if stat <= 0 else delta / (delta + stat)
        if not u[t] < q:
            continue
        n_q += 1
        if yt * m >= 1.0:
            continue
        if name == "paa-i":
            w += min(p["C"], (1.0 - yt * m) / (x @ x)) * yt * x
        elif name == "soal":
            sig = sig - sig * x * x * sig / (p["gamma"] + v)
            w = w + p["eta"] * yt * sig * x
        else:
            g = -yt * x
            s = np.sqrt(s * s + g * g)
            theta += g
            w = -p["eta"] * theta / (p["smoothing"] + s)
    return n_q


def per_item(name: str, rows: list, y_cls: np.ndarray, u: np.ndarray, delta: float, p: dict) -> int:
    lrn = learners.make(name, n_features=123, classes=[-1, 1], delta=delta, **p)
    rng = _Uniforms(u)
    n_q = 0
    for x, yt in zip(rows, y_cls, strict=True):
        if lrn.decide(x, rng).queried:
            lrn.learn(x, yt)
            n_q += 1
    return n_q


def block(name: str, X: sp.csr_matrix, codes: np.ndarray, seed: int, delta: float, p: dict) -> int:
    lrn = learners.make(name, n_features=123, classes=[-1, 1], delta=delta, **p)
    return int(replay_fast(lrn, X, codes, np.random.default_rng(seed)).queried.sum())


class _Uniforms:
    """Feeds pre-drawn uniforms to ``decide`` (the draws ``replay_fast`` makes with the same seed)."""

    def __init__(self, u: np.ndarray) -> None:
        self.it = iter(u.tolist())

    def random(self) -> float:
        return next(self.it)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    data = load(FILES, n_features=123)
    X, task = data.X, make_task(data.y)
    if list(task.classes) != [-1, 1]:
        raise SystemExit(f"a8a: expected the classes -1 and +1, got {task.classes}")
    perm = np.random.default_rng(0).permutation(X.shape[0])
    Xp, codes = X[perm], task.codes[perm]
    dense = Xp.toarray()
    rows = [Xp[i] for i in range(Xp.shape[0])]
    y_pm = np.where(codes == 1, 1.0, -1.0)
    y_cls = np.where(codes == 1, 1, -1)
    seed = 1
    u = np.random.default_rng(seed).random(len(y_pm))
    n = len(y_pm)

    def ratios(settings: list[Setting]) -> list[Result]:
        return [Result(s, {"query_ratio": block(s.algo, Xp, codes, seed, s.params["delta"],
                                                {k: v for k, v in s.params.items() if k != "delta"}) / n},
                       {}, 1) for s in settings]

    print(f"a8a: {n} items, {X.shape[1]} features, {X.nnz / n:.1f} non-zeros per item; "
          f"median of {args.repeats} repeats")
    print(f"{'algorithm':10} {'delta':>9} {'queries':>8} {'naive/s':>10} {'per-item/s':>11} "
          f"{'block/s':>10} {'per-item/naive':>15} {'block/naive':>12}")
    for name, p in CONFIGS.items():
        delta = calibrate(Setting(name, dict(p, delta=1.0)), 0.10, ratios).setting.params["delta"]
        runs = {"naive": lambda name=name, p=p, delta=delta: naive(name, dense, y_pm, u, delta, p),
                "per-item": lambda name=name, p=p, delta=delta: per_item(name, rows, y_cls, u, delta, p),
                "block": lambda name=name, p=p, delta=delta: block(name, Xp, codes, seed, delta, p)}
        rates, queries = {}, {}
        for key, fn in runs.items():
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                queries[key] = fn()
                times.append(time.perf_counter() - t0)
            rates[key] = n / statistics.median(times)
        if len(set(queries.values())) != 1:
            raise SystemExit(f"{name}: the three loops disagree on the queries: {queries}")
        print(f"{name:10} {delta:9.4g} {queries['block'] / n:8.3f} {rates['naive']:10.0f} "
              f"{rates['per-item']:11.0f} {rates['block']:10.0f} "
              f"{rates['per-item'] / rates['naive']:15.2f} {rates['block'] / rates['naive']:12.2f}")


if __name__ == "__main__":
    main()
