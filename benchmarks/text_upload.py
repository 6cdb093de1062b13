"""A large text upload from the upload to the last decision, beside the same number of vectors:
writes benchmarks/TEXT_UPLOAD.md.

    .venv/bin/python benchmarks/text_upload.py --n 100000 \\
        --postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/0 \\
        [--featurizers wordllama-ngrams minilm-ngrams] [--concurrency 2]

One real Celery worker (``celery -A annotator worker --concurrency C``, both queues, prefork) on
a throw-away PostgreSQL database with a Redis broker. Per case a fresh running project (binary,
D-ADA with a 10% label budget, look-ahead N: nobody labels, so every item is decided): a file of
N items is stored as the upload view stores it (:func:`annotator.labelling.ingest.new_job`)
and its import is sent to the worker (:func:`annotator.labelling.worker.send.import_upload`);
from the moment the upload starts, the
script polls the database for the first queued item and for the end (import done, no pending
item). Cases: a text project with each ``--featurizers`` (SMS texts cycled, a CSV with a label
column) and a vectors project (a8a's LIBSVM lines cycled, 123 features). Worker peak RSS: the
largest ``VmHWM`` of the worker's processes (main and children) at the end of the case; the
worker is restarted per case, so each peak is its own. The load average is printed per case.

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

from appsetup import ROOT, setup
from scale import texts

A8A = ROOT.parent / "shared" / "datasets" / "libsvm_binary" / "a8a.gz"
OUT = ROOT / "benchmarks" / "TEXT_UPLOAD.md"


def start_worker(concurrency: int, log: Path) -> subprocess.Popen:
    fh = open(log, "w")  # noqa: SIM115 (closed with the process)
    command = [sys.executable, "-m", "celery", "-A", "annotator", "worker", f"--concurrency={concurrency}",
               "--without-gossip", "--without-mingle", "-l", "WARNING"]
    worker = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), stdout=fh, stderr=subprocess.STDOUT)
    time.sleep(4)
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


def run_case(name: str, n: int, concurrency: int, log: Path) -> dict[str, float]:
    from annotator.labelling.ingest import new_job
    from annotator.labelling.models import ImportJob, Item
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.worker.send import import_upload
    from learners.features import default_config

    if name == "vectors":
        project = create_project(name="vectors", task="binary", item_kind="vectors", classes=[-1, 1],
                                 featurizer_config={"kind": "vectors", "n_features": 123}, algorithm="d-ada",
                                 budget_ratio=0.1, look_ahead=n)
        data, filename = vector_file(n), "a8a.libsvm.gz"
    else:
        project = create_project(name=name, task="binary", item_kind="text", classes=["ham", "spam"],
                                 featurizer_config=default_config("text", name), algorithm="d-ada",
                                 budget_ratio=0.1, look_ahead=n)
        data, filename = text_file(n), "texts.csv.gz"
    worker = start_worker(concurrency, log)
    load = os.getloadavg()[0]
    try:
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
                break
            if now > 3600:
                raise RuntimeError(f"{name}: not decided after an hour")
            time.sleep(0.1)
        total = time.perf_counter() - t0
        peak = peak_rss_mb(worker.pid)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert Item.objects.filter(project=project).count() == n
    out = {"first_queued_s": first if first is not None else float("nan"), "all_decided_s": total,
           "items_per_s": n / total, "worker_peak_mb": peak, "load": load, "load_end": os.getloadavg()[0],
           "file_mb": len(data) / 2**20}
    print(f"{name}: first queued {out['first_queued_s']:.1f} s, all decided {total:.1f} s "
          f"({out['items_per_s']:,.0f} items/s), worker peak {peak:.0f} MB, load {load:.1f} -> "
          f"{out['load_end']:.1f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--postgres", required=True)
    ap.add_argument("--redis", required=True)
    ap.add_argument("--featurizers", nargs="+", default=["wordllama-ngrams"])
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    setup(args.postgres, args.redis)
    log = Path(tempfile.gettempdir()) / f"text-upload-worker-{os.getpid()}.log"
    results = {name: run_case(name, args.n, args.concurrency, log) for name in [*args.featurizers, "vectors"]}
    lines = [
        f"# A {args.n:,}-item upload, from the upload to the last decision",
        "",
        f"Written by `python benchmarks/text_upload.py --n {args.n} --featurizers "
        f"{' '.join(args.featurizers)} --concurrency {args.concurrency} --postgres ... --redis ...` on "
        f"{os.cpu_count()} cores shared with other work: one Celery worker ({args.concurrency} processes, "
        "both queues), PostgreSQL and Redis on this machine; texts: SMS cycled; vectors: a8a cycled. "
        "Goals: first item queued <= 5 s, all decided <= 100 s, worker peak RSS < 400 MB.",
        "",
        "| case | file MB | first item queued, s | all decided, s | items/s | worker peak RSS, MB "
        "| load (start -> end) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {r['file_mb']:.1f} | {r['first_queued_s']:.1f} | "
                     f"{r['all_decided_s']:.1f} | {r['items_per_s']:,.0f} | {r['worker_peak_mb']:.0f} | "
                     f"{r['load']:.1f} -> {r['load_end']:.1f} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
