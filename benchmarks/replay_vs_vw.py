"""One-pass replay speed on a8a: our replay (paa-i, d-ada) beside Vowpal Wabbit and river.

    .venv/bin/pip install -r requirements-bench.txt
    .venv/bin/python benchmarks/replay_vs_vw.py [--repeats 5] [--ratio 0.1]

Every contender streams the 32,561 items of ``a8a.gz`` + ``a8a.t.gz`` once, in file order,
at about ``--ratio`` queries, and is timed end to end from the gzip files (reading and
parsing included; the interpreter and imports excluded for all). Ours is also timed without
loading (the replay loop alone). Knobs are calibrated to the ratio before timing (untimed):
our delta by :func:`learners.evaluation.engine.calibrate`, VW's ``--mellowness`` by bisection on
the query count VW reports, river's ``discount_factor`` likewise.

* Vowpal Wabbit: ``--active --simulation --binary`` through the PyPI ``vowpalwabbit`` package;
  the LIBSVM lines become VW lines (``label | idx:val ...``) in Python, are written to a
  temporary file and VW's own parser and learner run on it (``run_parser``: faster than
  feeding lines one by one from Python).
* river: ``active.EntropySampler(linear_model.PAClassifier())``, dict features.

Ours uses the compiled LIBSVM reader and replay loop (``Learner.compiled_loop``); numba caches their
machine code on disk, so the repeats measure the steady state. The script also times the first
replay in a fresh interpreter, with that cache and with an empty one (compilation included).

Whole processes (``--whole-process``, also run at the end of a full run): the command a user
types, timed from ``exec`` to exit with its peak resident memory (GNU ``time``):
``python -m learners.replay --data a8a.gz --data a8a.t.gz --algo paa-i --delta D --quiet``
beside ``python -m vowpalwabbit --active --simulation --binary --mellowness M -d a8a.vw --quiet``
(the PyPI package's command line: VW's own C++ parser and learner; the file is converted to
VW's text format beforehand, untimed). Medians of ``--repeats`` runs of each, numba's disk cache
warm (one untimed run first), with the machine's load average printed beside them.

Prints medians of ``--repeats`` runs and the ratios of items/s; the last line is
``paa-i/vw=<ratio> d-ada/vw=<ratio>`` (``n/a`` for a learner that is not registered).
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import learners  # noqa: E402
from learners.evaluation.datasets import load  # noqa: E402
from learners.evaluation.engine import Result, Setting, calibrate, make_task, replay  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets" / "libsvm_binary"
FILES = [DATA / "a8a.gz", DATA / "a8a.t.gz"]


def ours(algo: str, params: dict, timed_load: bool = True) -> tuple[float, float, float]:
    """(end-to-end seconds, loop seconds, query ratio) of one pass in file order."""
    t0 = time.perf_counter()
    ds = load(FILES, n_features=123)
    task = make_task(ds.y)
    lrn = learners.make(algo, n_features=ds.X.shape[1], classes=list(task.classes), **params)
    trace = replay(lrn, ds.X, task.codes, np.random.default_rng(0))
    total = time.perf_counter() - t0
    return total, trace.seconds, float(trace.queried.mean())


def calibrate_ours(algo: str, ratio: float) -> dict:
    ds = load(FILES, n_features=123)
    task = make_task(ds.y)

    def evaluate(settings):
        out = []
        for s in settings:
            lrn = learners.make(s.algo, n_features=123, classes=list(task.classes), **s.params)
            q = float(replay(lrn, ds.X, task.codes, np.random.default_rng(0)).queried.mean())
            out.append(Result(s, {"query_ratio": q}, {}, 1))
        return out

    res = calibrate(Setting(algo, learners.validate_params(algo, {})), ratio, evaluate)
    return dict(res.setting.params)


def vw_lines() -> list[bytes]:
    out = []
    for f in FILES:
        with gzip.open(f, "rb") as fh:
            for line in fh:
                label, _, rest = line.partition(b" ")
                out.append((b"1 | " if float(label) > 0 else b"-1 | ") + rest)
    return out


def vw_run(mellowness: float) -> tuple[float, float]:
    """(end-to-end seconds, query ratio) of VW --active --simulation."""
    from vowpalwabbit import Workspace

    t0 = time.perf_counter()
    lines = vw_lines()
    fd, path = tempfile.mkstemp(suffix=".vw")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.writelines(lines)
        with tempfile.TemporaryFile() as err:  # VW writes its summary to fd 2
            saved = os.dup(2)
            os.dup2(err.fileno(), 2)
            try:
                vw = Workspace(f"--active --simulation --mellowness {mellowness} --binary -d {path}")
                vw.run_parser()
                vw.finish()
                elapsed = time.perf_counter() - t0
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            err.seek(0)
            log = err.read().decode("utf-8", "replace")
    finally:
        os.remove(path)
    m = re.search(r"total queries = (\d+)", log)
    if m is None:
        raise RuntimeError("VW did not report its query count")
    return elapsed, int(m.group(1)) / len(lines)


def river_run(discount: float) -> tuple[float, float]:
    from river import active, linear_model

    t0 = time.perf_counter()
    model = active.EntropySampler(linear_model.PAClassifier(), discount_factor=discount, seed=0)
    n = asked = 0
    for f in FILES:
        with gzip.open(f, "rt") as fh:
            for line in fh:
                label, *feats = line.split()
                x = {int(k): float(v) for k, v in (t.split(":") for t in feats)}
                y = float(label) > 0
                _, ask = model.predict_one(x)
                if ask:
                    model.learn_one(x, y)
                    asked += 1
                n += 1
    return time.perf_counter() - t0, asked / n


def bisect_log(fn, ratio: float, lo: float, hi: float, increasing: bool, steps: int = 14) -> float:
    """Knob in [lo, hi] (log scale) whose query ratio from ``fn`` is nearest ``ratio``."""
    best = (math.inf, lo)
    a, b = math.log(lo), math.log(hi)
    for _ in range(steps):
        mid = 0.5 * (a + b)
        q = fn(math.exp(mid))[1]
        best = min(best, (abs(q - ratio), math.exp(mid)))
        if (q < ratio) == increasing:
            a = mid
        else:
            b = mid
    return best[1]


FRESH = """
import json, sys, time
sys.path.insert(0, {root!r})
import learners
from benchmarks.replay_vs_vw import ours
total, loop, q = ours({algo!r}, json.loads({params!r}))
print(total)
"""


def fresh_process_seconds(algo: str, params: dict, cold: bool) -> float:
    """End-to-end seconds of the first replay in a new interpreter (imports untimed).

    Warm: numba loads the machine code cached on disk by earlier runs; cold: an empty cache
    directory, so the first call compiles the reader and the loop (what a fresh checkout pays once).
    """
    import json
    import subprocess

    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if cold:
            env["NUMBA_CACHE_DIR"] = cache
        code = FRESH.format(root=str(ROOT), algo=algo, params=json.dumps(params))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True, cwd=ROOT)
    return float(out.stdout.strip().splitlines()[-1])


def _run_measured(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of ``cmd`` as a whole process (output discarded).

    Measured by GNU time (Debian's ``time`` package): a child forked from this large process
    would report this process's peak as its own (Linux keeps the high-water mark across exec).
    """
    import subprocess

    with tempfile.NamedTemporaryFile("r") as report:
        subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", report.name, *cmd], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall, kib = report.read().split()[-2:]
    return float(wall), float(kib) / 1024


def whole_processes(repeats: int, delta: float, mellowness: float) -> dict[str, tuple[float, float]]:
    """Median (wall s, peak MiB) of our replay CLI and VW's CLI on a8a (module docstring)."""
    fd, vw_file = tempfile.mkstemp(suffix=".vw")
    with os.fdopen(fd, "wb") as fh:
        fh.writelines(vw_lines())
    data = [a for f in FILES for a in ("--data", str(f))]
    commands = {
        "python -m learners.replay (paa-i)": [
            sys.executable, "-m", "learners.replay", *data, "--algo", "paa-i", "--delta", repr(delta),
            "--quiet"],
        "python -m vowpalwabbit --active": [
            sys.executable, "-m", "vowpalwabbit", "--active", "--simulation", "--binary",
            "--mellowness", repr(mellowness), "-d", vw_file, "--quiet"],
    }
    try:
        out = {}
        for name, cmd in commands.items():
            _run_measured(cmd)  # untimed: fills numba's disk cache and the page cache
            runs = [_run_measured(cmd) for _ in range(repeats)]
            out[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        return out
    finally:
        os.remove(vw_file)


def print_whole(figures: dict[str, tuple[float, float]], repeats: int) -> None:
    print(f"whole processes, median of {repeats}, load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores:")
    for name, (wall, rss) in figures.items():
        print(f"  {name:<36} {wall:7.3f} s {rss:7.1f} MiB")
    (ours_s, ours_m), (vw_s, vw_m) = figures.values()
    print(f"replay/vw wall={ours_s / vw_s:.2f}x peak={ours_m / vw_m:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--ratio", type=float, default=0.1)
    p.add_argument("--whole-process", action="store_true",
                   help="only the whole-process comparison (paa-i against VW's command line)")
    args = p.parse_args()
    if args.whole_process:
        delta = calibrate_ours("paa-i", args.ratio)["delta"]
        mellow = bisect_log(vw_run, args.ratio, 1e-6, 1.0, increasing=True)
        print_whole(whole_processes(args.repeats, delta, mellow), args.repeats)
        return
    n = 32561
    rows: dict[str, dict] = {}
    algos = [a for a in ("paa-i", "d-ada") if a in learners.REGISTRY]
    params = {a: calibrate_ours(a, args.ratio) for a in algos}
    mellow = bisect_log(vw_run, args.ratio, 1e-6, 1.0, increasing=True)
    discount = bisect_log(river_run, args.ratio, 0.05, 50.0, increasing=False, steps=6)
    for _ in range(args.repeats):
        for a in algos:
            total, loop, q = ours(a, params[a])
            rows.setdefault(a, {"total": [], "loop": [], "q": q})
            rows[a]["total"].append(total)
            rows[a]["loop"].append(loop)
        total, q = vw_run(mellow)
        rows.setdefault("vw", {"total": [], "loop": [], "q": q})["total"].append(total)
        total, q = river_run(discount)
        rows.setdefault("river", {"total": [], "loop": [], "q": q})["total"].append(total)
    print(f"a8a train+test, {n} items, one pass, target query ratio {args.ratio:.0%}, "
          f"median of {args.repeats} repeats")
    print(f"{'contender':<34} {'query%':>7} {'seconds':>8} {'items/s':>10} {'loop items/s':>13}")
    names = {"vw": f"vw --active --simulation (mellowness {mellow:.3g})",
             "river": f"river PAClassifier+EntropySampler (df {discount:.3g})"}
    speed = {}
    for key, r in rows.items():
        med = statistics.median(r["total"])
        speed[key] = n / med
        loop = f"{n / statistics.median(r['loop']):13.0f}" if r["loop"] else f"{'':>13}"
        label = names.get(key, f"{key} (delta {params.get(key, {}).get('delta', float('nan')):.3g})")
        print(f"{label:<34} {100 * r['q']:7.2f} {med:8.3f} {n / med:10.0f} {loop}")
    ratio = {a: (f"{speed[a] / speed['vw']:.2f}" if a in speed else "n/a") for a in ("paa-i", "d-ada")}
    if "river" in speed:
        print(f"river/vw={speed['river'] / speed['vw']:.2f}")
    vw_s = statistics.median(rows["vw"]["total"])
    for a in algos:
        warm, cold = (fresh_process_seconds(a, params[a], cold) for cold in (False, True))
        print(f"{a}: first replay in a fresh process {warm:.3f} s with numba's disk cache "
              f"({vw_s / warm:.2f}x VW's median), {cold:.2f} s with an empty cache (compilation)")
    if "paa-i" in params:
        print_whole(whole_processes(args.repeats, params["paa-i"]["delta"], mellow), args.repeats)
    print(f"paa-i/vw={ratio['paa-i']} d-ada/vw={ratio['d-ada']}")


if __name__ == "__main__":
    main()
