"""API ingest and decide rates of one project on PostgreSQL: writes INGEST_DECIDE.md.

    .venv/bin/python benchmarks/ingest_decide.py --n 100000 \\
        --postgres postgres://postgres@127.0.0.1:5432/postgres [--profile ingest|decide] [--fillfactor N]

The project is scale.py's: binary text, paa-i with a 5% label budget, the original hashed-words
featurizer, SMS texts cycled, 300 gold labels on a 2,000-item warm-up first. Then N items are
POSTed through the JSON API view (Django test client, batches of ``API_MAX_BATCH``) and the
pipeline decides the N-item backlog in this process. Each phase reports items/s of wall time,
of this process's CPU time and of it plus its PostgreSQL backend's CPU time (a server on this
host), the share of item updates that were heap-only, and the load average (the machine's two
cores are shared). ``--profile`` prints the phase's cProfile (top 25 by own time);
``--fillfactor`` sets the item table's fillfactor before the first item (to compare designs).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from pathlib import Path

from appsetup import ROOT, setup

OUT = ROOT / "benchmarks" / "INGEST_DECIDE.md"


def backend_cpu() -> float:
    """CPU seconds of this process's PostgreSQL backend so far (NaN when the server is not on this
    host: its /proc entry is not ours to read)."""
    from django.db import connection

    connection.ensure_connection()
    stat = Path(f"/proc/{connection.connection.info.backend_pid}/stat")
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def item_updates() -> tuple[int, int]:
    """Item rows updated so far in this database, and of those the heap-only (HOT) ones."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                       "WHERE relname = 'labelling_item'")
        upd, hot = cursor.fetchone()
    return upd, hot


def timed(label: str, profile: str | None, fn, n: int) -> dict[str, float]:
    prof = cProfile.Profile() if profile == label else None
    load = os.getloadavg()[0]
    updates = item_updates()
    db = backend_cpu()
    wall, cpu = time.perf_counter(), time.process_time()
    if prof is not None:
        prof.enable()
    fn()
    if prof is not None:
        prof.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    db = backend_cpu() - db
    time.sleep(0.6)  # the statistics of the backend's last transactions reach the view (PostgreSQL 15+)
    upd, hot = (b - a for a, b in zip(updates, item_updates(), strict=True))
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    out = {"wall_per_s": n / wall, "cpu_per_s": n / cpu, "wall_s": wall, "cpu_s": cpu, "db_s": db,
           "hot": hot / upd if upd else float("nan"),
           "load": (load + os.getloadavg()[0]) / 2}
    print(f"{label}: {out['wall_per_s']:,.0f} items/s wall, {out['cpu_per_s']:,.0f} items/s of this "
          f"process's CPU ({wall:.1f} s wall, {cpu:.1f} s CPU, database backend {db:.1f} s CPU, "
          f"{out['hot']:.0%} of item updates heap-only), "
          f"load average {out['load']:.1f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--postgres", required=True, help="PostgreSQL server URL")
    ap.add_argument("--profile", choices=["ingest", "decide"])
    ap.add_argument("--fillfactor", type=int, help="the item table's fillfactor (default: migration 0016's)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    os.environ["ALLOWED_HOSTS"] = "testserver"
    setup(args.postgres)
    from django.conf import settings
    from django.test import Client
    from scale import WARM_UP, post_items, texts

    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.models import Item, Project
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.reporting.simulation import simulate
    from learners.features import ORIGINAL, default_config

    n = args.n
    if args.fillfactor:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE labelling_item SET (fillfactor = {int(args.fillfactor)})")
    pairs = texts()
    project = create_project(name="rates", task="binary", item_kind="text", classes=["ham", "spam"],
                             featurizer_config=default_config("text", ORIGINAL["text"]),
                             algorithm="paa-i", budget_ratio=0.05, look_ahead=8, stream_state="paused")
    api = Client()
    post_items(api, project, project.api_token, pairs, 0, WARM_UP, settings.API_MAX_BATCH)
    Project.objects.filter(pk=project.pk).update(stream_state="running")
    simulate(Project.objects.get(pk=project.pk), max_labels=300)
    Project.objects.filter(pk=project.pk).update(stream_state="paused", look_ahead=n + WARM_UP)

    ingest = timed("ingest", args.profile, lambda: post_items(
        api, project, project.api_token, pairs, WARM_UP, n, settings.API_MAX_BATCH), n)
    Project.objects.filter(pk=project.pk).update(stream_state="running")
    decide = timed("decide", args.profile, lambda: update_project(project.pk), n)
    assert not Item.objects.filter(project=project, status="pending").exists()
    queried = Item.objects.filter(project=project, seq__gte=WARM_UP, queried=True).count()

    def row(name: str, r: dict[str, float]) -> str:
        both = n / (r["cpu_s"] + r["db_s"])
        hot = "-" if r["hot"] != r["hot"] else f"{r['hot']:.0%}"
        return (f"| {name} | {r['wall_per_s']:,.0f} | {r['cpu_per_s']:,.0f} | {both:,.0f} | "
                f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['db_s']:.1f} | {hot} | {r['load']:.1f} |")

    Path(args.out).write_text("\n".join([
        "# API ingest and decide rates, one project", "",
        f"`.venv/bin/python benchmarks/ingest_decide.py --n {n} --postgres <url>` on PostgreSQL, "
        "this 2-core machine shared with other work (load average below). Project: binary text, "
        "paa-i, 5% label budget, original hashed-words featurizer, SMS texts cycled, 300 gold "
        f"labels on a 2,000-item warm-up; then {n:,} items POSTed through the JSON API "
        f"(batches of {settings.API_MAX_BATCH}) and decided by the pipeline in one process. "
        "CPU = this process's CPU time (Django + the learner); DB CPU = its PostgreSQL backend's "
        "(read from /proc: the server runs on this host); serial = items per second of the two "
        "together, the rate one core would reach doing both in turn with no other work; heap-only "
        "= the item updates PostgreSQL made without new index entries (HOT, docs/operations.md).", "",
        "| phase | items/s (wall) | items/s (process CPU) | items/s (process + DB CPU, serial) | "
        "wall s | CPU s | DB CPU s | heap-only | load average |",
        "|---|---|---|---|---|---|---|---|---|", row("JSON API ingest", ingest), row("decide", decide), "",
        f"Queried while deciding: {queried:,} of {n:,} ({queried / n:.1%}).", ""]))


if __name__ == "__main__":
    main()
