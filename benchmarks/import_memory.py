"""Peak memory of ``manage.py import_items`` against the file's size: writes
benchmarks/IMPORT_MEMORY.md.

    .venv/bin/python benchmarks/import_memory.py --sizes 20000 80000 320000 \\
        [--postgres postgres://postgres@127.0.0.1:5432/postgres]

Per size N, a gzipped JSONL file of N texts (SMS Spam Collection cycled, each with its gold
class; synthetic 8-word texts without the dataset) is imported into a fresh binary text project
(the original hashed-words featurizer, paused, so nothing is decided) by the command in a fresh
process, which prints its own peak resident memory (``ru_maxrss``). The command streams the
file through the uploads' path (stored in parts, then imported a chunk at a time), so the peak
should not follow the file's size; the before-figure is the command reading the file whole.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from appsetup import ROOT, setup
from scale import texts

OUT = ROOT / "benchmarks" / "IMPORT_MEMORY.md"


def write_file(path: Path, n: int, pairs: list[tuple[str, str]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        for i in range(n):
            text, gold = pairs[i % len(pairs)]
            fh.write(json.dumps({"text": f"{text} #{i}", "label": gold}) + "\n")


def import_peak(project_id: int, path: Path) -> tuple[float, float, str]:
    """(peak RSS MB, seconds, the command's output) of ``import_items`` in a fresh process."""
    code = ("import io, resource, sys, django; sys.path.insert(0, '.'); django.setup();"
            "from django.core.management import call_command; out = io.StringIO();"
            f"call_command('import_items', '{project_id}', {str(path)!r}, stdout=out);"
            "print(out.getvalue().strip()); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), check=True,
                          capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    return float(lines[-1]), time.perf_counter() - t0, lines[-2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 80_000, 320_000])
    ap.add_argument("--postgres", help="PostgreSQL server URL (default: SQLite in a temporary folder)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    url = setup(args.postgres)
    from annotator.labelling.projects.creation import create_project
    from learners.features import ORIGINAL, default_config

    pairs = texts()
    rows = []
    with tempfile.TemporaryDirectory(prefix="import-memory-") as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"items-{n}.jsonl.gz"
            write_file(path, n, pairs)
            raw = sum(len(json.dumps({"text": f"{t} #{i}", "label": g})) + 1
                      for i, (t, g) in ((i, pairs[i % len(pairs)]) for i in range(n)))
            project = create_project(name=f"import {n}", task="binary", item_kind="text",
                                     classes=["ham", "spam"], algorithm="paa-i", stream_state="paused",
                                     featurizer_config=default_config("text", ORIGINAL["text"]))
            load = os.getloadavg()[0]
            peak, seconds, said = import_peak(project.pk, path)
            assert f"imported {n} items" in said, said
            rows.append((n, raw / 2**20, path.stat().st_size / 2**20, peak, n / seconds, load))
            print(f"{n} items: peak {peak:.0f} MB, {n / seconds:,.0f} items/s, load {load:.1f}", flush=True)
    lines = ["# `import_items` peak memory against the file's size", "",
             f"`.venv/bin/python benchmarks/import_memory.py --sizes {' '.join(map(str, args.sizes))}"
             f"{' --postgres ...' if args.postgres else ''}` on "
             f"{'PostgreSQL' if url.startswith('postgres') else 'SQLite'}, this 2-core machine shared with "
             "other work. Each file is gzipped JSONL of SMS texts (cycled, numbered); the command runs in a "
             "fresh process (Django and the featurizer loaded) and reports its peak resident memory. "
             "Before (not measured here): the command read the file whole, then held every record and "
             "every featurized row at once. The peak grows until the stored file spans a few 8 MB parts "
             "(`PART_BYTES`), then stays.", "",
             "| items | JSONL MB | gzipped MB | peak RSS MB | items/s (wall, with the store pass) "
             "| load (1 min) |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {n:,} | {raw:.1f} | {gz:.1f} | {peak:.0f} | {rate:,.0f} | {load:.1f} |"
              for n, raw, gz, peak, rate, load in rows]
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
