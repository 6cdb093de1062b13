"""Cold start from class names: write ``benchmarks/COLD_START.md``.

::

    python benchmarks/cold_start.py             # SMS and AG News, 5 permutations
    python benchmarks/cold_start.py --runs 1

SMS spam and AG News (:mod:`benchmarks.raw_streams`) featurized as a new text project's
(``minilm-ngrams``, matrices cached as ``benchmarks/label_efficiency.py`` caches them). Each
learner runs with the replay's budget at 10% on the permutations of
``learners.evaluation.engine.run_seeds``, once from zero weights (the papers' start) and once
from :func:`learners.cold_start.class_prior` of the plain class names ("ham" / "spam";
"World" / "Sports" / "Business" / "Sci/Tech"), same permutation, same decision uniforms. Online
accuracy (the prediction made before the label) on the first 100 and 500 items, and the labels
spent on them, mean ± std over the permutations; the difference is paired. The machine's load
average is written beside the figures. Figures are never asserted by tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.label_efficiency import default_cache, featurized
from benchmarks.raw_streams import STREAMS, prepare
from learners.budget import BudgetController
from learners.cold_start import PRIOR_SCALE, class_prior
from learners.evaluation.engine import Setting, fresh_learner, make_task, permuted, replay, run_seeds
from learners.evaluation.raw import featurizer_config
from learners.features import DEFAULT, make_featurizer
from learners.registry import validate_params

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 0.10
PREFIXES = (100, 500)
SEED = 0
LEARNERS = {True: ("paa-i", "d-amd"), False: ("mpaa-i", "md-amd")}


def run(setting: Setting, Xp, yp, task, run_no: int,
        prior: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Online correctness (bool (n,)) and queries (bool (n,)) of one replay on the first
    max(PREFIXES) items, from zero weights or from ``prior``."""
    n = max(PREFIXES)
    learner = fresh_learner(setting, Xp.shape[1], task)
    if prior is not None:
        learner.start_from(prior)
    _, rng = run_seeds(SEED, run_no)
    trace = replay(learner, Xp[:n], yp[:n], rng, budget=BudgetController.for_learner(BUDGET, learner))
    return trace.pred == yp[:n], trace.queried


def _fmt(a: list[float]) -> str:
    return f"{np.mean(a):.3f} ± {np.std(a):.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("::")[0].strip())
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--scale", type=float, default=PRIOR_SCALE)
    p.add_argument("--cache", default=str(default_cache()))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "COLD_START.md"))
    args = p.parse_args(argv)
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    paths = prepare(cache, ["sms", "ag_news"])
    table = []
    for name in ("sms", "ag_news"):
        stream = STREAMS[name]
        fname = DEFAULT[stream.kind]
        X, y = featurized(paths[name], stream.kind, fname, cache)
        task = make_task(y)
        featurizer = make_featurizer(featurizer_config(stream.kind, fname))
        names = {str(c): str(c) for c in task.classes}  # plain class names
        prior = class_prior(featurizer, task.classes, names, task.binary, args.scale)
        for algo in LEARNERS[task.binary]:
            setting = Setting(algo, validate_params(algo, {}), budget=BUDGET)
            acc: dict[tuple[str, int], list[float]] = {}
            labels: dict[tuple[str, int], list[float]] = {}
            for r in range(args.runs):
                Xp, yp = permuted(X, task, SEED, r)
                for start, pr in (("zero", None), ("names", prior)):
                    right, queried = run(setting, Xp, yp, task, r, pr)
                    for n in PREFIXES:
                        acc.setdefault((start, n), []).append(float(right[:n].mean()))
                        labels.setdefault((start, n), []).append(float(queried[:n].sum()))
            for n in PREFIXES:
                diff = 100 * (np.array(acc[("names", n)]) - np.array(acc[("zero", n)]))
                table.append(f"| {name} | {', '.join(map(str, task.classes))} | {algo} | {n} "
                             f"| {_fmt(acc[('zero', n)])} ({np.mean(labels[('zero', n)]):.0f}) "
                             f"| {_fmt(acc[('names', n)])} ({np.mean(labels[('names', n)]):.0f}) "
                             f"| {diff.mean():+.1f} ± {diff.std():.1f} |")
                print(table[-1], file=sys.stderr, flush=True)
    minutes = (time.monotonic() - t0) / 60
    lines = ["# Cold start from class names", "",
             f"Written by `python benchmarks/cold_start.py` in {minutes:.1f} min, load average "
             f"{load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (2 cores shared with "
             "other work), "
             f"{args.runs} permutations, prior scale {args.scale:g}. Online accuracy on the first items of a "
             f"new text project (`minilm-ngrams`) with a {BUDGET:.0%} budget, starting from zero weights "
             "(the papers) or from the class names' rows (`learners.cold_start.class_prior`, "
             "docs/algorithms/cold_start.md); labels spent in brackets; the difference is paired "
             "(same permutation, same decision uniforms), in points.", "",
             "| stream | class names | learner | first items | from zero | from the names "
             "| difference (pt) |",
             "|---|---|---|---|---|---|---|", *table, ""]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out} in {minutes:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
