"""Label in Label Studio to a model version here: the latency of the ML-backend bridge.

    nice -n 10 .venv/bin/python benchmarks/label_studio_latency.py [--labels 60]
        [--postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/0]

Starts a real Label Studio server (its own virtualenv, ``harness/label_studio.py``) on
127.0.0.1, this app under gunicorn (2 processes x 4 threads) with ONE Celery worker, on a
throw-away database. A text project here is connected to a Label Studio project as its ML
backend (docs/label_studio.md); Label Studio imports the tasks and asks this app for their
predictions. Then, ``--labels`` times, an annotation is created there through
``label-studio-sdk`` and the time is measured from just before the SDK call until this
project's learner-state version has increased (polled every 2 ms): Label Studio's own request
handling, its webhook to this app (the label stored), the ``apply_labels`` task and the
worker's new model version. Writes the median, p95 and max to ``benchmarks/LABEL_STUDIO.md``
with the command, the machine's load and the setup times (the Label Studio virtualenv, its
first start). Default: SQLite + filesystem broker; with ``--postgres`` and ``--redis``:
PostgreSQL + Redis.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from appsetup import ROOT, setup

REPORT = ROOT / "benchmarks" / "LABEL_STUDIO.md"
#: the report's section kept across runs (the setup costs, measured with ``time``)
KEPT = "\n## Setup costs"
WORDS = ["free", "prize", "cash", "claim", "win", "lunch", "meeting", "home", "station", "tonight", "call",
         "urgent", "reward", "see", "you", "draw", "weekly", "entry", "text", "back"]


def messages(n: int) -> list[str]:
    """``n`` distinct short messages of the spam-or-ham kind (fixed, reproducible)."""
    out = []
    for i in range(n):
        words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(5)]
        out.append(" ".join(words) + f" {i}")
    return out


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[max(0, round(q * len(s)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=60)
    parser.add_argument("--postgres", default=None, help="PostgreSQL server URL (default: SQLite file)")
    parser.add_argument("--redis", default=None, help="Redis broker URL (default: filesystem broker)")
    args = parser.parse_args()
    # before Django starts: gunicorn inherits the same settings (the backend token is an HMAC
    # under SECRET_KEY)
    os.environ.update({"HTTPS": "0", "DEBUG": "0", "ALLOWED_HOSTS": "127.0.0.1",
                       "SECRET_KEY": "label-studio-latency-" + "x" * 40})
    url = setup(args.postgres, args.redis)
    sys.path.insert(0, str(ROOT))

    from annotator.labelling.annotation.label_studio import backend_token
    from annotator.labelling.ingest.opinions import LABEL_STUDIO
    from annotator.labelling.models import Label, LearnerState
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.reporting.label_studio import FROM_NAME, labeling_config
    from harness.label_studio import CACHE, Driver, Server, ensure_venv
    from harness.servers import Gunicorn

    timings = {}
    started = time.perf_counter()
    had_venv = (CACHE / ".installed").exists()
    python = ensure_venv()
    timings["venv_s"] = None if had_venv else time.perf_counter() - started
    had_template = (CACHE / "template-data" / "label_studio.sqlite3").exists()
    tmp = Path(tempfile.mkdtemp(prefix="ls-latency-"))
    started = time.perf_counter()
    server = Server(python, tmp / "label-studio.log")
    timings["ls_start_s"] = time.perf_counter() - started
    timings["ls_start_migrated"] = not had_template
    project = create_project(name="label studio latency", task="binary", item_kind="text",
                             classes=["ham", "spam"], algorithm="paa-i", params={"delta": 1.0})
    log = tmp / "worker.log"
    with open(log, "w") as fh:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "annotator", "worker", "--pool=solo", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "-l", "INFO"],
            cwd=ROOT, env=dict(os.environ), stdout=fh, stderr=subprocess.STDOUT)
    app = Gunicorn({}, workers=2, threads=4)
    driver = Driver(python, server)
    try:
        while "ready." not in log.read_text():
            time.sleep(0.05)
        texts = messages(args.labels)
        there = driver.call("create_project", title="latency", label_config=labeling_config(project))
        driver.call("import_tasks", project=there, tasks=[{"data": {"text": t}} for t in texts])
        driver.call("add_ml_backend", project=there,
                              url=f"{app.base}/api/label-studio/{project.pk}/{backend_token(project)}")
        driver.call("predict_all", project=there)
        tasks = driver.call("list_tasks", project=there)
        assert all(t["predictions"] for t in tasks), "Label Studio got no predictions"
        while not LearnerState.objects.filter(project=project, n_decided__gt=0).exists():
            time.sleep(0.05)  # the worker decided the first items (its first task warms it up)
        version = lambda: LearnerState.objects.filter(project=project).values_list("version", flat=True)[0]  # noqa: E731
        latencies, answered = [], []
        for task in tasks:
            before = version()
            choice = "spam" if any(w in task["data"]["text"] for w in ("free", "cash", "prize")) else "ham"
            made = driver.call("annotate", task=task["id"], choice=choice, from_name=FROM_NAME,
                               to_name="text")
            deadline = time.monotonic() + 30
            while version() == before:
                if time.monotonic() > deadline:
                    raise RuntimeError("no new model version within 30 s; worker log:\n"
                                       + log.read_text()[-2000:])
                time.sleep(0.002)
            latencies.append((time.time() - made["sent"]) * 1000)
            answered.append((made["answered"] - made["sent"]) * 1000)
        stored = Label.objects.filter(project=project, annotator__username__startswith=LABEL_STUDIO + "+",
                                      applied_version__isnull=False).count()
    finally:
        driver.stop()
        app.stop()
        worker.terminate()
        worker.wait(timeout=30)
        server.stop()
    load = Path("/proc/loadavg").read_text().split()[:3]
    result = {"database": url.split(":")[0], "broker": args.redis or "filesystem://",
              "labels": len(latencies),
              "labels_stored_and_applied": stored, "median_ms": statistics.median(latencies),
              "p95_ms": percentile(latencies, 0.95), "max_ms": max(latencies),
              "sdk_call_median_ms": statistics.median(answered), "load": load, **timings}
    print(json.dumps(result, indent=2))
    write_report(result, " ".join(sys.argv[1:]))


def write_report(result: dict, argv: str) -> None:
    """Add this run's row to :data:`REPORT` (the table keeps one row per database and broker)."""
    header = (
        "# Label Studio: label there to model version here\n\n"
        "`benchmarks/label_studio_latency.py` (docs/label_studio.md): an annotation created in a real Label\n"
        "Studio server through `label-studio-sdk`, to a new model version of this app's learner (Label\n"
        "Studio's request, its webhook to this app's ML-backend route, the label stored, the `apply_labels`\n"
        "task and one Celery worker's new version). One annotation at a time; milliseconds. `sdk call`:\n"
        "the SDK's call alone (Label Studio sends its webhook inside it).\n\n"
        "| database | broker | labels | median | p95 | max | sdk call (median) | load (1, 5, 15 min) "
        "| command |\n"
        "|---|---|---|---|---|---|---|---|---|\n")
    command = f"nice -n 10 .venv/bin/python benchmarks/label_studio_latency.py {argv}".strip()
    row = (f"| {result['database']} | {result['broker'].split(':')[0]} | {result['labels']} | "
           f"{result['median_ms']:.0f} | {result['p95_ms']:.0f} | {result['max_ms']:.0f} | "
           f"{result['sdk_call_median_ms']:.0f} | {' '.join(result['load'])} | `{command}` |\n")
    rows, kept = [], ""
    if REPORT.exists():
        text = REPORT.read_text()
        if KEPT in text:  # the measured setup costs below the table stay as they are
            kept = text[text.index(KEPT):]
            text = text[:text.index(KEPT)]
        rows = [line + "\n" for line in text.splitlines()
                if line.startswith("| ") and not line.startswith("| database")
                and not line.startswith(f"| {result['database']} | {result['broker'].split(':')[0]} |")]
    how = "first start: migrations" if result.get("ls_start_migrated") else "from the migrated template"
    setup_note = ("\nSetup on this machine (2 cores, shared): creating `.cache/label-studio-venv` from PyPI "
                  f"{_seconds(result.get('venv_s'))}; Label Studio's start {result['ls_start_s']:.0f} s "
                  f"({how}).\n")
    REPORT.write_text(header + "".join(rows) + row + setup_note + kept)


def _seconds(value: float | None) -> str:
    return "not measured in this run (it existed)" if value is None else f"{value:.0f} s"


if __name__ == "__main__":
    main()
