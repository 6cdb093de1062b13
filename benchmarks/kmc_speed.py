"""KMC speed: milliseconds per decision and per refit at 100, 300 and 1000 labels.

    PYTHONPATH=. .venv/bin/python benchmarks/kmc_speed.py [--labels 100 300 1000] [--repeats 5]

Data: scikit-learn's digits (10 classes, 64 features, pixels / 16), a seeded permutation.
For each size n the learner is given the first n items as labels (``max_basis = n`` so none is
forgotten; the default 500 caps the model there), fitted once from scratch, then timed:

* decision: ``decide`` on 200 further items (median ms per item);
* warm refit: one more label and its warm-started refit (``warm_iter`` outer iterations);
* full refit: the refit from scratch (``max_iter`` outer iterations) done every
  ``full_refit_every`` labels.

The refits are timed through the learner's private ``_refit`` so that one label costs one refit
of the kind measured; medians of ``--repeats``.

``--stream N`` also replays the first N MNIST test digits (PNG bytes through the app's default
image featurizer) with the default KMC at a 10% budget (budget mode, ``docs/budget.md``) and
writes the wall time, the achieved query ratio and the online accuracy to
``benchmarks/KMC_SPEED.md`` (issue 14: a 10,000-item stream in under a minute).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import learners


def measure(n: int, repeats: int) -> dict[str, float]:
    """Median ms of a decision, a warm refit and a full refit with ``n`` labels."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm].astype(int)
    lrn = learners.make("kmc", n_features=64, classes=list(range(10)), max_basis=max(n + 1, 2),
                        refit_every=10**4, full_refit_every=10**5)
    for i in range(n):
        lrn.learn(X[i], y[i])
    lrn._refit(full=True)
    rng = np.random.default_rng(1)
    decide = []
    for i in range(n, n + 200):
        t = time.perf_counter()
        lrn.decide(X[i % len(y)], rng)
        decide.append(time.perf_counter() - t)
    warm, full = [], []
    for r in range(repeats):
        state = learners.to_bytes(lrn)
        lrn.learn(X[(n + 300 + r) % len(y)], y[(n + 300 + r) % len(y)])
        t = time.perf_counter()
        lrn._refit(full=False)
        warm.append(time.perf_counter() - t)
        t = time.perf_counter()
        lrn._refit(full=True)
        full.append(time.perf_counter() - t)
        lrn = learners.from_bytes(state)
    return {"decision_ms": 1e3 * statistics.median(decide), "warm_refit_ms": 1e3 * statistics.median(warm),
            "full_refit_ms": 1e3 * statistics.median(full), "bases": lrn.n_bases()}


def stream(n: int, budget: float = 0.1) -> dict[str, float]:
    """Seconds, query ratio and online accuracy of the default KMC on ``n`` MNIST digits."""
    from benchmarks.raw_streams import DATA
    from learners.budget import BudgetController
    from learners.evaluation.engine import replay_per_item
    from learners.evaluation.raw_datasets import mnist, png_bytes
    from learners.features import default_config, make_featurizer

    images, y = mnist(DATA, n)
    feat = make_featurizer(default_config("image"))
    X = feat.transform([png_bytes(im) for im in images])
    lrn = learners.make("kmc", n_features=X.shape[1], classes=list(range(10)))
    ctl = BudgetController.for_learner(budget, lrn)
    t = time.perf_counter()
    trace = replay_per_item(lrn, X, y, np.random.default_rng(0), ctl)
    return {"seconds": time.perf_counter() - t, "ratio": float(trace.queried.mean()),
            "accuracy": float((trace.pred == y).mean()), "n_features": X.shape[1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=int, nargs="*", default=[100, 300, 1000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--stream", type=int, default=0, help="also replay N MNIST digits at a 10%% budget")
    args = ap.parse_args()
    if args.stream:
        r = stream(args.stream)
        report = Path(__file__).resolve().parent / "KMC_SPEED.md"
        report.write_text(
            "# KMC on a stream: wall time at a 10% budget\n\n"
            f"`PYTHONPATH=. .venv/bin/python benchmarks/kmc_speed.py --stream {args.stream} --labels`\n\n"
            f"First {args.stream} MNIST test digits (PNG, default image featurizer, {r['n_features']} "
            "features), default KMC, budget mode at 10%, one pass, on this machine (2 shared cores).\n\n"
            "| items | seconds | query ratio | online accuracy |\n|---|---|---|---|\n"
            f"| {args.stream} | {r['seconds']:.1f} | {r['ratio']:.4f} | {r['accuracy']:.4f} |\n")
        print(report.read_text())
    print(f"{'labels':>7} {'decision ms':>12} {'warm refit ms':>14} {'full refit ms':>14} {'bases':>6}")
    for n in args.labels:
        r = measure(n, args.repeats)
        print(f"{n:>7} {r['decision_ms']:>12.2f} {r['warm_refit_ms']:>14.1f} {r['full_refit_ms']:>14.1f} "
              f"{r['bases']:>6}")


if __name__ == "__main__":
    main()
