"""A faster text featurizer at the same accuracy? ``wordllama-ngrams`` against ``minilm-ngrams``:
writes benchmarks/FAST_TEXT.md.

    .venv/bin/python benchmarks/fast_text.py [--runs 3] [--cache DIR] [--variants]

For SMS spam (5,574 texts) and AG News (7,600 texts), each featurizer at a new project's config
(``learners.features.default_config``):

* speed: the whole stream featurized in chunks of 1,000 texts (as an upload is), texts/s of
  wall time and per CPU second of this process (all its threads), with the load average;
* accuracy: online accuracy at a 10% label budget (the replay's ``--budget 0.1``), mean and std
  over ``--runs`` permutations (``learners.evaluation.engine.run_once``, the same permutations
  and decision uniforms for both featurizers): D-ADA on SMS, MD-AMD on AG News (the best
  learners of benchmarks/LABEL_EFFICIENCY.md on minilm-ngrams).

``--variants`` instead measures options of ``wordllama-ngrams`` on AG News (character n-grams,
heavier or lighter word block, more hash columns, row norm: richer n-gram blocks) and writes
benchmarks/FAST_TEXT_VARIANTS.md.

The bar (docs/performance.md): at least 1,000 texts/s on 2 cores and accuracy within 0.3 point
of ``minilm-ngrams`` on both streams. ``--cache`` keeps the featurized matrices (keyed by
stream and featurizer) so a re-run measures the speed again but not MiniLM's minutes twice.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(ROOT))

import learners  # noqa: E402
from learners.evaluation import raw_datasets  # noqa: E402
from learners.evaluation.engine import Setting, make_task, run_once  # noqa: E402
from learners.features import default_config, make_featurizer  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets"
OUT = ROOT / "benchmarks" / "FAST_TEXT.md"
FEATURIZERS = ("minilm-ngrams", "wordllama-ngrams")
STREAMS = {"sms": "d-ada", "ag_news": "md-amd"}
BUDGET = 0.1


def stream(name: str) -> tuple[list[str], np.ndarray]:
    if name == "sms":
        texts, labels = raw_datasets.sms(DATA)
        return texts, np.array(labels, dtype=object)
    texts, classes = raw_datasets.ag_news(DATA)
    return texts, np.array(classes)


def featurize(name: str, texts: list[str], cache: Path | None,
              key: str) -> tuple[sp.csr_matrix, float, float]:
    """(rows, texts/s wall, texts per CPU s); speed measured even when the rows are cached
    (MiniLM on the first 1,000 texts only then, to spare minutes)."""
    f = make_featurizer(default_config("text", name))
    f.transform(["warm up"])  # weights loaded, compiled kernels ready: not counted
    cached = cache / f"{key}-{name}.npz" if cache is not None else None
    timed = texts if cached is None or not cached.exists() or name != "minilm-ngrams" else texts[:1000]
    wall, cpu = time.perf_counter(), time.process_time()
    parts = [f.transform(timed[i:i + 1000]) for i in range(0, len(timed), 1000)]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if cached is not None and cached.exists():
        X = sp.load_npz(cached).tocsr()
    else:
        X = sp.vstack(parts, format="csr")
        if cached is not None:
            sp.save_npz(cached, X)
    return X, len(timed) / wall, len(timed) / cpu


def accuracy(X: sp.csr_matrix, y: np.ndarray, algo: str, runs: int) -> tuple[float, float]:
    task = make_task(y)
    setting = Setting(algo, learners.validate_params(algo, {}), budget=BUDGET)
    accs = [run_once(setting, X, task, 0, r)["accuracy"] for r in range(runs)]
    return float(np.mean(accs)), float(np.std(accs))


VARIANTS: tuple[dict[str, float | int], ...] = (
    {}, {"char_weight": 0.5}, {"char_weight": 1.0}, {"word_weight": 2.5},
    {"char_weight": 1.0, "word_weight": 2.5}, {"norm": 2.5}, {"char_weight": 1.0, "norm": 2.5},
    {"word_weight": 1.0}, {"n_features": 2**20}, {"word_weight": 1.0, "n_features": 2**20},
)
VARIANTS_OUT = ROOT / "benchmarks" / "FAST_TEXT_VARIANTS.md"


def variants(runs: int, out: Path) -> None:
    """``wordllama-ngrams`` with each of :data:`VARIANTS` on AG News: texts/s and accuracy at 10%."""
    texts, y = stream("ag_news")
    algo = STREAMS["ag_news"]
    rows = []
    for opts in VARIANTS:
        load = os.getloadavg()[0]
        f = make_featurizer({**default_config("text", "wordllama-ngrams"), **opts})
        f.transform(["warm up"])
        wall = time.perf_counter()
        X = sp.vstack([f.transform(texts[i:i + 1000]) for i in range(0, len(texts), 1000)], format="csr")
        per_wall = len(texts) / (time.perf_counter() - wall)
        mean, std = accuracy(X, y, algo, runs)
        label = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v:g}"
                          for k, v in opts.items()) or "none (the defaults)"
        rows.append(f"| {label} | {per_wall:,.0f} | {load:.1f} | {mean:.4f} ± {std:.4f} |")
        print(rows[-1], flush=True)
    lines = [
        "# Richer n-gram blocks for wordllama-ngrams on AG News",
        "",
        f"Written by `python benchmarks/fast_text.py --variants --runs {runs}` on {os.cpu_count()} cores "
        "shared with other work (load average beside each speed). Each row: `wordllama-ngrams` at a new "
        f"project's config with the options named changed; {algo} at a 10% label budget, mean ± std over "
        f"{runs} permutations, as in benchmarks/FAST_TEXT.md (where `minilm-ngrams` scores 0.8607).",
        "",
        "| options changed | texts/s (wall) | load | accuracy at 10% |",
        "|---|---|---|---|",
        *rows,
    ]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cache", type=Path, help="folder for the featurized matrices (outside the repository)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--variants", action="store_true",
                    help="options of wordllama-ngrams on AG News instead (benchmarks/FAST_TEXT_VARIANTS.md)")
    args = ap.parse_args()
    if args.variants:
        variants(args.runs, VARIANTS_OUT)
        return
    if args.cache is not None:
        args.cache.mkdir(parents=True, exist_ok=True)
    rows = []
    for key, algo in STREAMS.items():
        texts, y = stream(key)
        for name in FEATURIZERS:
            load = os.getloadavg()[0]
            X, per_wall, per_cpu = featurize(name, texts, args.cache, key)
            mean, std = accuracy(X, y, algo, args.runs)
            rows.append((key, len(texts), name, per_wall, per_cpu, load, algo, mean, std))
            print(f"{key} {name}: {per_wall:,.0f} texts/s wall, {per_cpu:,.0f} per CPU s (load {load:.1f}); "
                  f"{algo} at {BUDGET:.0%}: {mean:.4f} ± {std:.4f}", flush=True)
    lines = [
        "# A faster text featurizer: wordllama-ngrams against minilm-ngrams",
        "",
        f"Written by `python benchmarks/fast_text.py --runs {args.runs}` on {os.cpu_count()} cores shared "
        "with other work (load average beside each speed). Speed: the whole stream in chunks of 1,000 "
        "texts (MiniLM on the first 1,000 when its rows were cached); accuracy: online, at a 10% label "
        f"budget, mean ± std over {args.runs} permutations, each featurizer at a new project's config.",
        "",
        "| stream | featurizer | texts/s (wall) | texts per CPU s | load | learner | accuracy at 10% |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, n, name, per_wall, per_cpu, load, algo, mean, std in rows:
        lines.append(f"| {key} ({n:,}) | {name} | {per_wall:,.0f} | {per_cpu:,.0f} | {load:.1f} | {algo} | "
                     f"{mean:.4f} ± {std:.4f} |")
    lines += ["", "Bar: >= 1,000 texts/s and accuracy within 0.3 point (0.003) of minilm-ngrams on both "
              "streams."]
    for key in STREAMS:
        base, new = (next(r for r in rows if r[0] == key and r[2] == f) for f in FEATURIZERS)
        lines.append(f"- {key}: wordllama-ngrams - minilm-ngrams = {new[7] - base[7]:+.4f}; "
                     f"{new[3] / base[3]:.0f}x the texts/s")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
