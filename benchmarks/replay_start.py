"""Where a replay's start goes: whole processes on a8a, step by step, beside ``vw --active``;
writes ``benchmarks/REPLAY_START.md``.

    .venv/bin/pip install -r requirements-bench.txt
    .venv/bin/python benchmarks/replay_start.py [--repeats 5] [--ratio 0.1]

Each row is one command run as a whole process (``exec`` to exit, GNU ``time``: wall seconds and
peak resident memory), median of ``--repeats`` runs after one untimed run (numba's disk cache and
the page cache warm). The rows add one component at a time, so the differences say what each
costs: the interpreter, numpy, scipy.sparse, numba's import, numba's first call of a cached
kernel (numba builds its whole CPU target, numpy and scipy.linalg bindings included, before it
can run any compiled function, cached or not), the replay's own modules, the replay itself, and
Vowpal Wabbit's command line on the same stream (``benchmarks/replay_vs_vw.py`` converts the
file; the knobs are calibrated to ``--ratio`` queries as there). A row runs PAA-I on the
stream with numpy and plain Python only (parse, permute, loop; no metrics): the floor of a path
that needs no numba. The last row is the floor of any replay in a Python process: numpy and the
replay's own LIBSVM reader compiled ahead of time (``numba.pycc``, built untimed into a temporary
folder, so numba is not imported by the timed process) reading and parsing the two files, then
the run's permutation and uniforms; no learner, no metrics, no report.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.replay_vs_vw import (  # noqa: E402
    FILES,
    bisect_log,
    calibrate_ours,
    vw_lines,
    vw_run,
)

OUT = ROOT / "benchmarks" / "REPLAY_START.md"

# PAA-I (C = 1) over the a8a stream in numpy + plain Python: what a numba-free path would cost
# at least (the replay's metrics and report are not included).
PURE_PYTHON = """
import gzip, sys
import numpy as np
raw = b"".join(gzip.open(f).read() for f in sys.argv[1:3])
lines = raw.split(b"\\n")
lines = [line for line in lines if line.strip()]
counts = np.fromiter((line.count(b":") for line in lines), dtype=np.int64, count=len(lines))
values = np.array([float(t) for t in raw.replace(b":", b" ").split()])
starts = np.concatenate(([0], np.cumsum(1 + 2 * counts)[:-1]))
y = values[starts]
keep = np.ones(len(values), bool)
keep[starts] = False
pairs = values[keep]
indices, data = (pairs[0::2] - 1).astype(np.int64), pairs[1::2]
indptr = np.concatenate(([0], np.cumsum(counts)))
n = len(lines)
perm = np.random.default_rng([0, 0, 0]).permutation(n)
u = np.random.default_rng([0, 0, 1]).random(n).tolist()
lens = counts[perm]
ip = np.concatenate(([0], np.cumsum(lens)))
rows = np.repeat(indptr[perm], lens) + (np.arange(ip[-1]) - np.repeat(ip[:-1], lens))
ind, dat, ipl, yp = indices[rows].tolist(), data[rows].tolist(), ip.tolist(), (y[perm] > 0).tolist()
w, delta, C, labels = [0.0] * 123, float(sys.argv[3]), 1.0, 0
for i in range(n):
    a, b = ipl[i], ipl[i + 1]
    m = 0.0
    for k in range(a, b):
        m += w[ind[k]] * dat[k]
    if u[i] < delta / (delta + abs(m)):
        labels += 1
        sign = 1.0 if yp[i] else -1.0
        loss, sq = max(0.0, 1.0 - sign * m), 0.0
        for k in range(a, b):
            sq += dat[k] * dat[k]
        if loss > 0.0 and sq > 0.0:
            step = min(C, loss / sq) * sign
            for k in range(a, b):
                w[ind[k]] += step * dat[k]
print(labels)
"""


# numpy + the LIBSVM reader compiled ahead of time: the least any replay in Python pays to start
AOT_FLOOR = """
import gzip, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import libsvm_aot
parts = [libsvm_aot.parse(np.frombuffer(gzip.open(f).read(), dtype=np.uint8), 10.0 ** np.arange(-30, 31))
         for f in sys.argv[2:4]]
n = sum(len(p[0]) for p in parts)
perm = np.random.default_rng([0, 0, 0]).permutation(n)
u = np.random.default_rng([0, 0, 1]).random(n)
print(n, all(p[4] for p in parts))
"""


def build_aot_reader(folder: str) -> None:
    """Compile the replay's LIBSVM parser (:func:`learners.evaluation.libsvm._parse`, the same
    Python function numba compiles at run time) ahead of time into ``folder/libsvm_aot*.so``."""
    import warnings

    from numba.pycc import CC

    from learners.evaluation import libsvm

    with warnings.catch_warnings():  # numba.pycc is pending deprecation (numba's docs)
        warnings.simplefilter("ignore")
        cc = CC("libsvm_aot")
        cc.output_dir = folder
        cc.export("parse", "Tuple((f8[:], i8[:], i8[:], f8[:], b1))(u1[:], f8[:])")(libsvm._parse.py_func)
        cc.compile()


def run_measured(cmd: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MiB) of ``cmd`` as a whole process,
    by GNU time (a child forked from this larger process would report its parent's peak)."""
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", out.name, *cmd], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall, user, system, kib = out.read().split()[-4:]
    return float(wall), float(user) + float(system), float(kib) / 1024


def commands(delta: float, mellowness: float, vw_file: str, aot_folder: str) -> list[tuple[str, list[str]]]:
    """(row label, command) of each step (module docstring)."""
    py = sys.executable
    data = [a for f in FILES for a in ("--data", str(f))]
    files = ", ".join(repr(str(f)) for f in FILES)
    return [
        ("python -c pass (the interpreter)", [py, "-c", "pass"]),
        ("import numpy", [py, "-c", "import numpy"]),
        ("import numpy, scipy.sparse", [py, "-c", "import numpy, scipy.sparse"]),
        ("import numba", [py, "-c", "import numba"]),
        ("import learners + numba's first call of a cached kernel (the LIBSVM reader on a8a)",
         [py, "-c", f"from learners.evaluation.libsvm import read_libsvm; read_libsvm([{files}], 123)"]),
        ("import learners.evaluation.cli (the replay's modules)",
         [py, "-c", "import learners.evaluation.cli"]),
        ("python -m learners.replay --algo paa-i (the whole replay)",
         [py, "-m", "learners.replay", *data, "--algo", "paa-i", "--delta", repr(delta), "--quiet"]),
        ("python -m vowpalwabbit --active (VW's command line)",
         [py, "-m", "vowpalwabbit", "--active", "--simulation", "--binary", "--mellowness",
          repr(mellowness), "-d", vw_file, "--quiet"]),
        ("numpy + plain Python PAA-I, no numba (parse + loop only)",
         [py, "-c", PURE_PYTHON, *map(str, FILES), repr(delta)]),
        ("numpy + the LIBSVM reader compiled ahead of time, no numba (read, parse, permute)",
         [py, "-c", AOT_FLOOR, aot_folder, *map(str, FILES)]),
    ]


Row = tuple[str, float, float, float]


def measure(repeats: int, ratio: float) -> tuple[list[Row], float, float]:
    delta = calibrate_ours("paa-i", ratio)["delta"]
    mellowness = bisect_log(vw_run, ratio, 1e-6, 1.0, increasing=True)
    fd, vw_file = tempfile.mkstemp(suffix=".vw")
    with os.fdopen(fd, "wb") as fh:
        fh.writelines(vw_lines())
    rows: list[Row] = []
    aot_folder = tempfile.mkdtemp()
    try:
        build_aot_reader(aot_folder)
        for label, cmd in commands(delta, mellowness, vw_file, aot_folder):
            run_measured(cmd)  # untimed: caches warm
            runs = [run_measured(cmd) for _ in range(repeats)]
            wall, cpu, rss = (statistics.median(r[k] for r in runs) for k in range(3))
            rows.append((label, wall, cpu, rss))
            print(f"{label:<66} {rows[-1][1]:6.3f} s {rows[-1][2]:6.3f} CPU s {rows[-1][3]:6.1f} MiB",
                  flush=True)
    finally:
        os.remove(vw_file)
        shutil.rmtree(aot_folder)
    return rows, delta, mellowness


def report(rows: list[Row], repeats: int, ratio: float, loads: tuple[float, float]) -> str:
    by = {label: (wall, cpu, rss) for label, wall, cpu, rss in rows}
    ours = next(v for k, v in by.items() if k.startswith("python -m learners.replay"))
    vw = next(v for k, v in by.items() if k.startswith("python -m vowpalwabbit"))
    floor = next(v for k, v in by.items() if k.startswith("numpy + the LIBSVM reader compiled"))
    lines = [
        "# Where a replay's start goes (a8a, whole processes)",
        "",
        f"Written by `python benchmarks/replay_start.py --repeats {repeats} --ratio {ratio}` on "
        f"{os.cpu_count()} cores shared with other work (load average {loads[0]:.2f} before, "
        f"{loads[1]:.2f} after). Each row: one command as a whole process, median of {repeats} runs "
        "(GNU time: wall seconds, CPU seconds user + system, peak resident memory), caches warm. "
        "The rows add one component at a time (see the script's docstring). On a loaded machine "
        "the CPU seconds are the steadier figure: a whole process here is single-threaded but "
        "for BLAS/numba threads that stay idle.",
        "",
        "| command | wall s | CPU s | peak MiB |",
        "|---|---|---|---|",
        *[f"| {label} | {wall:.3f} | {cpu:.3f} | {rss:.1f} |" for label, wall, cpu, rss in rows],
        "",
        f"Replay / VW: {ours[0] / vw[0]:.1f}x the wall time, {ours[1] / vw[1]:.1f}x the CPU time, "
        f"{ours[2] / vw[2]:.1f}x the peak memory (target: 2x the wall time and under 100 MiB).",
        f"The floor of a replay in Python (last row) / VW: {floor[0] / vw[0]:.1f}x the wall time, "
        f"{floor[1] / vw[1]:.1f}x the CPU time, {floor[2] / vw[2]:.1f}x the peak memory.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--ratio", type=float, default=0.1)
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args()
    before = os.getloadavg()[0]
    rows, _, _ = measure(args.repeats, args.ratio)
    text = report(rows, args.repeats, args.ratio, (before, os.getloadavg()[0]))
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
