"""Costs as a project's stream grows: writes benchmarks/SCALE.md.

    .venv/bin/python benchmarks/scale.py --sizes 10000 100000 1000000 \\
        --postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/0

Per size N, on a throw-away PostgreSQL database with one real Celery worker (Redis broker), a
binary text project (paa-i, a 5% label budget, 300 gold labels on a 2,000-item warm-up first,
the original hashed-words text featurizer as in the "before" figures, SMS texts cycled;
synthetic 8-word texts without the dataset):

* JSON API ingest: N items POSTed through the API view (Django test client, batches of
  ``API_MAX_BATCH``), items/s;
* decide: the pipeline decides the N-item backlog in this process (look-ahead N), items/s;
* dashboard recomputed as after a change of the project (a new fingerprint; the cost view is
  a worker's, stored: its computation, ``baseline.refresh``, is reported apart) and the metrics
  API: median of 5, ms;
* ``export_model``: the peak resident memory of a fresh process that exports the model, MB;
* label + next round trip: an annotator labels 200 items through the queue view (the worker
  applies the labels), p50 / p95 ms;
* label -> new model version while a backlog is decided: N more items (at most 1M) are posted
  while the stream is paused, then it runs again and the worker decides them in chunks while an
  annotator labels 50 items; time from the label until the learner's version counts it, p50 /
  p95 ms, and how many of the 50 labels came while backlog items were still pending.

PostgreSQL's autovacuum is left as the server has it (off on the benchmark machine) and no
VACUUM is run. The "before" figures were measured before the scale work (docs/history.md).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from appsetup import ROOT, setup

SMS = ROOT.parent / "shared" / "datasets" / "raw_text" / "SMSSpamCollection.gz"
OUT = ROOT / "benchmarks" / "SCALE.md"
#: most items posted as the backlog decided while labels arrive (a 1M-item backlog)
BACKLOG = 1_000_000
#: items labelled from their gold class first (an untrained learner queries everything)
WARM_UP = 2000
#: the measurements before the scale work, per size (10k, 100k, 1M)
BEFORE = {
    "ingest_per_s": ("2,290", "2,437", "2,525"),
    "decide_per_s": ("622-1,253", "585", "674"),
    "dashboard_ms": ("209", "2,100", "16,600"),
    "metrics_ms": ("146", "1,200", "6,600"),
    "export_mb": ("160", "177", "863"),
    "round_trip_p95_ms": ("29", "40", "371"),
    "label_to_model_p95_ms": ("-", "-", "-"),
}
LABELS = {
    "ingest_per_s": "JSON API ingest, items/s",
    "decide_per_s": "decide (inserted -> decided), one worker, items/s",
    "dashboard_ms": "dashboard, recomputed, ms",
    "metrics_ms": "metrics API, ms",
    "export_mb": "`export_model` peak memory, MB",
    "round_trip_p95_ms": "label + next item round trip p95, ms",
    "label_to_model_p95_ms": "label -> new model version p95 while a backlog is decided, ms",
}


def texts() -> list[tuple[str, str]]:
    """(text, gold) pairs to cycle."""
    if SMS.exists():
        with gzip.open(SMS, "rt", encoding="utf-8") as fh:
            return [(t, g) for g, _, t in (line.rstrip("\n").partition("\t") for line in fh)]
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(5000)]
    return [(" ".join(rng.choice(words, 8)), str(rng.choice(["ham", "spam"]))) for _ in range(5000)]


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[max(0, round(q * len(values)) - 1)]


def start_worker(log: Path) -> subprocess.Popen:
    fh = open(log, "w")  # noqa: SIM115 (closed with the process)
    command = [sys.executable, "-m", "celery", "-A", "annotator", "worker", "--pool=solo",
               "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "WARNING"]
    worker = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), stdout=fh, stderr=subprocess.STDOUT)
    time.sleep(3)
    return worker


def export_peak_mb(project_id: int) -> float:
    """Peak RSS of a fresh process exporting the model (Django set up on the same database)."""
    code = (
        "import os, resource, sys, tempfile, django; sys.path.insert(0, '.'); django.setup();"
        "from annotator.labelling.reporting.export import export_model;"
        "from annotator.labelling.models import Project;"
        f"export_model(Project.objects.get(pk={project_id}), tempfile.mktemp(suffix='.npz'));"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), check=True,
                         capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def post_items(client, project, token: str, pairs, start: int, n: int, batch: int) -> float:
    """POST items ``start .. start+n`` (cycled texts) through the API; seconds taken."""
    t0 = time.perf_counter()
    for a in range(start, start + n, batch):
        body = {"items": [{"text": pairs[i % len(pairs)][0], "gold": pairs[i % len(pairs)][1]}
                          for i in range(a, min(start + n, a + batch))]}
        answer = client.post(f"/api/projects/{project.pk}/items", json.dumps(body),
                             content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")
        assert answer.status_code == 201, answer.content[:300]
    return time.perf_counter() - t0


def run_size(n: int, pairs, worker_log: Path, reuse: bool = False) -> dict[str, float]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.models import Item, Membership, Project
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.reporting.simulation import simulate
    from learners.features import ORIGINAL, default_config

    load_before = os.getloadavg()[1]
    if reuse:  # a project this script built and decided before (--reuse-database): measure the rest
        return {**measure(Project.objects.get(name=f"scale {n}"), n, pairs, worker_log),
                "load_5min_start": load_before, "load_5min_end": os.getloadavg()[1]}
    project = create_project(name=f"scale {n}", task="binary", item_kind="text", classes=["ham", "spam"],
                             featurizer_config=default_config("text", ORIGINAL["text"]),
                             algorithm="paa-i", budget_ratio=0.05, look_ahead=n, stream_state="paused")
    get_user_model().objects.create_user(f"boss{n}", password="pw", is_staff=True)
    user = get_user_model().objects.create_user(f"ann{n}", password="pw")
    Membership.objects.create(project=project, user=user)
    api = Client()
    out: dict[str, float] = {}
    # warm-up: an untrained model queries every item (q = 1), so 300 gold labels come first
    post_items(api, project, project.api_token, pairs, 0, WARM_UP, settings.API_MAX_BATCH)
    Project.objects.filter(pk=project.pk).update(stream_state="running", look_ahead=8)
    simulate(Project.objects.get(pk=project.pk), max_labels=300)
    Project.objects.filter(pk=project.pk).update(stream_state="paused", look_ahead=n + WARM_UP)

    seconds = post_items(api, project, project.api_token, pairs, WARM_UP, n, settings.API_MAX_BATCH)
    out["ingest_per_s"] = n / seconds
    print(f"  {n}: ingest {out['ingest_per_s']:.0f} items/s", flush=True)
    out.update(disk())

    Project.objects.filter(pk=project.pk).update(stream_state="running")
    t0 = time.perf_counter()
    update_project(project.pk)
    out["decide_per_s"] = n / (time.perf_counter() - t0)
    assert not Item.objects.filter(project=project, status="pending").exists()
    print(f"  {n}: decide {out['decide_per_s']:.0f} items/s", flush=True)
    out.update(measure(project, n, pairs, worker_log))
    out["load_5min_start"], out["load_5min_end"] = load_before, os.getloadavg()[1]
    return out


def disk() -> dict[str, float]:
    """The item table's size on disk (heap, TOAST and indexes) and the database's, right after an
    ingest (PostgreSQL's own figures, no VACUUM run), and per million rows of the table (the
    earlier sizes' projects, with their backlogs, are in it too)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('labelling_item'), pg_indexes_size('labelling_item'), "
                       "pg_database_size(current_database()), (SELECT count(*) FROM labelling_item)")
        table, indexes, database, rows = cursor.fetchone()  # every size's rows: they share the table
    out = {"item_rows": rows, "item_table_gb": table / 1e9, "item_indexes_gb": indexes / 1e9,
           "database_gb": database / 1e9,
           "item_table_gb_per_million": table / 1e9 / rows * 1e6}
    print(f"  {rows} rows: item table {out['item_table_gb']:.2f} GB (indexes {out['item_indexes_gb']:.2f}), "
          f"database {out['database_gb']:.2f} GB, {out['item_table_gb_per_million']:.2f} GB per million",
          flush=True)
    return out


def measure(project, n: int, pairs, worker_log: Path) -> dict[str, float]:
    """The measures after the decide one, on the decided ``n``-item project (module docstring)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db.models import F
    from django.test import Client

    from annotator.labelling.models import Item, LearnerState, Project
    from annotator.labelling.reporting.cost_view import refresh
    from annotator.labelling.reporting.dashboard import dashboard_data

    admin = get_user_model().objects.get(username=f"boss{n}")
    user = get_user_model().objects.get(username=f"ann{n}")
    api = Client()
    out: dict[str, float] = {}

    board = Client()
    board.force_login(admin)
    dash, met = [], []
    cache.clear()
    t0 = time.perf_counter()
    dashboard_data(project)  # the first one: "computing…" for the cost view, which no request replays
    out["dashboard_first_ms"] = 1e3 * (time.perf_counter() - t0)
    t0 = time.perf_counter()
    refresh(project.pk)  # what the worker that request asked for does: replay and store the cost view
    out["cost_view_ms"] = 1e3 * (time.perf_counter() - t0)
    for _ in range(5):
        # as when the project changed (a label, a decision): a new fingerprint, so a recompute
        LearnerState.objects.filter(project=project).update(revision=F("revision") + 1)
        t0 = time.perf_counter()
        dashboard_data(project)
        dash.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        assert board.get(f"/api/projects/{project.pk}/metrics").status_code == 200
        met.append(time.perf_counter() - t0)
    out["dashboard_ms"], out["metrics_ms"] = 1e3 * statistics.median(dash), 1e3 * statistics.median(met)
    out["export_mb"] = export_peak_mb(project.pk)
    print(f"  {n}: dashboard {out['dashboard_ms']:.1f} ms, metrics {out['metrics_ms']:.1f} ms, "
          f"export {out['export_mb']:.0f} MB", flush=True)

    # people label with the worker running: a look-ahead of a few items from now on
    Project.objects.filter(pk=project.pk).update(look_ahead=8)
    worker = start_worker(worker_log)
    try:
        person = Client()
        person.force_login(user)
        person.get(f"/projects/{project.pk}/")  # leases the first item
        trips = []
        while len(trips) < 200:
            item = Item.objects.filter(project=project, status="leased", lease_owner=user).first()
            if item is None:
                time.sleep(0.05)
                person.get(f"/projects/{project.pk}/")
                continue
            t0 = time.perf_counter()
            answer = person.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": item.gold},
                                 HTTP_HX_REQUEST="true")
            trips.append(time.perf_counter() - t0)
            assert answer.status_code == 200, answer.content[:300]
        out["round_trip_p50_ms"], out["round_trip_p95_ms"] = 1e3 * p(trips, 0.5), 1e3 * p(trips, 0.95)
        print(f"  {n}: round trip p50 {out['round_trip_p50_ms']:.1f} ms, "
              f"p95 {out['round_trip_p95_ms']:.1f} ms", flush=True)

        # a backlog of n more items (at most BACKLOG), decided by the worker while the annotator
        # labels: posted with the stream paused, so that the whole backlog is still to decide when
        # the first label arrives (posting is slower than deciding: posted into a running stream,
        # it was decided as it arrived and the labels came after it)
        backlog = min(n, BACKLOG)
        Project.objects.filter(pk=project.pk).update(look_ahead=WARM_UP + n + backlog,
                                                     stream_state=Project.StreamState.PAUSED)
        post_items(api, project, project.api_token, pairs, WARM_UP + n, backlog, settings.API_MAX_BATCH)
        Project.objects.filter(pk=project.pk).update(stream_state=Project.StreamState.RUNNING)
        version = lambda: LearnerState.objects.filter(project=project).values_list("version", flat=True)[0]  # noqa: E731
        waits, backlog_seen = [], []
        deadline = time.monotonic() + 600
        while len(waits) < 50 and time.monotonic() < deadline:
            item = (Item.objects.filter(project=project, status__in=["queued", "leased"])
                    .order_by("seq").first())
            if item is None:
                time.sleep(0.05)
                continue
            backlog_seen.append(Item.objects.filter(project=project, seq__gte=WARM_UP + n, status="pending")
                                .order_by().values("id")[:1].exists())
            before = version()
            t0 = time.perf_counter()
            answer = person.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": item.gold},
                                 HTTP_HX_REQUEST="true")
            assert answer.status_code == 200, answer.content[:300]
            while version() == before:
                time.sleep(0.002)
            waits.append(time.perf_counter() - t0)
            time.sleep(0.1)
        out["label_to_model_p50_ms"], out["label_to_model_p95_ms"] = 1e3 * p(waits, 0.5), 1e3 * p(waits, 0.95)
        out["labels_during_backlog"] = sum(backlog_seen)
        print(f"  {n}: label -> model p50 {out['label_to_model_p50_ms']:.0f} ms, "
              f"p95 {out['label_to_model_p95_ms']:.0f} ms ({sum(backlog_seen)} of {len(waits)} labels while "
              "the backlog was being decided)", flush=True)
    finally:
        worker.terminate()  # a warm shutdown: the worker first finishes the backlog it decides
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=60)
    return out


def report(sizes: list[int], results: dict[int, dict[str, float]], url: str, source: str) -> str:
    def size(n: int) -> str:
        return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"

    before_cols = {10_000: 0, 100_000: 1, 1_000_000: 2}
    lines = ["# Costs as the stream grows", "",
             f"`.venv/bin/python benchmarks/scale.py --sizes {' '.join(map(str, sizes))} "
             "--postgres ... --redis ...`",
             f"on this 2-core machine shared with other work; PostgreSQL "
             f"({url.split('@')[-1].split('/')[0]}, "
             "autovacuum as configured, no manual VACUUM) + Redis, one Celery worker (solo pool); "
             f"texts: {source}, hashed words (the MiniLM default featurizes far slower and then bounds "
             "ingest); binary paa-i with a 5% label budget. Before = measured before "
             "the scale work.", "",
             "| measure | " + " | ".join(f"{size(n)} before | {size(n)} now" for n in sizes) + " |",
             "|---|" + "---|---|" * len(sizes)]
    for key, label in LABELS.items():
        cells = []
        for n in sizes:
            b = BEFORE[key][before_cols[n]] if n in before_cols else "-"
            v = results[n].get(key)
            cells.append(f"{b} | -" if v is None else f"{b} | {v:,.0f}" if v >= 100 else f"{b} | {v:.1f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Disk right after the ingest (PostgreSQL's `pg_total_relation_size`, the item table with "
              "its TOAST and indexes, holding every size's items so far; no VACUUM):", ""]
    for n in sizes:
        r = results[n]
        if "item_table_gb" in r:
            lines.append(f"- after the {size(n)} ingest, {r.get('item_rows', n):,.0f} rows: item table "
                         f"{r['item_table_gb']:.2f} GB "
                         f"(indexes {r['item_indexes_gb']:.2f} GB), database {r['database_gb']:.2f} GB: "
                         f"**{r['item_table_gb_per_million']:.2f} GB per million items**")
    lines += ["", "Other figures (p50s, labels given while the backlog was still being decided, the "
              "machine's 5-minute load average when the size started and ended):", ""]
    for n in sizes:
        r = results[n]
        lines.append(f"- {size(n)}: round trip p50 {r['round_trip_p50_ms']:.1f} ms; label -> model p50 "
                     f"{r['label_to_model_p50_ms']:.0f} ms, {r['labels_during_backlog']:.0f} of 50 labels "
                     f"while pending backlog items remained; first dashboard "
                     f"{r['dashboard_first_ms']:,.0f} ms; the cost view's replay (a worker's task, stored) "
                     f"{r['cost_view_ms']:,.0f} ms; load average {r['load_5min_start']:.1f} -> "
                     f"{r['load_5min_end']:.1f}")
    big = max(n for n in sizes if "decide_per_s" in results[n]) if any(
        "decide_per_s" in results[n] for n in sizes) else None
    if big is None or big >= 10_000_000:
        return "\n".join(lines) + "\n"
    r = results[big]
    lines += ["", f"10M items, extrapolated from the {size(big)} run (not measured): ingest and decide are "
              f"linear, {1e7 / r['ingest_per_s'] / 60:.0f} and {1e7 / r['decide_per_s'] / 60:.0f} minutes "
              "at the rates above; the dashboard, the metrics API, the label + next round trip and "
              "label -> model read a bounded number of rows (tests/engine/test_app_flat.py), so they are "
              f"expected at the {size(big)} figures; `export_model` reads no item row, so its memory "
              "stays too."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--postgres", required=True, help="PostgreSQL server URL")
    ap.add_argument("--redis", required=True, help="Redis broker URL")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--append", action="store_true", help="append the report to --out as a new "
                    "section (its title one level down) instead of replacing the file")
    ap.add_argument("--reuse-database", help="an existing database where this script built the "
                    "projects of --sizes (kept): measure all but ingest and decide on them")
    args = ap.parse_args()
    os.environ["ALLOWED_HOSTS"] = "testserver"  # requests go through Django's test client
    url = setup(args.postgres, args.redis, reuse=args.reuse_database)
    pairs = texts()
    source = "SMS Spam Collection, cycled" if SMS.exists() else "synthetic 8-word texts"
    results = {}
    log = Path(tempfile.gettempdir()) / f"scale-worker-{os.getpid()}.log"
    for n in args.sizes:
        print(f"size {n}", flush=True)
        results[n] = run_size(n, pairs, log, reuse=bool(args.reuse_database))
    text = report(args.sizes, results, url, source)
    if args.append:
        old = Path(args.out).read_text() if Path(args.out).exists() else ""
        text = old.rstrip("\n") + "\n\n#" + text.replace(
            "# Costs as the stream grows", f"# Measured at {' and '.join(map(str, args.sizes))} items "
            f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", 1)
    Path(args.out).write_text(text)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
