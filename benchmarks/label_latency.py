"""Label-to-new-version latency with one real Celery worker.

    python benchmarks/label_latency.py [--labels 200]
        [--postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/0]

Creates the OCR digits demo project on a throw-away database, starts ONE worker process
(``celery -A annotator worker --pool=solo``), then 200 times: lease the next queued item,
save its gold label exactly as the queue page does (``submit_label``, then
``send.labels_changed`` sends ``apply_labels`` once it committed) and measure the time
from the call until the project's learner-state version has increased (polled every 2 ms). The version bump
includes applying the label and deciding new items up to the look-ahead. Reports median,
p95 and max in milliseconds. Default: SQLite + filesystem broker (``make run``); with
``--postgres`` and ``--redis``: PostgreSQL + Redis.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=200)
    parser.add_argument("--postgres", default=None, help="PostgreSQL server URL (default: SQLite file)")
    parser.add_argument("--redis", default=None, help="Redis broker URL (default: filesystem broker)")
    args = parser.parse_args()
    url = setup(args.postgres, args.redis)

    from django.contrib.auth import get_user_model

    from annotator.labelling.annotation.actions import lease_next, submit_label
    from annotator.labelling.models import LearnerState
    from annotator.labelling.projects.demo import create_demo
    from annotator.labelling.worker.send import labels_changed, top_up_if_low

    project, _ = create_demo()
    user = get_user_model().objects.get(username="annotator")
    log = Path(tempfile.gettempdir()) / f"label-latency-worker-{os.getpid()}.log"
    with open(log, "w") as fh:
        command = [sys.executable, "-m", "celery", "-A", "annotator", "worker", "--pool=solo",
                   "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"]
        worker = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), stdout=fh,
                                  stderr=subprocess.STDOUT)
    try:
        while "ready." not in log.read_text():
            time.sleep(0.05)
        version = lambda: LearnerState.objects.filter(project=project).values_list("version", flat=True)[0]  # noqa: E731
        latencies = []
        while len(latencies) < args.labels:
            item = lease_next(project, user)
            top_up_if_low(project)  # as the queue view does
            if item is None:  # the worker is still deciding the first items
                time.sleep(0.01)
                continue
            before = version()
            t0 = time.perf_counter()
            submit_label(project, item.pk, user, item.gold)  # commits
            labels_changed(project.pk)  # as the label view does: sends apply_labels
            while version() == before:
                time.sleep(0.002)
            latencies.append((time.perf_counter() - t0) * 1000)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        log.unlink(missing_ok=True)
    latencies.sort()
    p95 = latencies[max(0, round(0.95 * len(latencies)) - 1)]
    print(json.dumps({"database": url.split(":")[0], "broker": args.redis or "filesystem://",
                      "labels": len(latencies), "median_ms": statistics.median(latencies), "p95_ms": p95,
                      "max_ms": latencies[-1]}, indent=2))


if __name__ == "__main__":
    main()
