"""Load: gunicorn + 2 Celery workers on PostgreSQL + Redis, N simulated annotators on a 10,000-item
digits project; writes ``benchmarks/RELIABILITY.md``.

    .venv/bin/python benchmarks/load.py [--runs 20:1000 20:500 20:0 50:1000 100:1000 100:0] [--seconds 60]
        [--web 8:1] [--postgres postgres://postgres@127.0.0.1:5432/postgres]
        [--redis redis://127.0.0.1:6379/0] [--out benchmarks/RELIABILITY.md]

Each run gets a fresh database and queue. The project: scikit-learn's 1,797 digits repeated in
six seeded shuffles (10,000 items; the repeats are new items to the app), ``mpaa-i`` with delta
100 so that nearly every item is queried (the heaviest case for the queue). gunicorn runs the
production settings (``DEBUG=0``, ``HTTPS=0`` on loopback) with ``--web PROCESSES:THREADS``;
two ``celery worker --pool=solo`` processes, one with the beat sweep. Annotators are threads of
this process (:class:`harness.http_annotator.HttpAnnotator`, keep-alive like a browser):
log in through the form, then POST a label with ``HX-Request`` and get the next item's panel in
the same response (the browser's round trip). ``--runs N:T`` runs N annotators who look at each
item for T ms before answering (0: a stress test where every annotator answers at once). The
issue does not say how fast a simulated annotator is; the report takes 1 s per item, a fast
person pressing one key per digit, as the working pace, and shows 500 ms and 0 ms beside it.

A run starts measuring once every annotator has labelled one item (logins hash passwords on
purpose slowly; that start-up is not the steady state), then measures for ``--seconds``. A
monitor polls the database every 20 ms and stamps each label when it is applied: label -> new
model version latency at 20 ms resolution. CPU seconds of each part (gunicorn, Celery workers,
PostgreSQL, Redis, the client processes) are sampled from ``/proc`` every 0.5 s over the same
window (:class:`harness.cpu_usage.CpuMeter`), per label; how busy the cores were comes from
``/proc/stat``.

Everything, clients included, shares this machine's cores: the figures are a floor.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "RELIABILITY.md"
GOAL_ROUND_TRIP_P95_MS = 50
GOAL_APPLY_P95_MS = 1000
#: Processes the simulated annotators are spread over (threads within each).
CLIENT_PROCESSES = 4


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; nan for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def setup(db_url: str, broker: str, tmp: Path, n_users: int) -> tuple[int, dict[int, int], dict[str, str]]:
    """Create and migrate the database, the project and the users; returns (project id, gold, env)."""
    env = {
        "DJANGO_SETTINGS_MODULE": "annotator.settings",
        "DATABASE_URL": db_url,
        "CELERY_BROKER_URL": broker,
        "CELERY_TASK_DEFAULT_QUEUE": f"annotator-load-{os.getpid()}",
        "SECRET_KEY": "load-benchmark-" + "x" * 40,
        "DEBUG": "0",
        "HTTPS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "VAR_DIR": str(tmp),
        "SWEEP_SECONDS": "5",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotator.labelling.ingest import import_records
    from annotator.labelling.models import Item, Membership
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.projects.demo import digit_records

    call_command("migrate", verbosity=0)
    project = create_project(
        name="load digits",
        task="multiclass",
        item_kind="image",
        classes=list(range(10)),
        algorithm="mpaa-i",
        params={"delta": 100.0},
        featurizer_config={"kind": "image", "width": 16, "height": 16, "invert": True},
    )
    records = [r for seed in range(6) for r in digit_records(None, seed=seed)][:10_000]
    import_records(project, records)
    User = get_user_model()
    for i in range(n_users):
        user = User.objects.create_user(f"load{i}", password="load-pw")
        Membership.objects.create(user=user, project=project)
    gold = dict(Item.objects.filter(project=project).values_list("id", "gold"))
    return project.pk, gold, env


class Monitor(threading.Thread):
    """Stamps each label with the wall time it was first seen applied (polling every 20 ms)."""

    def __init__(self, project_id: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.project_id, self.stop, self.applied_at = project_id, stop, {}

    def run(self) -> None:
        from django.db import connection

        from annotator.labelling.models import Label

        last = 0
        while not self.stop.is_set():
            now = time.time()
            for pk, item in Label.objects.filter(
                project_id=self.project_id, applied_version__gt=last
            ).values_list("applied_version", "item_id"):
                self.applied_at.setdefault(item, now)
                last = max(last, pk)
            time.sleep(0.02)
        connection.close()


def start_workers(env: dict[str, str]) -> list[subprocess.Popen]:
    """Two ``celery worker --pool=solo`` processes, the first with the beat sweep (``-B``)."""
    command = [sys.executable, "-m", "celery", "-A", "annotator", "worker", "--pool=solo",
               "--loglevel=WARNING"]
    return [
        subprocess.Popen(
            [*command, f"--hostname=load{i}@%h", *(["-B"] if i == 0 else [])],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(2)
    ]


def annotate(base: str, project_id: int, names: list[str], gold: dict[int, int], think_s: float,
             ready: Any, stop: Any, results: Any) -> None:
    """One client process: an annotator thread per name; sets ``ready`` once each has labelled an
    item, labels until ``stop``, then puts each annotator's record on ``results``."""
    from harness.http_annotator import HttpAnnotator

    done = threading.Event()
    people = [HttpAnnotator(base, project_id, name, "load-pw", gold, done, think_s=think_s) for name in names]
    for p in people:
        p.start()
    while not stop.wait(0.05):
        if all(p.round_trips or p.errors for p in people):
            ready.set()
    done.set()
    for p in people:
        p.join(60)
    for p in people:
        results.put({"sent": p.sent, "round_trips": p.round_trips, "caught_up": p.caught_up,
                     "request_times": p.request_times, "errors": p.errors})


def start_annotators(base: str, project_id: int, n: int, gold: dict[int, int], think_s: float) -> tuple:
    """``n`` annotators in :data:`CLIENT_PROCESSES` processes (threads inside each), so that a
    reply is not kept waiting by the other clients' Python (one interpreter lock per process,
    as a browser has its own process). Returns (processes, ready events, stop event, results)."""
    ctx = multiprocessing.get_context("spawn")  # the parent holds database connections
    stop, results = ctx.Event(), ctx.Queue()
    groups = [[f"load{i}" for i in range(k, n, CLIENT_PROCESSES)] for k in range(min(n, CLIENT_PROCESSES))]
    ready = [ctx.Event() for _ in groups]
    procs = [ctx.Process(target=annotate, args=(base, project_id, names, gold, think_s, r, stop, results))
             for names, r in zip(groups, ready, strict=True)]
    for proc in procs:
        proc.start()
    return procs, ready, stop, results


def run(config: dict) -> dict:
    """One measured run on the fresh database ``config["db"]``; returns the figures of the report."""
    from harness import cpu_usage
    from harness.servers import Gunicorn

    annotators, think_ms, seconds = config["annotators"], config["think_ms"], config["seconds"]
    with tempfile.TemporaryDirectory() as tmp:
        project_id, gold, env = setup(config["db"], config["redis"], Path(tmp), annotators)
        processes, threads = config["web"]
        server = Gunicorn(env, workers=processes, threads=threads)
        workers = start_workers(env)
        from annotator.labelling.engine.pipeline import update_project

        try:
            update_project(project_id)
            watch = threading.Event()
            monitor = Monitor(project_id, watch)
            monitor.start()
            procs, ready, stop, results = start_annotators(server.base, project_id, annotators, gold,
                                                           think_ms / 1e3)
            deadline = time.monotonic() + 120  # every annotator labelled once: the steady state
            while not all(r.is_set() for r in ready) and time.monotonic() < deadline:
                time.sleep(0.05)

            def groups() -> dict[str, list[int]]:
                return {
                    "web": cpu_usage.tree(server.proc.pid),
                    "workers": [pid for w in workers for pid in cpu_usage.tree(w.pid)],
                    "postgres": cpu_usage.named("postgres"),
                    "redis": cpu_usage.named("redis-server"),
                    "clients": [os.getpid(), *(p.pid for p in procs)],
                }

            meter, start = cpu_usage.CpuMeter(groups), time.time()
            meter.start()
            time.sleep(seconds)
            end = time.time()
            cpu, busy = meter.finish()
            stop.set()
            people = [results.get(timeout=120) for _ in range(annotators)]
            for proc in procs:
                proc.join(30)
            time.sleep(3)  # let the workers apply the last labels
            watch.set()
            monitor.join(10)
        finally:
            server.stop()
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(30)
    window = [(t, item, trip) for p in people
              for (t, item), trip in zip(p["sent"], p["round_trips"], strict=True) if start <= t < end]
    trips = [trip for _, _, trip in window]
    latency = [monitor.applied_at[item] - t for t, item, _ in window if item in monitor.applied_at]
    requests = sum(1 for p in people for t in p["request_times"] if start <= t < end)
    errors = [e for p in people for e in p["errors"]]
    return {
        "annotators": annotators,
        "think_ms": think_ms,
        "web": f"{processes}x{threads}",
        "labels": len(trips),
        "labels_per_s": len(trips) / (end - start),
        "requests_per_s": requests / (end - start),
        "p50": percentile(trips, 0.5) * 1e3,
        "p95": percentile(trips, 0.95) * 1e3,
        "p99": percentile(trips, 0.99) * 1e3,
        "apply_p50": percentile(latency, 0.5) * 1e3,
        "apply_p95": percentile(latency, 0.95) * 1e3,
        "unapplied": len(trips) - len(latency),
        "caught_up": sum(1 for p in people for t in p["caught_up"] if start <= t < end),
        "errors": len(errors),
        "error_examples": errors[:3],
        "cpu_ms_per_label": {k: 1e3 * v / max(1, len(trips)) for k, v in cpu.items()},
        "cpu_busy": busy,
    }


def combine(runs: list[dict]) -> dict:
    """Repeated runs of one setting: the median of each figure (counts summed), with the range of
    the round trip's p95 across runs."""
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float) and key != "think_ms":
            out[key] = statistics.median(r[key] for r in runs)
    for key in ("labels", "caught_up", "errors", "unapplied"):
        out[key] = sum(r[key] for r in runs)
    out["error_examples"] = [e for r in runs for e in r["error_examples"]][:3]
    out["cpu_ms_per_label"] = {k: statistics.median(r["cpu_ms_per_label"][k] for r in runs)
                               for k in runs[0]["cpu_ms_per_label"]}
    out["p95_range"] = (min(r["p95"] for r in runs), max(r["p95"] for r in runs))
    out["repeats"] = len(runs)
    return out


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines."""
    return ["| " + " | ".join(cells) + " |" for cells in [header, ["---"] * len(header), *rows]]


def report(results: list[dict], command: str) -> str:
    """RELIABILITY.md: the table, CPU per label by part, and what limits the figures."""
    lines = [
        "# Reliability and load figures",
        "",
        f"Written by `benchmarks/load.py` on {time.strftime('%Y-%m-%d')} ({os.cpu_count()} cores; the "
        "simulated annotators, gunicorn, 2 Celery workers, PostgreSQL and Redis all share them).",
        "",
        "```",
        command,
        "```",
        "",
        f"Goals: label + next item p95 <= {GOAL_ROUND_TRIP_P95_MS} ms, label -> new model version "
        f"p95 <= {GOAL_APPLY_P95_MS} ms, 0 errors. Measured over the steady state (after every annotator "
        "labelled once); \"think\" is the time an annotator looks at an item before answering: 1,000 ms "
        "is the working pace (a fast person pressing one key per digit), 500 ms twice that, 0 ms a stress "
        "test in which every annotator answers the instant the next item appears. Each "
        "setting ran several times, interleaved: the table gives medians over the runs (labels, queue "
        "empty and errors are totals) and the p95's range; this machine's speed varies by tens of percent "
        "from run to run.",
        "",
    ]
    lines += table(
        ["annotators", "think ms", "gunicorn", "runs", "labels", "labels/s", "requests/s",
         "label+next p50 ms", "p95 ms", "p95 range", "p99 ms", "label -> model p50 ms", "p95 ms",
         "queue empty", "errors"],
        [[str(r["annotators"]), f"{r['think_ms']:g}", r["web"], str(r["repeats"]), str(r["labels"]),
          f"{r['labels_per_s']:.1f}", f"{r['requests_per_s']:.1f}", f"{r['p50']:.1f}", f"{r['p95']:.1f}",
          "{:.0f}-{:.0f}".format(*r["p95_range"]), f"{r['p99']:.1f}",
          f"{r['apply_p50']:.0f}", f"{r['apply_p95']:.0f}", str(r["caught_up"]), str(r["errors"])]
         for r in results])
    lines += [
        "",
        "\"queue empty\": times an annotator asked for an item and none waited (should stay 0).",
        "",
        "CPU per label (ms, from `/proc` over the same window) and how busy the machine was:",
        "",
    ]
    lines += table(
        ["annotators", "think ms", "gunicorn", "Celery workers", "PostgreSQL", "Redis", "clients + monitor",
         "all", "machine busy"],
        [[str(r["annotators"]), f"{r['think_ms']:g}",
          *(f"{r['cpu_ms_per_label'][k]:.1f}" for k in ("web", "workers", "postgres", "redis", "clients")),
          f"{sum(r['cpu_ms_per_label'].values()):.1f}", f"{r['cpu_busy']:.0%}"] for r in results])
    lines += ["", "What limits it:", ""] + [f"- {line}" for line in limits(results)]
    for r in results:
        if r["error_examples"]:
            lines.append(f"- errors with {r['annotators']} annotators, e.g.: {r['error_examples']}")
    return "\n".join(lines) + "\n"


def limits(results: list[dict]) -> list[str]:
    """Sentences drawn from the figures: each goal per run, where the round trip bends, what
    bounds throughput, and when annotators found the queue empty."""
    out = []
    for r in results:
        per_label = sum(r["cpu_ms_per_label"].values())
        trip = "meets" if r["p95"] <= GOAL_ROUND_TRIP_P95_MS else "misses"
        apply = "meets" if r["apply_p95"] <= GOAL_APPLY_P95_MS else "misses"
        out.append(
            f"{r['annotators']} annotators, think {r['think_ms']:g} ms ({r['labels_per_s']:.0f} labels/s): "
            f"label + next p95 {r['p95']:.0f} ms ({trip} the {GOAL_ROUND_TRIP_P95_MS} ms goal), label -> "
            f"model p95 {r['apply_p95']:.0f} ms ({apply} the {GOAL_APPLY_P95_MS} ms goal), "
            f"{r['errors']} errors; {per_label:.0f} CPU ms per label, machine {r['cpu_busy']:.0%} busy."
        )
    paced = sorted((r for r in results if r["think_ms"] > 0), key=lambda r: r["labels_per_s"])
    good = [r for r in paced if r["p95"] <= GOAL_ROUND_TRIP_P95_MS]
    bent = [r for r in paced if r["p95"] > GOAL_ROUND_TRIP_P95_MS]
    if good and bent:
        g, b = good[-1], bent[0]
        out.append(
            f"Where it bends: with annotators at a human pace the round trip meets its goal up to "
            f"{g['labels_per_s']:.0f} labels/s ({g['annotators']} annotators, machine "
            f"{g['cpu_busy']:.0%} busy) and misses it at {b['labels_per_s']:.0f} labels/s "
            f"({b['annotators']} annotators, {b['cpu_busy']:.0%} busy): requests queue for the cores."
        )
    saturated = [r for r in results if r["cpu_busy"] >= 0.85]
    if saturated:
        r = max(saturated, key=lambda r: r["labels_per_s"])
        per_label, cores = sum(r["cpu_ms_per_label"].values()), os.cpu_count()
        mean_ms = 1e3 * r["annotators"] / r["labels_per_s"]
        needed = 1e3 * r["annotators"] / GOAL_ROUND_TRIP_P95_MS
        web = r["cpu_ms_per_label"]["web"]
        out.append(
            f"Saturated runs are CPU-bound: at {per_label:.0f} CPU ms per label (all parts; the web request "
            f"alone {web:.0f} ms) {cores} cores give at most {cores * 1e3 / per_label:.0f} labels/s; with no "
            f"think time the round trip is queueing (Little's law: {r['annotators']} annotators / "
            f"{r['labels_per_s']:.0f} labels/s = {mean_ms:.0f} ms mean). A p95 of "
            f"{GOAL_ROUND_TRIP_P95_MS} ms for {r['annotators']} annotators answering at once would need over "
            f"{needed:.0f} labels/s. More annotators lengthen the queue; nothing fails."
        )
    empty = [r for r in results if r["caught_up"]]
    if empty:
        out.append(
            "Annotators found the queue empty only in runs where the machine was at least "
            f"{min(r['cpu_busy'] for r in empty):.0%} busy ("
            + ", ".join(f"{r['caught_up']} of {r['labels']} labels with {r['annotators']} annotators, "
                        f"think {r['think_ms']:g} ms" for r in empty)
            + "): the worker that decides the next items waits for the cores like everything else."
        )
    return out


def one(config: dict) -> None:
    """One run on a fresh database ``annotator_load_<pid>`` (dropped afterwards); prints JSON."""
    import psycopg

    name = f"annotator_load_{os.getpid()}"
    admin = psycopg.connect(config["postgres"], autocommit=True)
    admin.execute(f"CREATE DATABASE {name}")
    try:
        result = run({**config, "db": config["postgres"].rsplit("/", 1)[0] + "/" + name})
    finally:
        from django.db import connections

        connections.close_all()
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="+",
                    default=["20:1000", "20:500", "20:0", "50:1000", "100:1000", "100:0"],
                    help="ANNOTATORS:THINK_MS per run (think time before each label)")
    ap.add_argument("--seconds", type=float, default=60, help="measured window per run")
    ap.add_argument("--web", default="4:4", help="gunicorn PROCESSES:THREADS")
    ap.add_argument("--repeat", type=int, default=3, help="runs per setting (the report gives medians)")
    ap.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    web = [int(v) for v in args.web.split(":")]
    runs: dict[str, list[dict]] = {spec: [] for spec in args.runs}
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits every setting
        for spec in args.runs:  # each run in a fresh process: a fresh database and Django setup
            n, think = spec.split(":")
            config = {"annotators": int(n), "think_ms": float(think), "seconds": args.seconds, "web": web,
                      "postgres": args.postgres, "redis": args.redis}
            out = subprocess.run([sys.executable, __file__, "--one", json.dumps(config)], cwd=ROOT,
                                 capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(out.stderr[-3000:])
            runs[spec].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(runs[spec][-1], flush=True)
    results = [combine(r) for r in runs.values()]
    command = (f".venv/bin/python benchmarks/load.py --runs {' '.join(args.runs)} --seconds {args.seconds:g} "
               f"--web {args.web} --repeat {args.repeat}")
    text = report(results, command)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        one(json.loads(sys.argv[2]))
    else:
        main()
