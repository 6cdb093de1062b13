"""The exported model against a batch fit on every label: write ``benchmarks/REFIT.md``.

::

    python benchmarks/refit.py                  # every stream of LABEL_EFFICIENCY.md, 3 permutations
    python benchmarks/refit.py --streams sms --runs 1
    python benchmarks/refit.py --default-only   # auto's rows alone (as label_efficiency.py runs it)
    python benchmarks/refit.py --streams usps,digits --runs 2 --default-only \
        --out benchmarks/REFIT_UNSEEN.md        # digit sets the refit was not tuned on

For each stream of :mod:`benchmarks.raw_streams` (its default streams, or any of ``--streams``,
its unseen ones included) with a new project's featurizer of its kind
(the matrices cached as ``benchmarks/label_efficiency.py`` caches them, ``--cache``), each
permutation r (``learners.evaluation.engine.run_seeds``) is split: the last 30% of the permuted
items are held out, the first 70% are the stream. On the stream each learner runs with the
replay's budget at 10% and 20% (``--budget``), then :func:`learners.refit.refit` fits the
queried items (weights 1/q or flat, chosen by the check; self-trained on the items it did not
query when the check finds that better) and checks the fit against the online learner by
cross-validation on the labels; the model an export keeps is the refit when it won the check.
On the held-out 30%: the online model, the refit, the exported one, and a batch logistic
regression trained on every label of the 70% (scikit-learn's ``LogisticRegression``, C = 1,
lbfgs, multinomial for more than two classes: an independent implementation, not the refit's
code). Mean ± std over the permutations; the machine's load average is written beside the
figures. Figures are never asserted by tests.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.label_efficiency import default_cache, featurized
from benchmarks.raw_streams import STREAMS, UNSEEN_STREAMS, prepare, stream_named
from learners.evaluation.engine import Setting, make_task, permuted, replay_setting
from learners.evaluation.final_model import final_model_metrics, split_held_out
from learners.features import DEFAULT
from learners.registry import validate_params

ROOT = Path(__file__).resolve().parents[1]
HELD_OUT = 0.3
BUDGETS = (0.10, 0.20)
SEED = 0
#: the learners measured: a new project's default of each task (``auto``) and the best single
#: learner of LABEL_EFFICIENCY.md (the default before ``auto``, PAA-I / MPAA-I, was measured until
#: the self-trained refit: docs/algorithms/refit.md)
LEARNERS = {True: ("auto", "d-amd"), False: ("auto", "md-amd")}
COLUMNS = ("holdout_online", "holdout_refit", "holdout_exported")


def batch_all_labels(Xs, ys, Xh, yh) -> float:
    """Held-out accuracy of scikit-learn's logistic regression fitted on every stream label."""
    model = LogisticRegression(C=1.0, max_iter=2000)
    with threadpool_limits(1):  # as the refit (learners/refit.py): idle BLAS threads cost more than they give
        model.fit(Xs, ys)
    return float(np.mean(model.predict(Xh) == yh))


def _fmt(values: list[float]) -> str:
    a = np.asarray(values, dtype=float)
    return f"{np.nanmean(a):.3f} ± {np.nanstd(a):.3f}"


def _col(cell: dict[str, list[float]], key: str) -> list[float]:
    """A metric's values over the permutations (NaN when no permutation reported it)."""
    return cell.get(key, [float("nan")])


#: one permutation's outcome: the batch fit's held-out accuracy, and per (learner, budget) its metrics
RunOutcome = tuple[float, dict[tuple[str, float], dict[str, float]]]


def measure_run(name: str, path: Path, cache: Path, run: int, default_only: bool = False) -> RunOutcome:
    """Permutation ``run`` of the stream: the batch fit's held-out accuracy and, per (learner,
    budget), :func:`final_model_metrics` with the query ratio (module docstring); ``default_only``:
    the default learner alone."""
    stream = stream_named(name)
    X, y = featurized(path, stream.kind, DEFAULT[stream.kind], cache)
    task = make_task(y)
    Xp, yp = permuted(X, task, SEED, run)
    Xs, ys, Xh, yh = split_held_out(Xp, yp, HELD_OUT)
    batch = batch_all_labels(Xs, ys, Xh, yh)
    cells: dict[tuple[str, float], dict[str, float]] = {}
    for algo in LEARNERS[task.binary][:1] if default_only else LEARNERS[task.binary]:
        for budget in BUDGETS:
            setting = Setting(algo, validate_params(algo, {}), budget=budget)
            learner, trace = replay_setting(setting, Xs, ys, task, SEED, run)
            out = final_model_metrics(setting, learner, trace, Xs, ys, task, seed=run, held=(Xh, yh))
            out["query_ratio"] = float(trace.queried.mean())
            cells[(algo, budget)] = out
            print(name, algo, budget, run, {k: round(v, 4) for k, v in out.items()},
                  f"batch {batch:.4f}", file=sys.stderr, flush=True)
    return batch, cells


def section(name: str, path: Path, cache: Path, per_run: list[RunOutcome]) -> tuple[list[str], list[str]]:
    """The stream's section and its summary rows from its permutations' :func:`measure_run`."""
    stream = stream_named(name)
    fname = DEFAULT[stream.kind]
    X, y = featurized(path, stream.kind, fname, cache)
    runs = len(per_run)
    batch = [b for b, _ in per_run]
    rows: dict[tuple[str, float], dict[str, list[float]]] = {}
    for _, cells in per_run:
        for key, out in cells.items():
            for metric, value in out.items():
                rows.setdefault(key, {}).setdefault(metric, []).append(value)
    n_held = round(HELD_OUT * X.shape[0])
    lines = [f"## {name} ({X.shape[0]} items, {len(make_task(y).classes)} classes, featurizer `{fname}`)", "",
             f"Held out: {n_held} items; batch logistic regression on every label of the other "
             f"{X.shape[0] - n_held}: **{_fmt(batch)}**.", "",
             "| learner | budget | labels (ratio) | online model | refit | exported | refit chosen "
             "| self-trained | neighbours | check: online / refit (weighted CV) | exported - batch (pt) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    summary: list[str] = []
    for (algo, budget), cell in rows.items():
        gap = 100 * (np.mean(cell["holdout_exported"]) - np.mean(batch))
        lines.append(
            f"| {algo} | {budget:.0%} | {np.mean(cell['query_ratio']):.1%} "
            f"| {_fmt(cell['holdout_online'])} "
            f"| {_fmt(_col(cell, 'holdout_refit'))} | {_fmt(cell['holdout_exported'])} "
            f"| {int(sum(cell['refit_chosen']))} of {runs} "
            f"| {int(sum(cell['refit_self_trained']))} of {runs} "
            f"| {int(sum(cell['refit_neighbours']))} of {runs} "
            f"| {np.nanmean(_col(cell, 'refit_cv_online')):.3f} / "
            f"{np.nanmean(_col(cell, 'refit_cv_refit')):.3f} "
            f"| {gap:+.2f} |")
        summary.append(f"| {name} | {algo} | {budget:.0%} | {np.mean(cell['holdout_online']):.3f} "
                       f"| {np.mean(cell['holdout_exported']):.3f} | {np.mean(batch):.3f} | {gap:+.2f} |")
    per_perm = ", ".join(f"{budget:.0%}: " + " / ".join(
        f"{100 * (cells[(algo, budget)]['holdout_exported'] - b):+.2f}" for b, cells in per_run)
        for algo, budget in rows)
    lines += ["", f"Exported - batch per permutation (pt), {per_perm}.", ""]
    return lines, summary


def _measure_run(job: tuple[str, Path, Path, int, bool]) -> RunOutcome:
    with threadpool_limits(1):
        return measure_run(*job)


def command(args: argparse.Namespace) -> str:
    """The command line of this run: the options that differ from the defaults, but ``--cache``
    and an ``--out`` that is a dot-file (another script's part: label_efficiency.py appends it)."""
    words = ["python benchmarks/refit.py"]
    if args.streams != ",".join(STREAMS):
        words.append(f"--streams {args.streams}")
    words.append(f"--runs {args.runs}")
    if args.default_only:
        words.append("--default-only")
    out = Path(args.out).resolve()
    if out != ROOT / "benchmarks" / "REFIT.md" and not out.name.startswith("."):
        words.append(f"--out {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return " ".join(words)


def unseen_note(names: list[str]) -> str:
    """A sentence naming the streams of the run the refit was not tuned on ("" when none is)."""
    unseen = [n for n in names if n in UNSEEN_STREAMS]
    return (f" {', '.join(unseen)}: streams the refit was not tuned on (`benchmarks/raw_streams.py`)."
            if unseen else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("::")[0].strip())
    p.add_argument("--streams", default=",".join(STREAMS),
                   help=f"comma-separated, of {', '.join([*STREAMS, *UNSEEN_STREAMS])} "
                        "(default: the first five)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--jobs", type=int, default=2,
                   help="permutations measured at once, of any stream (forked processes)")
    p.add_argument("--default-only", action="store_true",
                   help="only a new project's default learner (auto), not the best single learner too")
    p.add_argument("--cache", default=str(default_cache()))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "REFIT.md"))
    args = p.parse_args(argv)
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    names = [s for s in args.streams.split(",") if s]
    paths = prepare(cache, names)
    for name in names:  # featurized once, before the permutations read the cache at once
        featurized(paths[name], stream_named(name).kind, DEFAULT[stream_named(name).kind], cache)
    jobs = [(name, paths[name], cache, run, args.default_only) for name in names for run in range(args.runs)]
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=multiprocessing.get_context("fork")) as pool:
        results = list(pool.map(_measure_run, jobs))
    parts = [section(name, paths[name], cache, results[i * args.runs:(i + 1) * args.runs])
             for i, name in enumerate(names)]
    lines = [line for section, _ in parts for line in section]
    summary = [row for _, rows in parts for row in rows]
    minutes = (time.monotonic() - t0) / 60
    head = ["# The exported model against a batch fit on every label", "",
            f"Written by `{command(args)}` in {minutes:.1f} min, "
            f"load average {load0:.1f} at the "
            f"start and {os.getloadavg()[0]:.1f} at the end (2 cores shared with other work), "
            f"{args.runs} permutations, {min(args.jobs, len(jobs))} at once.{unseen_note(names)} "
            f"Each permutation's last "
            f"{HELD_OUT:.0%} is held out; the learner runs "
            "on the rest with the replay's budget; 'refit' is `learners.refit.refit` on its queried items "
            "(softmax regression; weights 1/q or flat and L2 chosen by the check; self-trained on the items "
            "it did not query when the check finds that better by more than one standard error: "
            "'self-trained'; predicting with its nearest labelled and unlabelled rows when the check finds "
            "that better by more than one standard error: 'neighbours'); 'exported' is the model "
            "an export keeps (the refit when it won the check: 5-fold cross-validation on the labels, "
            "accuracy weighted by 1/q); 'batch' is scikit-learn's logistic regression on every label of "
            "the stream. Accuracy on the held-out items, mean ± std over permutations "
            "(docs/algorithms/refit.md).", "",
            "| stream | learner | budget | online model | exported | batch, every label "
            "| exported - batch (pt) |",
            "|---|---|---|---|---|---|---|", *summary, ""]
    Path(args.out).write_text("\n".join(head + lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out} in {minutes:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
