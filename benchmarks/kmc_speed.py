"""KMC speed: milliseconds per decision and per refit at 100, 300 and 1000 labels.

    PYTHONPATH=. .venv/bin/python benchmarks/kmc_speed.py [--labels 100 300 1000] [--repeats 5]

Data: scikit-learn's digits (10 classes, 64 features, pixels / 16), a seeded permutation.
For each size n the learner is given the first n items as labels (``max_basis = n`` so none is
forgotten; the default 500 caps the model there) with refits held off, then timed through the
public API only (``learners.from_state`` rebuilds the same model with another refit schedule, so
that the next ``learn`` costs exactly one refit of the kind measured):

* decision: ``decide`` on 200 further items (median ms per item);
* warm refit: one more label and its warm-started refit (``warm_iter`` outer iterations);
* full refit: one more label and the refit from scratch (``max_iter`` outer iterations) done
  every ``full_refit_every`` labels.

Medians of ``--repeats``.

``--stream N`` also replays the first N MNIST test digits (PNG bytes through the app's default
image featurizer) with the default KMC at 5% and 10% budgets (budget mode, ``docs/budget.md``)
and without a budget, and writes the wall and CPU time, the achieved query ratio and the online
accuracy to ``benchmarks/KMC_SPEED.md`` (a 10,000-item stream in under a minute). The
machine is shared: the report records the load average before and after each run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import learners
from learners.base import Learner
from learners.kmc import KMC

HELD_OFF = {"refit_every": 10**4, "refit_fraction": 0.0, "full_refit_every": 10**5}


def rescheduled(lrn: Learner, **schedule: Any) -> Learner:
    """The same model (state and all) with other refit parameters, through the public API."""
    state = lrn.get_state()
    state["meta"]["params"] = {**state["meta"]["params"], **schedule}
    return learners.from_state(state)


def timed_learn(lrn: Learner, x: np.ndarray, label: int) -> float:
    """Seconds of one ``learn`` call."""
    t = time.perf_counter()
    lrn.learn(x, label)
    return time.perf_counter() - t


def measure(n: int, repeats: int) -> dict[str, float]:
    """Median ms of a decision, a warm refit and a full refit with ``n`` labels."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm].astype(int)
    lrn = learners.make("kmc", n_features=64, classes=list(range(10)), max_basis=max(n + 2, 2),
                        **HELD_OFF)
    for i in range(n - 1):
        lrn.learn(X[i], y[i])
    lrn = rescheduled(lrn, full_refit_every=1)
    lrn.learn(X[n - 1], y[n - 1])  # the n-th label, fitted from scratch
    lrn = rescheduled(lrn, **HELD_OFF)
    assert isinstance(lrn, KMC)
    rng = np.random.default_rng(1)
    decide = []
    for i in range(n, n + 200):
        t = time.perf_counter()
        lrn.decide(X[i % len(y)], rng)
        decide.append(time.perf_counter() - t)
    warm, full = [], []
    for r in range(repeats):
        j = (n + 300 + r) % len(y)
        warm.append(timed_learn(rescheduled(lrn, refit_every=1), X[j], y[j]))
        full.append(timed_learn(rescheduled(lrn, full_refit_every=1), X[j], y[j]))
    return {"decision_ms": 1e3 * statistics.median(decide), "warm_refit_ms": 1e3 * statistics.median(warm),
            "full_refit_ms": 1e3 * statistics.median(full), "bases": lrn.n_bases()}


def stream(X: Any, y: np.ndarray, budget: float | None) -> dict[str, Any]:
    """Wall and CPU seconds, query ratio and online accuracy of the default KMC on one stream."""
    from learners.budget import BudgetController
    from learners.evaluation.engine import replay_per_item

    lrn = learners.make("kmc", n_features=X.shape[1], classes=list(range(10)))
    ctl = None if budget is None else BudgetController.for_learner(budget, lrn)
    load = os.getloadavg()[0]
    t, c = time.perf_counter(), time.process_time()
    trace = replay_per_item(lrn, X, y, np.random.default_rng(0), ctl)
    return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - c,
            "ratio": float(trace.queried.mean()), "accuracy": float((trace.pred == y).mean()),
            "load": (load, os.getloadavg()[0])}


def stream_report(n: int) -> str:
    """KMC_SPEED.md for the first ``n`` MNIST test digits."""
    from benchmarks.raw_streams import DATA
    from learners.evaluation.raw_datasets import mnist, png_bytes
    from learners.features import default_config, make_featurizer

    images, y = mnist(DATA, n)
    X = make_featurizer(default_config("image")).transform([png_bytes(im) for im in images])
    rows = []
    for budget in (0.05, 0.1, None):
        r = stream(X, y, budget)
        target = f"{budget:.0%} budget" if budget else "no budget (b = 0.1/1.1 = 0.091)"
        rows.append(f"| {target} | {r['seconds']:.1f} | {r['cpu']:.1f} | {r['ratio']:.4f} | "
                    f"{r['accuracy']:.4f} | {r['load'][0]:.1f} / {r['load'][1]:.1f} |")
    return ("# KMC on a stream: wall and CPU time\n\n"
            f"`PYTHONPATH=. .venv/bin/python benchmarks/kmc_speed.py --stream {n} --labels`\n\n"
            f"First {n} MNIST test digits (PNG, default image featurizer, {X.shape[1]} features, "
            "featurized before the clock starts), default KMC, one pass, on this machine (2 cores "
            "shared with other jobs: the wall time grows with the load average, the CPU time "
            "does not).\n\n"
            "| run | wall s | CPU s | query ratio | online accuracy | load average before / after |\n"
            "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=int, nargs="*", default=[100, 300, 1000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--stream", type=int, default=0, help="also replay N MNIST digits (5%%, 10%%, no budget)")
    args = ap.parse_args()
    if args.stream:
        report = Path(__file__).resolve().parent / "KMC_SPEED.md"
        report.write_text(stream_report(args.stream))
        print(report.read_text())
    print(f"{'labels':>7} {'decision ms':>12} {'warm refit ms':>14} {'full refit ms':>14} {'bases':>6}")
    for n in args.labels:
        r = measure(n, args.repeats)
        print(f"{n:>7} {r['decision_ms']:>12.2f} {r['warm_refit_ms']:>14.1f} {r['full_refit_ms']:>14.1f} "
              f"{r['bases']:>6}")


if __name__ == "__main__":
    main()
