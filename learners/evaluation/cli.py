"""``python -m learners.replay``: the papers' online active protocol on a labelled file.

::

    python -m learners.replay --data FILE [--format libsvm|csv|mat|auto] [--algo NAME ...]
        [--kind text|url|image [--featurizer NAME] [--feature KEY=VALUE ...]]
        [--param KEY=VALUE ...] [--grid KEY=V1,V2,... | KEY=2^-5..2^5]
        [--delta D | --delta-sweep 2^-10..2^10 | --target-query-ratio R] [--budget R]
        [--scale none|maxabs|minmax|standard|l2|standard+l2|standard-half] [--bias]
        [--runs N] [--seed S] [--positive LABEL] [--jobs J] [--refit [--holdout F]]
        [--json OUT.json] [--csv OUT.csv] [--plot OUT.svg]

Every setting (algorithm x grid point x delta) is replayed ``--runs`` times, run r on the
permutation and decision uniforms of ``(seed, r)`` (the same for every algorithm), and its
mean and std over runs are reported. Without ``--algo`` the replay runs a new project's learner
(``learners.DEFAULT_ALGORITHM``: ``auto``, docs/algorithms/auto.md). ``--data`` may be
repeated to merge files into one stream (e.g. a train and a test part). Ranges ``2^a..2^b``
step 1 in the exponent unless ``:s`` is appended (``2^-8..2^2:0.5``). Ratios are fractions
(``0.1``) or percents (``10%``).
With ``--kind``, FILE is one of the app's upload files (CSV/JSONL of text or URLs with a
``label`` column, ZIP of images with ``labels.csv`` or class folders, each optionally ``.gz``)
featurized as a new project of that kind would be (:mod:`.raw`); ``--featurizer`` and
``--feature`` choose and configure another featurizer, ``--list-featurizers KIND`` lists the
names (a new project's default first). ``--param`` and ``--grid`` keys apply to the algorithms
that declare them. The primary metric (F1 for binary tasks, accuracy for multiclass; ``--metric``
to choose another, e.g. ``sum`` or ``cost`` for cost-sensitive runs) marks the best setting.
``--refit`` batch-refits each run's queried items at its end (importance weights 1/q; self-trained
on the items it did not query when its check finds that better) and checks the refit against
the online learner (docs/algorithms/refit.md); ``--holdout F`` keeps the last
fraction F of each permutation out of the stream and scores the online, refit and exported
models on it. Errors end with one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import re
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, NoReturn

import numpy as np
import scipy.sparse as sp

from ..features import DEFAULT, featurizer_names
from ..registry import DEFAULT_ALGORITHM, REGISTRY, make
from .charts import line_chart
from .datasets import FORMATS, SCALES, load, preprocess
from .engine import (
    METRICS,
    Result,
    Setting,
    Task,
    calibrate,
    make_task,
    run_once,
    settings_for,
    summarise,
)
from .final_model import run_with_refit
from .metrics import HIGHER_IS_BETTER
from .per_class import beats_baseline
from .raw import RAW_KINDS, featurizer_config, load_raw

SCHEMA = "learners.replay/1"


class CliError(ValueError):
    """A user error: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(message)


_POW = re.compile(r"^\s*2\^(-?\d+(?:\.\d+)?)\s*\.\.\s*2\^(-?\d+(?:\.\d+)?)\s*(?::\s*(\d+(?:\.\d+)?))?\s*$")


def parse_values(text: str) -> list[str]:
    """``V1,V2,...`` or ``2^a..2^b[:step]`` (exponent step, default 1) -> list of value strings."""
    m = _POW.match(text)
    if m:
        a, b = float(m.group(1)), float(m.group(2))
        step = float(m.group(3) or 1.0)
        if step <= 0 or b < a:
            raise CliError(f"bad range {text!r}: need 2^a..2^b with a <= b and a positive step")
        count = round((b - a) / step) + 1
        return [repr(2.0 ** (a + k * step)) for k in range(count)]
    values = [v.strip() for v in text.split(",")]
    if not values or any(v == "" for v in values):
        raise CliError(f"bad value list {text!r}: expected V1,V2,... or 2^a..2^b")
    return values


def parse_ratio(text: str) -> float:
    """``0.1`` or ``10%`` -> 0.1; CliError outside (0, 1]."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise CliError(f"bad ratio {text!r}: expected a fraction like 0.1 or a percent like 10%") from None
    if not 0.0 < value <= 1.0:
        raise CliError(f"ratio {text!r} must lie in (0, 1] (or (0%, 100%])")
    return value


def _key_value(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise CliError(f"bad {what} {text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m learners.replay", description=__doc__.split("::")[0].strip(),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", action="append", default=[], metavar="FILE",
                   help="labelled data file (repeat to merge files into one stream)")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    p.add_argument("--kind", default=None, choices=RAW_KINDS,
                   help="FILE is an upload of the app holding items of this kind (raw stream)")
    p.add_argument("--featurizer", default=None, metavar="NAME",
                   help="featurizer of the --kind (default: a new project's)")
    p.add_argument("--feature", action="append", default=[], metavar="KEY=VALUE",
                   help="featurizer option (repeatable)")
    p.add_argument("--list-featurizers", default=None, choices=RAW_KINDS, metavar="KIND",
                   help="print the featurizer names of KIND, one per line (the default first), and exit")
    p.add_argument("--label-column", default=None,
                   help="CSV label column (name or 0-based index; default last)")
    p.add_argument("--n-features", type=int, default=None, help="force the number of features (LIBSVM)")
    p.add_argument("--algo", action="append", default=[], metavar="NAME",
                   help=f"registered learner (repeatable; default: a new project's, "
                        f"{DEFAULT_ALGORITHM['multiclass']}): {', '.join(sorted(REGISTRY))}")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2|KEY=2^a..2^b")
    knob = p.add_mutually_exclusive_group()
    knob.add_argument("--delta", type=float, default=None, metavar="D")
    knob.add_argument("--delta-sweep", default=None, metavar="2^a..2^b")
    knob.add_argument("--target-query-ratio", default=None, metavar="R")
    p.add_argument("--budget", default=None, metavar="R", help="online control of delta (or p) to ratio R")
    p.add_argument("--scale", default="none", choices=SCALES)
    p.add_argument("--bias", action="store_true", help="append a constant feature")
    p.add_argument("--runs", type=int, default=1, metavar="N")
    p.add_argument("--seed", type=int, default=0, metavar="S")
    p.add_argument("--positive", default=None, metavar="LABEL", help="positive class (binary / one-vs-rest)")
    p.add_argument("--metric", default=None, choices=sorted(HIGHER_IS_BETTER), help="primary metric")
    p.add_argument("--jobs", type=int, default=1, metavar="J")
    p.add_argument("--json", default=None, metavar="OUT.json")
    p.add_argument("--csv", default=None, metavar="OUT.csv")
    p.add_argument("--plot", default=None, metavar="OUT.svg")
    p.add_argument("--refit", action="store_true",
                   help="after each run, batch-refit the queried items (importance weights 1/q; self-trained "
                        "on the items not queried when the check finds that better) and check "
                        "the refit against the online learner (docs/algorithms/refit.md)")
    p.add_argument("--holdout", default=None, metavar="F",
                   help="with --refit: hold out the last fraction F of each run's permutation and score "
                        "the online, refit and exported models on it")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--per-item", action="store_true",
                   help="disable the block fast path (same results, slower)")
    return p


# ---------------------------------------------------------------- parallel evaluation
_DATA: dict[tuple[str, bool], sp.csr_matrix] = {}
_TASK: dict[str, Any] = {}


def _run_task(args: tuple[Setting, int, int, bool]) -> dict[str, float]:
    setting, seed, run, fast = args
    X = _DATA[(setting.scale, setting.bias)]
    if _TASK.get("refit"):
        return run_with_refit(setting, X, _TASK["task"], seed, run, fast, _TASK["holdout"])
    return run_once(setting, X, _TASK["task"], seed, run, fast)


class Evaluator:
    """Runs every setting ``runs`` times (in ``jobs`` forked processes) and summarises it."""

    def __init__(self, runs: int, seed: int, jobs: int, fast: bool, progress: Any) -> None:
        self.runs, self.seed, self.fast, self.progress = runs, seed, fast, progress
        self.pool = None
        if jobs > 1:
            self.pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"))

    def __call__(self, settings: Sequence[Setting]) -> list[Result]:
        tasks = [(s, self.seed, r, self.fast) for s in settings for r in range(self.runs)]
        if self.progress is not None:
            self.progress.total = (self.progress.total or 0) + len(tasks)
            self.progress.refresh()
        outs = []
        mapped = self.pool.map(_run_task, tasks) if self.pool is not None else map(_run_task, tasks)
        for out in mapped:
            outs.append(out)
            if self.progress is not None:
                self.progress.update(1)
        results = []
        for k, s in enumerate(settings):
            mean, std = summarise(outs[k * self.runs:(k + 1) * self.runs])
            results.append(Result(s, mean, std, self.runs))
        return results

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


# ---------------------------------------------------------------------------- main flow
def _check_args(args: argparse.Namespace) -> None:
    if not args.data:
        raise CliError("the following arguments are required: --data")
    if not args.algo:  # a new project's learner (both tasks: auto); its task is checked on the data
        args.algo, args.default_algo = [DEFAULT_ALGORITHM["multiclass"]], True
    if args.kind is None and (args.featurizer is not None or args.feature):
        raise CliError("--featurizer and --feature need --kind (the data are raw items)")
    if args.kind is not None and (args.format != "auto" or args.label_column is not None
                                  or args.n_features is not None):
        raise CliError("--format, --label-column and --n-features do not apply to --kind uploads")
    for name in args.algo:
        if name not in REGISTRY:
            raise CliError(f"unknown algorithm {name!r}; valid: {', '.join(sorted(REGISTRY))}")
    if args.runs < 1:
        raise CliError(f"--runs must be >= 1, got {args.runs}")
    if args.jobs < 1:
        raise CliError(f"--jobs must be >= 1, got {args.jobs}")
    if args.delta is not None and not args.delta > 0:
        raise CliError(f"--delta must be > 0, got {args.delta}")
    if args.budget is not None and args.target_query_ratio is not None:
        raise CliError("--budget and --target-query-ratio cannot be combined")
    if args.holdout is not None and not args.refit:
        raise CliError("--holdout needs --refit")


def _collect(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, list[str]]]:
    common: dict[str, Any] = {}
    for text in args.param:
        k, v = _key_value(text, "--param")
        common[k] = v
    grid: dict[str, list[str]] = {}
    for text in args.grid:
        k, v = _key_value(text, "--grid")
        if k in grid:
            raise CliError(f"--grid {k} given twice")
        grid[k] = parse_values(v)
    if args.delta is not None:
        common["delta"] = args.delta
    if args.delta_sweep is not None:
        grid["delta"] = parse_values(args.delta_sweep)
    declared = {p.name for a in args.algo for p in REGISTRY[a].all_params()} | {"scale", "bias"}
    for key in [*common, *grid]:
        if key not in declared:
            raise CliError(f"parameter {key!r} is not declared by {', '.join(args.algo)}; "
                           f"valid: {', '.join(sorted(declared))}")
    if "scale" in common or "bias" in common:
        raise CliError("use --scale/--bias (or --grid scale=.../bias=...) for preprocessing")
    return common, grid


def primary_metric(args_metric: str | None, task: Task) -> str:
    return args_metric or ("f1" if task.binary else "accuracy")


def mark_best(results: list[Result], metric: str) -> None:
    """Flag the best result overall (``best``) and per algorithm (``extra['best_of_algo']``)."""
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
    scored = [r for r in results if metric in r.mean]
    if not scored:
        raise CliError(f"metric {metric!r} does not apply to this task")
    max(scored, key=lambda r: sign * r.mean[metric]).best = True
    for algo in {r.setting.algo for r in scored}:
        mine = [r for r in scored if r.setting.algo == algo]
        for r in mine:
            r.extra["best_of_algo"] = False
        max(mine, key=lambda r: sign * r.mean[metric]).extra["best_of_algo"] = True


def run_experiment(args: argparse.Namespace) -> dict[str, Any]:
    """Load, evaluate every setting and return the JSON document (see :data:`SCHEMA`)."""
    _check_args(args)
    common, grid = _collect(args)
    target = parse_ratio(args.target_query_ratio) if args.target_query_ratio is not None else None
    budget = parse_ratio(args.budget) if args.budget is not None else None
    features = None
    if args.kind is not None:
        options = dict(_key_value(text, "--feature") for text in args.feature)
        features = featurizer_config(args.kind, args.featurizer, options)
        ds = load_raw(args.data, args.kind, features)
    else:
        ds = load(args.data, args.format, n_features=args.n_features, label_column=args.label_column)
    binary_only = [a for a in args.algo if REGISTRY[a].cls.binary]
    task = make_task(ds.y, args.positive, binary=True if binary_only else None)
    if getattr(args, "default_algo", False):
        args.algo = [DEFAULT_ALGORITHM["binary" if task.binary else "multiclass"]]
    if not task.binary and binary_only:
        raise CliError(f"{', '.join(binary_only)} need a binary task: give --positive LABEL")
    settings = [s for a in args.algo
                for s in settings_for(a, common, grid, args.scale, args.bias, budget)]
    for s in settings:  # refuse up front what cannot be built (e.g. an oversized OASIS filter)
        try:
            make(s.algo, n_features=ds.X.shape[1] + int(s.bias), classes=list(task.classes), **s.params)
        except ValueError as exc:
            raise CliError(f"{s.algo}: {exc}") from None
    _DATA.clear()  # one data set per experiment
    for s in settings:
        if (s.scale, s.bias) not in _DATA:
            _DATA[(s.scale, s.bias)] = preprocess(ds.X, s.scale, s.bias)
    _TASK["task"] = task
    _TASK["refit"] = args.refit
    _TASK["holdout"] = 0.0 if args.holdout is None else parse_ratio(args.holdout)
    if not _TASK["holdout"] < 1.0:
        raise CliError(f"--holdout must be below 1, got {args.holdout}")
    metric = primary_metric(args.metric, task)
    progress = None
    if not args.quiet:
        from tqdm import tqdm

        progress = tqdm(total=0, unit="run", file=sys.stderr, desc="replay", dynamic_ncols=True)
    evaluate = Evaluator(args.runs, args.seed, args.jobs, not args.per_item, progress)
    try:
        results = (evaluate(settings) if target is None
                   else [calibrate(s, target, evaluate) for s in settings])
    finally:
        evaluate.close()
        if progress is not None:
            progress.close()
    mark_best(results, metric)
    counts = {str(c): int(np.sum(task.codes == k)) for k, c in enumerate(task.classes)}
    data = {"source": ds.source, "n_items": int(ds.X.shape[0]), "n_features": int(ds.X.shape[1]),
            "classes": list(task.classes), "class_counts": counts, "binary": task.binary,
            "positive": task.positive}
    if args.kind is not None:  # a raw stream: how its items were featurized
        data.update(kind=args.kind, featurizer=features)
    return {
        "schema": SCHEMA,
        "data": data,
        "protocol": {"runs": args.runs, "seed": args.seed, "primary_metric": metric,
                     "target_query_ratio": target, "budget": budget, "fast_path": not args.per_item},
        "results": [dict(r.as_json(), best_of_algo=r.extra.get("best_of_algo", False)) for r in results],
    }


# ------------------------------------------------------------------------------ outputs
def featurizer_names_listed(kind: str) -> list[str]:
    """The featurizer names of ``kind``, a new project's default first."""
    names = featurizer_names(kind)
    return [DEFAULT[kind], *(n for n in names if n != DEFAULT[kind])]


def _label(r: dict[str, Any]) -> str:
    active = r["params"].get("query") == "active"
    shown = {k: v for k, v in r["params"].items() if k not in ("query", "p") or not active}
    parts = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(shown.items())]
    if r["scale"] != "none" or r["bias"]:
        parts.append(f"scale={r['scale']}{'+bias' if r['bias'] else ''}")
    return " ".join(parts)


def write_csv(doc: dict[str, Any], path: str) -> None:
    """One row per setting: identification columns, then ``<metric>_mean`` / ``<metric>_std``."""
    metrics = [m for m in METRICS if any(m in r["mean"] for r in doc["results"])]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["algo", "delta", "params", "scale", "bias", "budget", "runs", "best", "target_reached",
                    *[f"{m}_{s}" for m in metrics for s in ("mean", "std")]])
        for r in doc["results"]:
            cal = r["calibration"]
            w.writerow([r["algo"], r["delta"], json.dumps(r["params"], sort_keys=True), r["scale"], r["bias"],
                        r["budget"], r["runs"], r["best"], "" if cal is None else cal["reached"],
                        *[r[s].get(m, "") for m in metrics for s in ("mean", "std")]])


def plot_svg(doc: dict[str, Any], path: str) -> None:
    """Primary metric against query ratio, one series per algorithm."""
    metric = doc["protocol"]["primary_metric"]
    series = []
    for algo in dict.fromkeys(r["algo"] for r in doc["results"]):
        mine = [r for r in doc["results"] if r["algo"] == algo]
        pts = [(r["mean"]["query_ratio"], r["mean"][metric]) for r in mine if metric in r["mean"]]
        others = {json.dumps({k: v for k, v in r["params"].items() if k not in ("delta", "p")},
                             sort_keys=True) + r["scale"] + str(r["bias"]) for r in mine}
        series.append((algo, pts, len(others) == 1))
    name = doc["data"]["source"].split("/")[-1]
    svg = line_chart(series, title=f"{metric} vs query ratio: {name} ({doc['protocol']['runs']} runs)",
                     x_label="query ratio", y_label=f"online {metric} (mean over runs)")
    with open(path, "w") as fh:
        fh.write(svg)


def print_table(doc: dict[str, Any], out: Any = None) -> None:
    """The settings' table (primary metric, macro-F1, balanced accuracy, query ratio, speed; a
    setting whose macro-F1 does not beat the majority-class baseline's is marked), then
    :func:`print_per_class`."""
    out = sys.stdout if out is None else out
    metric = doc["protocol"]["primary_metric"]
    print(f"{'algo':<16} {metric:>8} {'+-':>7} {'macroF1':>8} {'bal.acc':>8} {'query%':>7} {'items/s':>10}"
          "  setting", file=out)
    for r in doc["results"]:
        m, s = r["mean"], r["std"]
        flag = "  *best*" if r["best"] else ""
        cal = r["calibration"]
        miss = "  (target not reached)" if cal is not None and not cal["reached"] else ""
        below = "  (not above the majority baseline)" if not beats_baseline(m, "macro_f1") else ""
        print(f"{r['algo']:<16} {m.get(metric, float('nan')):8.4f} {s.get(metric, float('nan')):7.4f} "
              f"{m['macro_f1']:8.4f} {m['balanced_accuracy']:8.4f} "
              f"{100 * m['query_ratio']:7.2f} {m['items_per_second']:10.0f}  {_label(r)}{flag}{miss}{below}",
              file=out)
        if "refit_chosen" in m:  # --refit: the check, and the held-out accuracies with --holdout
            held = "".join(f", held-out {k[8:]} {m[k]:.4f}" for k in
                           ("holdout_online", "holdout_refit", "holdout_exported") if k in m)
            check = (f"online {m['refit_cv_online']:.4f}, refit {m['refit_cv_refit']:.4f}, "
                     if "refit_cv_online" in m else "not tried (too few labels), ")
            print(f"{'':<16} refit check: {check}refit kept in {m['refit_chosen']:.0%} of runs{held}",
                  file=out)
    print_per_class(doc, out)


def _interval(m: dict[str, float], name: str) -> str:
    return f"{m[name + '_iw']:.3f} [{m[name + '_iw_low']:.3f}, {m[name + '_iw_high']:.3f}]"


def print_per_class(doc: dict[str, Any], out: Any) -> None:
    """Per setting: per class precision, recall and F1, then macro-F1, balanced accuracy and the
    majority-class baseline, each exact (every round's class is known in a replay) and as the
    importance-weighted estimate from the queried rounds alone with its 95% interval
    (docs/estimates.md); means over runs (of the interval's ends too)."""
    runs = doc["protocol"]["runs"]
    print(f"\nper class: exact | importance-weighted estimate [95% interval]"
          f"{f' (means over {runs} runs)' if runs > 1 else ''}", file=out)
    for r in doc["results"]:
        m = r["mean"]
        print(f"{r['algo']} {_label(r)}", file=out)
        for c in doc["data"]["classes"]:
            cells = "  ".join(f"{f} {m[f'{f}[{c}]']:.3f} | {_interval(m, f'{f}[{c}]')}"
                              for f in ("precision", "recall", "f1"))
            print(f"  {c!s:<14} {cells}", file=out)
        for name, base in (("accuracy", "baseline_accuracy"), ("macro_f1", "baseline_macro_f1"),
                           ("balanced_accuracy", "baseline_balanced_accuracy")):
            print(f"  {name:<18} {m[name]:.3f} | {_interval(m, name)}   majority baseline "
                  f"{m[base]:.3f} | {_interval(m, base)}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 2 user error)."""
    try:
        args = build_parser().parse_args(argv)
        if args.list_featurizers is not None:
            print("\n".join(featurizer_names_listed(args.list_featurizers)))
            return 0
        doc = run_experiment(args)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(doc, fh, indent=1, allow_nan=False)
        if args.csv:
            write_csv(doc, args.csv)
        if args.plot:
            plot_svg(doc, args.plot)
        print_table(doc)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
