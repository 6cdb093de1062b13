"""Featurizers on raw streams: write ``benchmarks/FEATURIZERS.md`` and the speeds the console shows.

::

    python benchmarks/featurizers.py            # every stream (about 10 min on 2 idle cores)
    python benchmarks/featurizers.py --jobs 1   # the same, one cell at a time: writes speeds.json
    python benchmarks/featurizers.py --quick    # the first 1,500 items of each stream

For each raw stream (:mod:`benchmarks.raw_streams`: SMS spam, AG News, the 10,000 MNIST test
digits as PNGs, 10,000 URLs benign / malicious; plus ``usps`` of its unseen streams, the 9,298 USPS
digits of ``matlab/USPS.mat`` as 16x16 PNGs, a second digit set for the image choice) and every
featurizer of its kind (``learners.features.featurizer_names``):

* **items/s**: the upload file read and featurized through the replay's raw path
  (:func:`learners.evaluation.raw.load_raw`, the app's parser and featurizer) on one core
  (BLAS held to one thread), per second of this process's CPU time, so that other work on a
  shared machine does not move it; the wall-clock figure is reported beside it;
* **online accuracy** (predicted before each label, on every item, permutation 0 of
  :func:`learners.evaluation.engine.run_seeds`) of the best of the cheap first-order learners
  of the task (``CANDIDATES``) with every label, and with the replay's 10% budget
  (``--budget 0.1``: ``learners.budget.BudgetController``), with the achieved query ratio.
  KMC and the OASIS family are left out: their per-item cost on these widths is measured
  elsewhere (benchmarks/LABEL_EFFICIENCY.md measures every learner).

The (stream, featurizer) cells run in ``--jobs`` worker processes (default 2). With
``--jobs 1`` each featurizer has the machine's cores to itself, as in the app's ingest (the
text embedding encodes on as many threads as the process has CPUs), and its speed on them
(all its streams' items over all their wall-clock seconds) is written to
``learners/features/speeds.json``, which the console shows beside each featurizer choice
(:func:`learners.features.measured_speed`). The figure comes from this run on this machine:
run it idle (the report states the load average). With more jobs the cores are shared
between cells, so speeds.json is left alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from threadpoolctl import threadpool_limits

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.raw_streams import Stream, prepare, stream_named
from learners.evaluation.engine import Setting, make_task, run_once
from learners.evaluation.raw import featurizer_config, load_raw
from learners.features import DEFAULT, SPEEDS_FILE, featurizer_names
from learners.registry import validate_params

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("sms", "ag_news", "mnist", "usps", "urls")
CANDIDATES = {True: ("paa-i", "paa-ii", "pea", "cspaa", "d-ada"),
              False: ("mpaa-i", "mpaa-ii", "mpea", "md-ada")}
BUDGET = 0.10
SEED = 0


def stream_files(cache: Path) -> dict[str, tuple[Stream, Path]]:
    return {n: (stream_named(n), path) for n, path in prepare(cache, list(NAMES)).items()}


def measure(stream: Stream, path: Path, name: str, limit: int | None) -> dict:
    """Featurizing speed and the best candidate's online accuracy, all labels and 10% budget."""
    t0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1):
        ds = load_raw([path], stream.kind, featurizer_config(stream.kind, name))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    X, y = (ds.X, ds.y) if limit is None else (ds.X[:limit], ds.y[:limit])
    task = make_task(y)
    out = {"stream": stream.name, "name": name, "kind": stream.kind, "n": X.shape[0], "d": X.shape[1],
           "items": ds.X.shape[0], "seconds": seconds, "cpu": cpu}
    for mode in ("all", "budget"):
        best = None
        for algo in CANDIDATES[task.binary]:
            if mode == "all":
                setting = Setting(algo, validate_params(algo, {"query": "all"}))
            else:
                setting = Setting(algo, validate_params(algo, {}), budget=BUDGET)
            m = run_once(setting, X, task, SEED, 0)
            if best is None or m["accuracy"] > best[1]["accuracy"]:
                best = (algo, m)
        out[mode] = {"algo": best[0], "accuracy": best[1]["accuracy"],
                     "query_ratio": best[1]["query_ratio"]}
    print(f"{stream.name} / {name}: {ds.X.shape[0] / cpu:.0f} items/s (CPU), "
          f"all {out['all']['accuracy']:.3f} "
          f"({out['all']['algo']}), 10% {out['budget']['accuracy']:.3f} ({out['budget']['algo']}, "
          f"q={out['budget']['query_ratio']:.3f})", file=sys.stderr, flush=True)
    return out


def write_report(out: Path, results: list[dict], args: argparse.Namespace, load: tuple[float, ...]) -> None:
    lines = [
        "# Featurizers on raw streams",
        "",
        f"Written by `python benchmarks/featurizers.py{' --quick' if args.quick else ''}` "
        f"(load average at the start {load[0]:.1f}, {os.cpu_count()} cores; figures from one run, "
        "permutation 0). Items/s: upload file read and featurized through the replay's raw path on "
        "one core, per CPU second (wall clock beside it, slowed by whatever else ran). Accuracy: "
        "online (prediction before the label, every item) of the best of "
        f"{', '.join(CANDIDATES[True])} (binary) or {', '.join(CANDIDATES[False])} (multiclass), "
        f"with every label and with the replay's {BUDGET:.0%} budget (achieved query ratio q). "
        "**bold** = a new project's default (`learners.features.DEFAULT`).",
        "",
        "| stream | featurizer | items | width | items/s (CPU) | items/s (wall) | all labels | best "
        "| 10% budget | best | q |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        stream, name = r["stream"], r["name"]
        shown = f"**{name}**" if DEFAULT[r["kind"]] == name else name
        lines.append(f"| {stream} | {shown} | {r['n']} | {r['d']} | {r['items'] / r['cpu']:.0f} | "
                     f"{r['items'] / r['seconds']:.0f} | "
                     f"{r['all']['accuracy']:.3f} | {r['all']['algo']} | {r['budget']['accuracy']:.3f} | "
                     f"{r['budget']['algo']} | {r['budget']['query_ratio']:.3f} |")
    out.write_text("\n".join(lines) + "\n")


def speeds(results: list[dict]) -> dict[str, float]:
    """Items/s per featurizer name on the machine's cores: all its streams' items over all their
    wall-clock seconds (meaningful from a ``--jobs 1`` run on an idle machine)."""
    items: dict[str, float] = {}
    wall: dict[str, float] = {}
    for r in results:
        items[r["name"]] = items.get(r["name"], 0) + r["items"]
        wall[r["name"]] = wall.get(r["name"], 0.0) + r["seconds"]
    return {name: round(items[name] / wall[name], 1) for name in sorted(items)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="first 1,500 items of each stream")
    parser.add_argument("--cache", default=str(ROOT / "var" / "bench-streams"),
                        help="folder for the streams' upload files")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "FEATURIZERS.md"))
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    files = stream_files(Path(args.cache))
    limit = 1500 if args.quick else None
    cells = [(*files[s], name, limit) for s in NAMES for name in featurizer_names(files[s][0].kind)]
    cells.sort(key=lambda c: c[2] != "minilm")  # the slowest first, so the workers end together
    with ProcessPoolExecutor(args.jobs) as pool:
        done = list(pool.map(measure, *zip(*cells, strict=True)))
    order = {(s, n): i for i, (s, n) in enumerate((s, n) for s in NAMES
                                                   for n in featurizer_names(files[s][0].kind))}
    results = sorted(done, key=lambda r: order[(r["stream"], r["name"])])
    (Path(args.cache) / "featurizers-results.json").write_text(json.dumps(results, indent=1))
    write_report(Path(args.out), results, args, load)
    if not args.quick and args.jobs == 1:
        SPEEDS_FILE.write_text(json.dumps(speeds(results), indent=1, sort_keys=True) + "\n")
    elif not args.quick:
        print(f"{SPEEDS_FILE} left alone: {args.jobs} jobs share the cores (--jobs 1 writes it)",
              file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
