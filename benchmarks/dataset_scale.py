"""The dataset export and the item browser at 1M items (docs/dataset.md): writes benchmarks/DATASET.md.

    .venv/bin/python benchmarks/dataset_scale.py --sizes 100000 1000000 \\
        --postgres postgres://postgres@127.0.0.1:5432/postgres

Per size N, on a throw-away PostgreSQL database, a binary text project (SMS texts cycled;
synthetic 8-word texts without the dataset) whose decision log is loaded by ``COPY`` as a
decided stream would leave it (state load, not a replay: deciding 1M items through the pipeline
is benchmarks/scale.py's subject): 5% of the items labelled by one annotator (queried, a primary
label, 1 in 10 of them against the prediction), 0.5% waiting in the queue, 1% pending, the rest
decided by the model alone, plus 200 honeypots and 200 decided audits; ``ANALYZE`` afterwards.

* export: ``manage.py export_dataset`` in a fresh process per format (csv, jsonl, parquet):
  wall time and peak resident memory (``ru_maxrss`` of the child), and the file size;
* item browser: an admin's GET of the first page and of filtered pages through Django's test
  client (the whole view: query, template), 30 requests each after 3 warm-ups, p50 / p95 ms.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from appsetup import ROOT, setup

SMS = ROOT.parent / "shared" / "datasets" / "raw_text" / "SMSSpamCollection.gz"
OUT = ROOT / "benchmarks" / "DATASET.md"
FORMATS = ("csv", "jsonl", "parquet")
#: the item browser's pages measured: name -> query string
PAGES = {"first page": "", "status=labelled": "status=labelled", "provenance=human": "provenance=human",
         "predicted=spam": "predicted=spam", "confidence=low": "confidence=low",
         "disagreement=model": "disagreement=model", "q=free (text contains)": "q=free",
         "q=xyzzy (matches nothing)": "q=xyzzy",
         "q=zq (2 letters matching nothing: no trigram, reads a window of items)": "q=zq",
         "provenance=audited (200 items)": "provenance=audited",
         "a page deep in the stream (after=N/2)": "after={half}"}
REQUESTS, WARM = 30, 3
#: printed by a child process: its own peak resident memory, MB (VmHWM: reset by exec, unlike
#: ru_maxrss, which on Linux keeps the forking parent's peak: this script's, holding the loaded state)
PEAK_MB = ("print([int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0]"
           " / 1024)")


def texts() -> list[tuple[str, str]]:
    """(text, gold) pairs to cycle."""
    if SMS.exists():
        with gzip.open(SMS, "rt", encoding="utf-8") as fh:
            return [(t, g) for g, _, t in (line.rstrip("\n").partition("\t") for line in fh)]
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(5000)] + ["free"]
    return [(" ".join(rng.choice(words, 8)), str(rng.choice(["ham", "spam"]))) for _ in range(5000)]


def load_state(n: int, pairs: list[tuple[str, str]]) -> tuple[int, Path]:
    """A project whose decision log holds ``n`` items (module docstring); ``(project id, source)``."""
    import json

    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotator.labelling.models import Honeypot, Item, Label, Membership, Review
    from annotator.labelling.projects.creation import create_project

    project = create_project(name=f"dataset {n}", task="binary", item_kind="text", classes=["ham", "spam"],
                             algorithm="paa-i", params={"delta": 0.5}, rng_seed=3)
    users = get_user_model()
    ann = users.objects.create_user(f"ann{n}", password="pw")
    admin = users.objects.create_user(f"admin{n}", password="pw")
    Membership.objects.create(user=ann, project=project, role="annotator")
    Membership.objects.create(user=admin, project=project, role="admin")
    rng = np.random.default_rng(n)
    kind = rng.random(n)
    scores = rng.normal(0, 1.5, n)
    now = datetime.now(UTC).isoformat()
    pending_from = n - n // 100
    columns = ("project_id", "seq", "text", "filename", "gold", "status", "prediction", "score", "query_prob",
               "queried", "model_version", "decided_at", "created")
    table = connection.ops.quote_name(Item._meta.db_table)
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for i in range(n):
            text, gold = pairs[i % len(pairs)]
            if i >= pending_from:
                copy.write_row((project.pk, i, text, "", json.dumps(gold), "pending", None, None, None, None,
                                None, None, now))
                continue
            status = "labelled" if kind[i] < 0.05 else "queued" if kind[i] < 0.055 else "auto"
            s = float(scores[i])
            q = 1.0 / (1.0 + abs(s)) if status != "auto" else max(0.001, 0.2 / (1.0 + abs(s)))
            prediction = json.dumps("spam" if s > 0 else "ham")
            copy.write_row((project.pk, i, text, "", json.dumps(gold), status, prediction, s, q,
                            status != "auto", i // 1000, now, now))
    labelled = list(Item.objects.filter(project=project, status="labelled").values_list("id", "prediction"))
    table = connection.ops.quote_name(Label._meta.db_table)
    lcols = ("item_id", "project_id", "annotator_id", "value", "kind", "seconds", "primary", "created",
             "applied_version", "drawn")
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {table} ({', '.join(connection.ops.quote_name(c) for c in lcols)}) FROM STDIN") as copy:
        for k, (pk, prediction) in enumerate(labelled):
            value = prediction if k % 10 else ("ham" if prediction == "spam" else "spam")
            copy.write_row((pk, project.pk, ann.pk, json.dumps(value), "opinion", 3.0, True, now, k + 1,
                            True))
    autos = list(Item.objects.filter(project=project, status="auto").order_by("?")
                 .values_list("id", "gold")[:400])
    Honeypot.objects.bulk_create([Honeypot(project=project, item_id=pk, annotator=ann)
                                  for pk, _ in autos[:200]])
    Review.objects.bulk_create([Review(project=project, item_id=pk, reason="audit", sample_prob=0.01,
                                       value=gold, decided_by=admin, decided_at=datetime.now(UTC))
                                for pk, gold in autos[200:]])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return project.pk, SMS if SMS.exists() else Path("synthetic")


def trigram_index() -> str:
    """Whether the migration could create the trigram index (``pg_trgm`` needs the privilege)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'item_text_trgm'")
        return "present" if cursor.fetchone() else "absent (no pg_trgm): the search scans"


def baseline_mb() -> float:
    """Peak MB of a fresh process that sets Django up and imports the export, exporting nothing
    (what every export process holds before its first row)."""
    code = ("import sys, django; sys.path.insert(0, '.'); django.setup();"
            "import annotator.labelling.management.commands.export_dataset, pyarrow.parquet;"
            f"{PEAK_MB}")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), check=True,
                          capture_output=True, text=True)
    return float(done.stdout.strip().splitlines()[-1])


def export_run(project_id: int, fmt: str) -> dict[str, float]:
    """Wall seconds, peak MB and file MB of ``manage.py export_dataset`` in a fresh process."""
    out = Path(tempfile.mkdtemp()) / f"dataset.{fmt}"
    code = ("import sys, django; sys.path.insert(0, '.'); django.setup();"
            "from django.core.management import call_command;"
            f"call_command('export_dataset', '{project_id}', '{out}', format='{fmt}');"
            f"{PEAK_MB}")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), check=True,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    size = out.stat().st_size / 1e6
    out.unlink()
    return {"seconds": seconds, "peak_mb": float(done.stdout.strip().splitlines()[-1]), "file_mb": size}


def browse_times(project_id: int, n: int) -> dict[str, tuple[float, float, int]]:
    """Per page of :data:`PAGES`: (p50 ms, p95 ms, rows shown)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")  # one of ALLOWED_HOSTS' defaults
    client.force_login(get_user_model().objects.get(username=f"admin{n}"))
    found = {}
    for name, query in PAGES.items():
        url = f"/projects/{project_id}/items/?{query.format(half=n // 2)}"
        times = []
        for k in range(WARM + REQUESTS):
            start = time.perf_counter()
            response = client.get(url)
            elapsed = (time.perf_counter() - start) * 1000
            assert response.status_code == 200, (url, response.status_code, response.content[:300])
            if k >= WARM:
                times.append(elapsed)
        rows = response.content.decode().count('<td data-label="#">')
        times.sort()
        found[name] = (statistics.median(times), times[max(0, round(0.95 * len(times)) - 1)], rows)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--postgres", required=True, help="PostgreSQL server URL (a database is created)")
    args = parser.parse_args()
    setup(args.postgres)
    pairs = texts()
    load = os.getloadavg()
    results = {}
    for n in args.sizes:
        t0 = time.perf_counter()
        pk, source = load_state(n, pairs)
        print(f"{n:,} items loaded in {time.perf_counter() - t0:.0f} s", flush=True)
        exports = {fmt: export_run(pk, fmt) for fmt in FORMATS}
        print(n, exports, flush=True)
        pages = browse_times(pk, n)
        print(n, pages, flush=True)
        results[n] = (exports, pages)
    base = baseline_mb()
    load_after = os.getloadavg()
    lines = ["# Dataset export and item browser at scale", "",
             "Reproduce: `.venv/bin/python benchmarks/dataset_scale.py --sizes "
             + " ".join(str(n) for n in args.sizes) + " --postgres postgres://postgres@127.0.0.1:5432/postgres`",
             "", f"Texts: {source}. PostgreSQL, state loaded by COPY then ANALYZE (module docstring of the "
             "script). Machine load (`uptime`, 1/5/15 min) at the start: "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; at the end: "
             f"{load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f} (2 cores, shared with other "
             "work: the times are upper bounds).", "",
             f"Trigram index of the text search (migration 0031): {trigram_index()}.", "",
             "## Export (`manage.py export_dataset`, a fresh process)", "",
             "A process that sets Django up and imports the export without exporting peaks at "
             f"{base:.0f} MB.", "",
             "| items | format | wall time, s | peak memory, MB | file, MB |", "|---:|---|---:|---:|---:|"]
    for n, (exports, _) in results.items():
        for fmt, e in exports.items():
            lines.append(f"| {n:,} | {fmt} | {e['seconds']:.1f} | {e['peak_mb']:.0f} | {e['file_mb']:.0f} |")
    lines += ["", "## Item browser (an admin's GET through Django's test client, "
              f"{REQUESTS} requests after {WARM} warm-ups)", "",
              "| items | page | p50, ms | p95, ms | rows shown |", "|---:|---|---:|---:|---:|"]
    for n, (_, pages) in results.items():
        for name, (p50, p95, rows) in pages.items():
            lines.append(f"| {n:,} | {name} | {p50:.0f} | {p95:.0f} | {rows} |")
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT.read_text())


if __name__ == "__main__":
    main()
