"""URL featurizers compared on the labelled URLs: write ``benchmarks/URL_FEATURES.md``.

::

    python benchmarks/url_features.py               # 3 permutations
    python benchmarks/url_features.py --runs 1      # one permutation (about 25 min at load 17)

The evidence behind ``url-ngrams`` and its options (learners/features/url_ngrams.py), and
behind it being a new project's URL featurizer. Both URL streams of :mod:`benchmarks.raw_streams`
(``urls``: benign / malicious, ``urls4``: the four types of the same 10,000 URLs) are read
through the replay's raw path (:func:`learners.evaluation.raw.load_raw`) with each variant of
``VARIANTS``: a featurizer name and the options that differ from its new-project config.
Each variant x learner (``LEARNERS``: the ones that led on ``url-lexical`` in
benchmarks/LABEL_EFFICIENCY.md) is replayed with the learner's defaults (nothing tuned) at
each budget of ``BUDGETS`` (the replay's ``--budget``) and with every label, on ``--runs``
permutations (those of :func:`learners.evaluation.engine.run_seeds`); the table gives the
online accuracy (prediction before the label, every item), mean ± std, and the achieved
query ratio. Featurizing speed: items per CPU second of this process on one core.

For the new-project variant, river's ``EntropySampler`` + logistic regression is replayed on
the same vectors exactly as benchmarks/label_efficiency.py does it (its ``river_once``, learning
rate tuned on permutation 0 at 10%), the peer the learners are asked to match.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.label_efficiency import RIVER_LR, river_once
from benchmarks.raw_streams import prepare
from learners.evaluation.engine import Setting, Task, make_task, run_once
from learners.evaluation.raw import featurizer_config, load_raw
from learners.features import DEFAULT
from learners.registry import validate_params

ROOT = Path(__file__).resolve().parents[1]
STREAMS = ("urls", "urls4")
#: (label, featurizer name, options that differ from the featurizer's new-project config)
VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("url-lexical", "url-lexical", {}),
    ("url-ngrams", "url-ngrams", {}),
    ("url-ngrams, row norm 1", "url-ngrams", {"norm": 1.0}),
    ("url-ngrams, row norm 2", "url-ngrams", {"norm": 2.0}),
    ("url-ngrams, intercept 0.5", "url-ngrams", {"intercept": 0.5}),
    ("url-ngrams, 2-4-grams", "url-ngrams", {"ngram_max": 4}),
)
LEARNERS = {"urls": ("soal", "d-amd"), "urls4": ("md-amd",)}
BUDGETS = (0.05, 0.10, 0.20, None)  # None: every label
SEED = 0

_DATA: dict[tuple[str, int], tuple[sp.csr_matrix, Task]] = {}


def featurize(paths: dict[str, Path]) -> dict[tuple[str, int], float]:
    """Every stream with every variant into ``_DATA`` (inherited by the forked workers); returns
    the one-core items per CPU second of each."""
    speed = {}
    for stream in STREAMS:
        for v, (_, name, options) in enumerate(VARIANTS):
            c0 = time.process_time()
            with threadpool_limits(limits=1):
                ds = load_raw([paths[stream]], "url", featurizer_config("url", name, options))
            speed[(stream, v)] = ds.X.shape[0] / (time.process_time() - c0)
            _DATA[(stream, v)] = (ds.X, make_task(ds.y))
    return speed


def replay(job: tuple[str, int, str, float | None, int]) -> tuple[tuple, dict[str, float]]:
    """One replay of ``(stream, variant, algo, budget, run)``."""
    stream, v, algo, budget, run = job
    X, task = _DATA[(stream, v)]
    if budget is None:
        setting = Setting(algo, validate_params(algo, {"query": "all"}))
    else:
        setting = Setting(algo, validate_params(algo, {}), budget=budget)
    out = run_once(setting, X, task, SEED, run)
    return job, {"accuracy": out["accuracy"], "query_ratio": out["query_ratio"]}


def river(job: tuple[str, int, float, float, int]) -> tuple[tuple, dict[str, float]]:
    """river's peer on ``(stream, variant, budget, learning rate, run)``."""
    stream, v, budget, lr, run = job
    X, task = _DATA[(stream, v)]
    return job, river_once(X, task, budget, lr, run)


def cell(results: list[dict[str, float]]) -> str:
    acc = [r["accuracy"] for r in results]
    q = float(np.mean([r["query_ratio"] for r in results]))
    return f"{np.mean(acc):.3f} ± {np.std(acc):.3f} ({q:.1%})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="permutations per setting")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--cache", default=str(ROOT / "var" / "bench-streams"),
                        help="folder for the streams' upload files")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "URL_FEATURES.md"))
    args = parser.parse_args(argv)
    load, t0 = os.getloadavg(), time.monotonic()
    speed = featurize(prepare(Path(args.cache), list(STREAMS)))
    default = next(v for v, (label, _, _) in enumerate(VARIANTS) if label == DEFAULT["url"])
    jobs = [(s, v, a, b, r) for s in STREAMS for v in range(len(VARIANTS)) for a in LEARNERS[s]
            for b in BUDGETS for r in range(args.runs)]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = dict(pool.map(replay, jobs))
        tuning = dict(pool.map(river, [(s, default, 0.1, lr, 0) for s in STREAMS for lr in RIVER_LR]))
        best_lr = {s: max(RIVER_LR, key=lambda lr, s=s: tuning[(s, default, 0.1, lr, 0)]["accuracy"])
                   for s in STREAMS}
        peer = dict(pool.map(river, [(s, default, b, best_lr[s], r) for s in STREAMS
                                     for b in BUDGETS if b is not None for r in range(args.runs)]))
    lines = [
        "# URL featurizers on the labelled URLs",
        "",
        f"Written by `python benchmarks/url_features.py --runs {args.runs}` in "
        f"{(time.monotonic() - t0) / 60:.1f} min ({args.jobs} jobs; load average {load[0]:.1f} at the "
        f"start, {os.cpu_count()} cores). Online accuracy (prediction before the label, every item), "
        f"mean ± std over {args.runs} permutation(s), achieved query ratio in brackets; learners at "
        "their defaults with the replay's `--budget`; `all` = every label. A variant is "
        "`url-ngrams` with one option changed from its new-project config (2- to 5-grams, "
        "lowercased, rows of norm 1.5, no intercept column). Items/s: featurizing on one core per "
        f"CPU second. A new project's URL featurizer: `{DEFAULT['url']}`.",
    ]
    for s in STREAMS:
        lines += ["", f"## {s}", "", "| featurizer | items/s | learner | 5% | 10% | 20% | all |",
                  "|---|---|---|---|---|---|---|"]
        for v, (label, _, _) in enumerate(VARIANTS):
            for a in LEARNERS[s]:
                cells = [cell([done[(s, v, a, b, r)] for r in range(args.runs)]) for b in BUDGETS]
                lines.append(f"| {label} | {speed[(s, v)]:.0f} | {a} | {' | '.join(cells)} |")
        cells = [cell([peer[(s, default, b, best_lr[s], r)] for r in range(args.runs)])
                 for b in BUDGETS if b is not None]
        lines.append(f"| {VARIANTS[default][0]} | | river (lr {best_lr[s]:g}) | {' | '.join(cells)} | |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
