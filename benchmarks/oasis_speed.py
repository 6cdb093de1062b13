"""Microseconds per stream item of ``oasis`` (decide + learn/observe), m = 1000, d = 10 and 64.

Usage: ``python benchmarks/oasis_speed.py [--m 1000] [--items 1000] [--repeats 5]``.

Each repeat builds a fresh learner, feeds a warm-up of 200 items (two initial labels, then
the active rule with an oracle), then times ``--items`` further items, each a ``decide``
followed by ``learn`` (queried) or ``observe``; resample-move events inside the timed
items are counted and included in the cost. Reports the median over repeats, the spread,
and the per-item cost of a decision alone (score and prediction, no update) side by side.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import learners


def sliced_stream(n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniform items on [-0.5, 0.5]^d with a gap of width 0.1 around x_1 = 0; y = [x_1 > 0]."""
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    X[:, 0] = rng.choice([-1.0, 1.0], size=n) * rng.uniform(0.05, 0.5, size=n)
    return X, (X[:, 0] > 0).astype(int)


def one_repeat(m: int, d: int, items: int, seed: int) -> tuple[float, float, int]:
    """(microseconds per item, microseconds per decision alone, resample-moves timed)."""
    rng = np.random.default_rng(seed)
    warm = 200
    X, y = sliced_stream(warm + items, d, rng)
    first = [int(np.argmax(y == 1)), int(np.argmax(y == 0))]
    order = np.r_[first, np.setdiff1d(np.arange(len(y)), first)]
    X, y = X[order], y[order]
    lrn = learners.make("oasis", n_features=d, classes=[0, 1], m=m, seed=seed)

    def feed(t: int) -> None:
        dec = lrn.decide(X[t], rng)
        if t < 2 or dec.queried:
            lrn.learn(X[t], y[t])
        else:
            lrn.observe(X[t])

    for t in range(warm):
        feed(t)
    moves = lrn.n_moves
    start = time.perf_counter()
    for t in range(warm, warm + items):
        feed(t)
    per_item = (time.perf_counter() - start) / items * 1e6
    moves = lrn.n_moves - moves
    start = time.perf_counter()
    for t in range(warm, warm + items):
        lrn.query_probability(X[t])
    per_decision = (time.perf_counter() - start) / items * 1e6
    return per_item, per_decision, moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"oasis, m = {args.m}, {args.items} timed items per repeat, median of {args.repeats} repeats")
    print(f"{'d':>4} {'us/item':>10} {'min':>9} {'max':>9} {'us/decision':>12} {'moves/repeat':>13}")
    for d in (10, 64):
        runs = [one_repeat(args.m, d, args.items, seed) for seed in range(args.repeats)]
        per_item = [r[0] for r in runs]
        print(f"{d:>4} {statistics.median(per_item):>10.1f} {min(per_item):>9.1f} {max(per_item):>9.1f} "
              f"{statistics.median(r[1] for r in runs):>12.1f} "
              f"{statistics.median(r[2] for r in runs):>13}")


if __name__ == "__main__":
    main()
