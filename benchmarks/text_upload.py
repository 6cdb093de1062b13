"""A large text upload from the upload to the last decision, beside the same number of vectors:
writes benchmarks/TEXT_UPLOAD.md.

    .venv/bin/python benchmarks/text_upload.py --n 100000 \\
        --postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/0 \\
        [--featurizers wordllama-ngrams minilm-ngrams] [--concurrency 1 2 4] \
        [--default-concurrency 2]

Two real Celery workers, as in production (docs/operations.md): one on the heavy queue
(``celery -A annotator worker -Q <heavy> --concurrency C``, prefork), which imports, the upload
fanned out in chunks over its C processes (:mod:`annotator.labelling.ingest.fanout`), and one on
the label queue (one process), which decides; on a throw-away PostgreSQL database with a Redis
broker. Each featurizer runs with each ``--concurrency`` (``--only-concurrency NAME=C`` limits a
slow one, e.g. ``minilm-ngrams=2``); the vectors case once per concurrency. Per case a fresh
running project (binary, D-ADA with a 10% label budget, look-ahead N: nobody labels, so every
item is decided): a file of N items is stored as the upload view stores it
(:func:`annotator.labelling.ingest.new_job`) and its import is sent to the worker
(:func:`annotator.labelling.worker.send.import_upload`); from the moment the upload starts, the
script polls the database for the first queued item and for the end (import done, no pending
item). Cases: a text project with each ``--featurizers`` (SMS texts cycled, a CSV with a label
column) and a vectors project (a8a's LIBSVM lines cycled, 123 features). Worker peak RSS: the
largest ``VmHWM`` of any one process of either worker (main and children) at the end of the
case; the workers are restarted per case, so each peak is its own. The load average is printed
per case. Each case starts with a warm-up upload of ``WARM_UP`` items to another project on the
same workers (the first task of a process imports the featurizer and compiles the learner, as a
running deployment did long ago).

The goals (docs/performance.md): first item queued within 5 s of the upload, everything decided
within 100 s, worker peak RSS under 400 MB, for N = 100,000 texts on 2 cores.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from appsetup import ROOT, setup
from scale import texts

A8A = ROOT.parent / "shared" / "datasets" / "libsvm_binary" / "a8a.gz"
OUT = ROOT / "benchmarks" / "TEXT_UPLOAD.md"


def start_worker(concurrency: int, log: Path, queue: str) -> subprocess.Popen:
    """A worker on ``queue``, returned once it says it is ready (start-up is not the import's time)."""
    fh = open(log, "w")  # noqa: SIM115 (closed with the process)
    command = [sys.executable, "-m", "celery", "-A", "annotator", "worker", f"--concurrency={concurrency}",
               "-Q", queue, "--without-gossip", "--without-mingle", "-l", "INFO"]
    worker = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while "ready." not in log.read_text():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the worker did not start:\n" + log.read_text()[-2000:])
        time.sleep(0.1)
    return worker


def peak_rss_mb(pid: int) -> float:
    """Largest VmHWM (peak resident set) among ``pid`` and its children, MB."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        pids.extend(int(c) for c in children)
    peaks = []
    for p in pids:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        line = next(row for row in status.splitlines() if row.startswith("VmHWM:"))
        peaks.append(int(line.split()[1]) / 1024)
    return max(peaks)


def text_file(n: int) -> bytes:
    pairs = texts()
    buf = io.StringIO()
    buf.write("text,label\n")
    for i in range(n):
        text, label = pairs[i % len(pairs)]
        buf.write('"' + text.replace('"', '""') + f'",{label}\n')
    return gzip.compress(buf.getvalue().encode("utf-8"), compresslevel=1)


def vector_file(n: int) -> bytes:
    with gzip.open(A8A, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    return gzip.compress(b"".join(lines[i % len(lines)] for i in range(n)), compresslevel=1)


def make_case(name: str, n: int, label: str) -> tuple[Any, bytes, str]:
    """A fresh running project for case ``name`` and its file of ``n`` items."""
    from annotator.labelling.projects.creation import create_project
    from learners.features import default_config

    if name == "vectors":
        project = create_project(name=label, task="binary", item_kind="vectors", classes=[-1, 1],
                                 featurizer_config={"kind": "vectors", "n_features": 123}, algorithm="d-ada",
                                 budget_ratio=0.1, look_ahead=n)
        return project, vector_file(n), "a8a.libsvm.gz"
    project = create_project(name=label, task="binary", item_kind="text", classes=["ham", "spam"],
                             featurizer_config=default_config("text", name), algorithm="d-ada",
                             budget_ratio=0.1, look_ahead=n)
    return project, text_file(n), "texts.csv.gz"


def upload_and_wait(project: Any, data: bytes, filename: str) -> tuple[float | None, float]:
    """Upload ``data`` as the upload view does and wait until every item is decided: seconds
    from the upload to the first queued item and to the end."""
    from annotator.labelling.ingest import new_job
    from annotator.labelling.models import ImportJob, Item
    from annotator.labelling.worker.send import import_upload

    t0 = time.perf_counter()
    job = new_job(project, filename, [data[i:i + 2**20] for i in range(0, len(data), 2**20)])
    import_upload(job.pk)
    first = None
    while True:
        now = time.perf_counter() - t0
        if first is None and Item.objects.filter(project=project, status="queued").exists():
            first = now
        status = ImportJob.objects.filter(pk=job.pk).values_list("status", flat=True).get()
        if status == ImportJob.Status.FAILED:
            raise RuntimeError(ImportJob.objects.get(pk=job.pk).error)
        if status == ImportJob.Status.DONE and not Item.objects.filter(project=project,
                                                                        status="pending").exists():
            return first, time.perf_counter() - t0
        if now > 3600:
            raise RuntimeError(f"{project.name}: not decided after an hour")
        time.sleep(0.1)


#: items of the warm-up upload each case starts with (its first task in each worker process
#: imports the featurizer and compiles the learner; a running deployment has done that already)
WARM_UP = 1000


def run_case(name: str, n: int, concurrency: int, log: Path) -> dict[str, float]:
    from django.conf import settings

    from annotator.labelling.models import Item

    project, data, filename = make_case(name, n, f"{name} x{concurrency}")
    warm, warm_data, _ = make_case(name, WARM_UP, f"warm-up {name} x{concurrency}")
    worker = start_worker(concurrency, log, settings.CELERY_HEAVY_QUEUE)
    decider = start_worker(1, log.with_suffix(".label.log"), settings.CELERY_TASK_DEFAULT_QUEUE)
    try:
        upload_and_wait(warm, warm_data, filename)
        load = os.getloadavg()[0]
        first, total = upload_and_wait(project, data, filename)
        peak = max(peak_rss_mb(worker.pid), peak_rss_mb(decider.pid))
    finally:
        for process in (worker, decider):
            process.send_signal(signal.SIGTERM)
        for process in (worker, decider):
            process.wait(timeout=120)
    assert Item.objects.filter(project=project).count() == n
    out = {"first_queued_s": first if first is not None else float("nan"), "all_decided_s": total,
           "items_per_s": n / total, "worker_peak_mb": peak, "load": load, "load_end": os.getloadavg()[0],
           "file_mb": len(data) / 2**20}
    print(f"{name} x{concurrency}: first queued {out['first_queued_s']:.1f} s, all decided {total:.1f} s "
          f"({out['items_per_s']:,.0f} items/s), worker peak {peak:.0f} MB, load {load:.1f} -> "
          f"{out['load_end']:.1f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--postgres", required=True)
    ap.add_argument("--redis", required=True)
    ap.add_argument("--featurizers", nargs="+", default=["wordllama-ngrams"])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4],
                    help="heavy-queue worker processes, one run per value")
    ap.add_argument("--only-concurrency", nargs="*", default=[], metavar="NAME=C",
                    help="run featurizer NAME only with these processes (repeatable)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    setup(args.postgres, args.redis)
    from django.conf import settings

    log = Path(tempfile.gettempdir()) / f"text-upload-worker-{os.getpid()}.log"
    only: dict[str, set[int]] = {}
    for spec in args.only_concurrency:
        name, _, c = spec.partition("=")
        only.setdefault(name, set()).add(int(c))
    results = {}
    for name in [*args.featurizers, "vectors"]:
        for c in args.concurrency:
            if c in only.get(name, {c}):
                results[name, c] = run_case(name, args.n, c, log)
    limits = f"--only-concurrency {' '.join(args.only_concurrency)} " if args.only_concurrency else ""
    lines = [
        f"# A {args.n:,}-item upload, from the upload to the last decision",
        "",
        f"Written by `nice -n 10 python benchmarks/text_upload.py --n {args.n} --featurizers "
        f"{' '.join(args.featurizers)} --concurrency {' '.join(map(str, args.concurrency))} {limits}"
        f"--postgres ... --redis ...` on {os.cpu_count()} cores shared with other work "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): a heavy-queue worker with C processes "
        "(the upload fanned out in chunks over them: a first chunk of "
        f"{settings.IMPORT_FIRST_CHUNK} records, then {settings.IMPORT_CHUNK}) and a label-queue worker "
        "(1 process) that decides, PostgreSQL and Redis on this machine; texts: SMS cycled; vectors: a8a "
        f"cycled; each case after a warm-up upload of {WARM_UP:,} items on the same workers. Goals: first "
        "item queued <= 5 s, all decided <= 100 s, worker peak RSS < 400 MB (per "
        "process). Load: the 1-minute load average when the case started and ended.",
        "",
        "| case | C | file MB | first item queued, s | all decided, s | items/s | worker peak RSS, MB "
        "| all three goals | load (start -> end) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, c), r in results.items():
        met = [r["first_queued_s"] <= 5, r["all_decided_s"] <= 100, r["worker_peak_mb"] < 400]
        verdict = "yes" if all(met) else "no (" + ", ".join(
            what for what, ok in zip(("first", "all", "RSS"), met, strict=True) if not ok) + ")"
        lines.append(f"| {name} | {c} | {r['file_mb']:.1f} | {r['first_queued_s']:.1f} | "
                     f"{r['all_decided_s']:.1f} | {r['items_per_s']:,.0f} | {r['worker_peak_mb']:.0f} | "
                     f"{verdict} | {r['load']:.1f} -> {r['load_end']:.1f} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
