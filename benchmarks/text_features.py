"""Which text features let the learners work: write ``benchmarks/TEXT_FEATURES.md``.

::

    python benchmarks/text_features.py                  # SMS and AG News, 5 permutations
    python benchmarks/text_features.py --runs 2 --streams sms

The two text streams of :mod:`benchmarks.raw_streams` (SMS spam, AG News in 4 classes) are
embedded once by the ``minilm`` featurizer (a new project's config, read through the replay's
raw path and cached by :func:`benchmarks.label_efficiency.featurized`), and each config of
``minilm-ngrams`` in ``CONFIGS`` is built from those embeddings with
:meth:`learners.features.text_hybrid.HybridTextFeaturizer.combine` (the rows its ``transform``
gives, without embedding again). ``CONFIGS`` spans the blocks (embedding alone, with char
n-grams, with word n-grams, both), their weights and the row norm.

For each stream x config, online accuracy (prediction before the label, every item) of the
task's best learner (``LEARNERS``, registry defaults) with the replay's 10% budget
(``learners.budget.BudgetController``); for the configs of ``FULL`` (``minilm``'s rows and the
two named hybrids) also at 5% and 20% and with every label, and river's EntropySampler +
logistic regression (:func:`benchmarks.label_efficiency.river_once`, learning rate
``RIVER_LR``) on the hybrids' vectors at 5%, 10% and 20%; mean +- std over ``--runs``
permutations (``learners.evaluation.engine.run_seeds``, as ``python -m learners.replay``).
The report states the load average; figures are never asserted by tests.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.label_efficiency import SEED, featurized, river_once, river_rows
from benchmarks.raw_streams import prepare
from learners.evaluation.engine import Setting, Task, make_task, permuted, run_once
from learners.evaluation.raw import read_records
from learners.features import default_config, embedding, make_featurizer, measured_speed
from learners.registry import validate_params

ROOT = Path(__file__).resolve().parents[1]
STREAMS = ("sms", "ag_news")
BUDGETS = (0.05, 0.10, 0.20, 1.0)
#: the best learner of each task on these streams (benchmarks/LABEL_EFFICIENCY.md); the others
#: are measured there, on a new project's config of each featurizer
LEARNERS = {True: "d-amd", False: "md-amd"}
#: river's learning rate: the one label_efficiency.py's tuning (0.1, 1, 10) picked on both text streams
RIVER_LR = 1.0
#: (label, options of minilm-ngrams over a new project's config); the weights and the norm are
#: given in full, so a label keeps its meaning when a new project's defaults move
CONFIGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("embedding (= minilm)", {"word_weight": 0.0, "norm": 1.0}),
    ("embedding, norm 2", {"word_weight": 0.0, "norm": 2.0}),
    ("char n-grams only", {"embedding_weight": 0.0, "char_weight": 1.0, "word_weight": 0.0, "norm": 2.0}),
    ("embedding + char 1", {"char_weight": 1.0, "word_weight": 0.0, "norm": 2.0}),
    ("embedding + word 1, norm 1", {"word_weight": 1.0, "norm": 1.0}),
    ("embedding + word 1, norm 2 (minilm-ngrams' rows before 2026-11-25)", {"word_weight": 1.0, "norm": 2.0}),
    ("embedding + char 1 + word 0.5, norm 1", {"char_weight": 1.0, "word_weight": 0.5, "norm": 1.0}),
    ("minilm-ngrams: embedding + word 1.5, norm 1.5", {"word_weight": 1.5, "norm": 1.5}),
    ("minilm-chars: embedding + char 1 + word 0.5, norm 2",
     {"char_weight": 1.0, "word_weight": 0.5, "norm": 2.0}),
)
#: configs replayed at every budget and with every label (the others: at 10% only)
FULL = ("embedding (= minilm)", CONFIGS[-2][0], CONFIGS[-1][0])

_DATA: dict[tuple[str, str], tuple[sp.csr_matrix, Task]] = {}


def build(names: Sequence[str], cache: Path) -> None:
    """Fill ``_DATA`` with every stream x config."""
    paths = prepare(cache, list(names))
    for name in names:
        rows, y = featurized(paths[name], "text", "minilm", cache)
        embedded = rows[:, :embedding.DIM].toarray()  # a new project's minilm: + intercept column
        texts = [r.raw for r in read_records(paths[name], "text")]
        task = make_task(y)
        for label, options in CONFIGS:
            f = make_featurizer({**default_config("text", "minilm-ngrams"), **options})
            _DATA[(name, label)] = (f.combine(embedded, texts), task)
        print(f"{name}: {len(texts)} texts, {len(CONFIGS)} configs", file=sys.stderr, flush=True)


def plan(name: str, label: str) -> tuple[float, ...]:
    """The budgets a config is replayed at (``FULL``: all of ``BUDGETS``; the others 10%)."""
    return BUDGETS if label in FULL else (0.10,)


def run(job: tuple[str, str, str, float, int]) -> tuple[tuple, float, float]:
    """One replay (or river when the learner is ``river:<lr>``): accuracy and query ratio."""
    name, label, algo, ratio, r = job
    X, task = _DATA[(name, label)]
    if algo.startswith("river:"):
        Xp, yp = permuted(X, task, SEED, r)
        out = river_once(river_rows(Xp), yp, task, ratio, float(algo.split(":")[1]), r)
    elif ratio >= 1.0:
        out = run_once(Setting(algo, validate_params(algo, {"query": "all"})), X, task, SEED, r)
    else:
        out = run_once(Setting(algo, validate_params(algo, {}), budget=ratio), X, task, SEED, r)
    return job, out["accuracy"], out["query_ratio"]


def execute(jobs: list, pool: ProcessPoolExecutor) -> dict[tuple, list[tuple[float, float]]]:
    out: dict[tuple, list[tuple[float, float]]] = {}
    for job, acc, q in pool.map(run, jobs):
        out.setdefault(job[:4], []).append((acc, q))
    return out


def cell(values: list[tuple[float, float]] | None, budget: float) -> str:
    if not values:
        return ""
    v = np.array(values)
    q = "" if budget >= 1.0 else f" ({100 * v[:, 1].mean():.1f}%)"
    return f"{v[:, 0].mean():.3f} ± {v[:, 0].std():.3f}{q}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("::")[0].strip())
    p.add_argument("--streams", default=",".join(STREAMS))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--cache", default=os.environ.get("LABEL_EFFICIENCY_CACHE", "/tmp/label_efficiency_cache"))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "TEXT_FEATURES.md"))
    args = p.parse_args(argv)
    load, t0, c0 = os.getloadavg()[0], time.monotonic(), time.process_time()
    names = [s for s in args.streams.split(",") if s]
    build(names, Path(args.cache))
    labels = [label for label, _ in CONFIGS]
    res: dict[tuple, list] = {}
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        algo = {n: LEARNERS[_DATA[(n, labels[0])][1].binary] for n in names}
        res.update(execute([(n, c, algo[n], b, r) for n in names for c in labels
                            for b in plan(n, c) for r in range(args.runs)], pool))
        res.update(execute([(n, c, f"river:{RIVER_LR}", b, r) for n in names for c in FULL[1:]
                            for b in BUDGETS[:3] for r in range(args.runs)], pool))
    lines = [
        "# Text features on raw streams (minilm-ngrams configs)\n",
        f"Written by `python benchmarks/text_features.py {' '.join(argv or sys.argv[1:])}` in "
        f"{(time.monotonic() - t0) / 60:.1f} min ({args.jobs} jobs, {args.runs} permutations; load average "
        f"{load:.1f} at the start on 2 cores). Online accuracy, mean ± std over permutations, achieved "
        "query ratio in brackets; learners at their registry defaults with the replay's `--budget`; "
        "`all` = every label. Configs are `minilm-ngrams` options over a new project's "
        f"(`{default_config('text', 'minilm-ngrams')}`); 'embedding (= minilm)' gives the rows of a "
        "new project's `minilm`. river = EntropySampler + logistic regression "
        "(benchmarks/label_efficiency.py's loop, learning rate 1) on the two named hybrids' vectors. "
        "Configs other than minilm's rows and the two named ones: 10% budget only.\n",
        f"Embedding speed (minilm, as the console shows it, benchmarks/featurizers.py): "
        f"{measured_speed('minilm') or float('nan'):.0f} texts/s.\n"]
    for n in names:
        lines += [f"\n## {n} ({algo[n]}; river lr {RIVER_LR:g})\n",
                  "| config | learner | 5% | 10% | 20% | all |", "|---|---|---|---|---|---|"]
        for c in labels:
            for a in (algo[n], f"river:{RIVER_LR}"):
                cells = [cell(res.get((n, c, a, b)), b) for b in BUDGETS]
                if any(cells):
                    lines.append(f"| {c} | {a.split(':')[0]} | " + " | ".join(cells) + " |")
    lines.append(f"\nCPU time of the parent process: {time.process_time() - c0:.0f} s.\n")
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
