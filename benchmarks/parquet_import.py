"""A large Parquet upload imported by the worker's code: items per second and peak memory;
writes benchmarks/PARQUET.md.

    nice -n 10 .venv/bin/python benchmarks/parquet_import.py \\
        --postgres postgres://postgres@127.0.0.1:5432/postgres \\
        --case 1000000:hashed-ngrams --case 20000:minilm-ngrams

Per case (``N:FEATURIZER``), in a fresh process (so each peak is its own): a Parquet file of N
texts with a label column (SMS texts cycled, numbered so that every one differs; row groups of
pyarrow's default size, at most 1Mi rows: one row group for a million) is written by a child
process, stored as the upload view stores it (:func:`annotator.labelling.ingest.new_job`, parts
in PostgreSQL), then imported by :func:`annotator.labelling.ingest.run_job`, what the import
worker runs (two passes: check, then featurize and COPY a chunk at a time), in this process. The
time is ``run_job``'s; the peak is the process's ``VmHWM`` (peak resident set) during it, reset
before it (``/proc/self/clear_refs``), beside the resident set before it. The featurizers:
``minilm-ngrams`` is what a new text project gets by default (a MiniLM sentence embedding plus
word n-grams); ``hashed-ngrams`` is the cheap hashed n-gram featurizer, so that the reading and
storing are measured rather than the embedding. The load average is printed per case.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "PARQUET.md"

WRITE = r"""
import sys
import pyarrow as pa, pyarrow.parquet as pq
sys.path.insert(0, sys.argv[3])
from scale import texts
n, path = int(sys.argv[1]), sys.argv[2]
pairs = texts()
schema = pa.schema([("text", pa.string()), ("label", pa.string())])
with pq.ParquetWriter(path, schema) as writer:
    step = 100_000
    for start in range(0, n, step):
        rows = [pairs[i % len(pairs)] for i in range(start, min(n, start + step))]
        writer.write_table(pa.table({"text": [f"{t} ({start + i})" for i, (t, _) in enumerate(rows)],
                                     "label": [g for _, g in rows]}, schema=schema),
                           row_group_size=1024 * 1024)
print(pq.ParquetFile(path).metadata.num_row_groups)
"""


def _status_kb(field: str) -> int:
    line = next(r for r in Path("/proc/self/status").read_text().splitlines() if r.startswith(field + ":"))
    return int(line.split()[1])


def run_case(n: int, featurizer: str, postgres: str) -> dict[str, float]:
    """One case in this process (called in a child: :func:`main` starts one per case)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from appsetup import setup

    setup(postgres)
    from annotator.labelling.ingest import new_job, run_job
    from annotator.labelling.models import Item
    from annotator.labelling.projects.creation import create_project
    from learners.features import default_config

    path = Path(tempfile.mkdtemp(prefix="parquet-bench-")) / "texts.parquet"
    groups = subprocess.run([sys.executable, "-c", WRITE, str(n), str(path), str(ROOT / "benchmarks")],
                            capture_output=True, text=True, check=True).stdout.strip()
    project = create_project(name=featurizer, task="binary", item_kind="text", classes=["ham", "spam"],
                             featurizer_config=default_config("text", featurizer), algorithm="paa-i")
    with path.open("rb") as fh:
        job = new_job(project, "texts.parquet", iter(lambda: fh.read(2**20), b""))
    project.featurizer().transform(["warm up the featurizer"])  # load it before the clock starts
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current resident set
    before = _status_kb("VmRSS") / 1024
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    job = run_job(job.pk)
    seconds = time.perf_counter() - t0
    peak = _status_kb("VmHWM") / 1024
    assert job is not None and job.status == "done", job and job.error
    assert Item.objects.filter(project=project).count() == n
    out = {"n": n, "featurizer": featurizer, "seconds": seconds, "items_per_s": n / seconds,
           "rss_before_mb": before, "peak_mb": peak, "file_mb": path.stat().st_size / 2**20,
           "row_groups": int(groups), "load": load, "load_end": os.getloadavg()[0]}
    path.unlink()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--postgres", required=True)
    ap.add_argument("--case", action="append", default=[], help="N:FEATURIZER (repeat)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a child: run this case, print its JSON
    args = ap.parse_args()
    if args.one:
        n, featurizer = args.one.split(":")
        print(json.dumps(run_case(int(n), featurizer, args.postgres)), flush=True)
        return
    cases = args.case or ["1000000:hashed-ngrams", "20000:minilm-ngrams"]
    results = []
    for case in cases:
        out = subprocess.run([sys.executable, __file__, "--postgres", args.postgres, "--one", case],
                             capture_output=True, text=True, check=True, cwd=ROOT)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        print(result, flush=True)
        results.append(result)
    lines = [
        "# Parquet import: items per second and peak memory",
        "",
        f"Written by `nice -n 10 python benchmarks/parquet_import.py --postgres ... "
        f"{' '.join('--case ' + c for c in cases)}` on {os.cpu_count()} cores shared with other work "
        "(the load average, 1 minute, is in the table: above 2 the figures are slowed by the other "
        "processes). One process runs the import worker's code (`run_job`: a checking pass, then "
        "featurize + COPY a chunk of 2,000 at a time) on a stored upload in PostgreSQL on this machine. "
        "Texts: SMS cycled, numbered; a label column. Peak: the process's peak resident set during the "
        "import (VmHWM, reset before it), beside its resident set before (Django, the featurizer).",
        "",
        "| texts | featurizer | file MB | row groups | import s | items/s | RSS before, MB | peak RSS, MB "
        "| load (start -> end) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(f"| {r['n']:,} | {r['featurizer']} | {r['file_mb']:.1f} | {r['row_groups']} | "
                     f"{r['seconds']:.0f} | {r['items_per_s']:,.0f} | {r['rss_before_mb']:.0f} | "
                     f"{r['peak_mb']:.0f} | {r['load']:.1f} -> {r['load_end']:.1f} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
