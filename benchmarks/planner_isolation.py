"""Label -> new model version latency while a delta-planner run replays.

    python benchmarks/planner_isolation.py [--labels 60] [--planner-items 2000] [--runs 20]
        [--postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379/0]

On a throw-away database: the demo digits project to label (its first items decided before the
run starts), and a second project of
``--planner-items`` digits with gold labels on which a planner run of 4 candidates x ``--runs``
permutations is started. Three set-ups, each with fresh worker processes (``--pool=solo``):

* ``idle``: one worker for both queues, no planner run (the reference);
* ``apart``: a worker for the label queue and one for the heavy queue (the production layout
  of docs/operations.md), the planner run replaying on the heavy one;
* ``shared``: ONE worker for both queues while the planner runs (one process: what happened
  before the heavy queue, when every worker could be inside a planner run).

In each, labels are given as the queue page does (``submit_label`` then
``send.labels_changed``) while the run is replaying; the time from the call until the
learner-state version increased is measured (polled every 2 ms; at most ``--timeout`` s per
label; the set-up stops after 3 such time-outs). The run is cancelled at the end. Writes
``benchmarks/PLANNER_ISOLATION.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from appsetup import ROOT, setup

OUT = Path(__file__).with_name("PLANNER_ISOLATION.md")


def start_worker(name: str, *queues: str) -> tuple[subprocess.Popen, Path]:
    log = Path(tempfile.gettempdir()) / f"planner-isolation-{name}-{os.getpid()}.log"
    args = ["-Q", ",".join(queues)] if queues else []
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "annotator", "worker", "--pool=solo", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "-l", "INFO", f"--hostname={name}@%h", *args],
            cwd=ROOT, env=dict(os.environ), stdout=fh, stderr=subprocess.STDOUT)
    while "ready." not in log.read_text():
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        time.sleep(0.05)
    return proc, log


def measure(mode: str, args: argparse.Namespace) -> dict:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from annotator.labelling.annotation.actions import lease_next, submit_label
    from annotator.labelling.engine import jobs
    from annotator.labelling.ingest import import_records
    from annotator.labelling.models import Item, LearnerState, PlannerRun
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.projects.demo import digit_records
    from annotator.labelling.reporting.planner import cost
    from annotator.labelling.worker.send import labels_changed, run_planner, top_up_if_low

    user = get_user_model().objects.get(username="annotator")
    common = dict(task="multiclass", item_kind="image", classes=list(range(10)), algorithm="mpaa-i",
                  params={"delta": 1.0}, featurizer_config={"kind": "image", "width": 16, "height": 16,
                                                            "invert": True}, rng_seed=7)
    project = create_project(name=f"labels {mode}", **common)
    import_records(project, digit_records(args.labels * 3, seed=2))
    big = create_project(name=f"planner {mode}", **common)
    import_records(big, digit_records(args.planner_items, seed=3))
    default, heavy = settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_HEAVY_QUEUE
    if mode == "apart":
        workers = [start_worker(f"labels-{mode}", default), start_worker(f"heavy-{mode}", heavy)]
    else:
        workers = [start_worker(f"both-{mode}")]
    run = None
    latencies: list[float] = []
    timed_out = 0
    during = 0
    try:
        top_up_if_low(project)  # items are decided before the run starts: annotators have work
        deadline = time.monotonic() + 120
        while not Item.objects.filter(project=project, status="queued").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the worker decided no item in 120 s")
            time.sleep(0.01)
        if mode != "idle":
            candidates = [{"algorithm": "mpaa-i", "delta": d} for d in (0.1, 0.5, 1.0, 4.0)]
            run = PlannerRun.objects.create(project=big, candidates=candidates, runs=args.runs,
                                            cost=cost(big, len(candidates), args.runs)[1])
            run_planner(run.pk)
            while PlannerRun.objects.get(pk=run.pk).status != "running":
                time.sleep(0.01)
        version = lambda: LearnerState.objects.filter(project=project).values_list("version", flat=True)[0]  # noqa: E731
        top_up_if_low(project)
        deadline = time.monotonic() + args.timeout * 3
        while len(latencies) + timed_out < args.labels:
            item = lease_next(project, user)
            if item is None:  # the worker is still deciding the first items
                if time.monotonic() > deadline:
                    timed_out = args.labels - len(latencies)  # no item was ever decided
                    break
                top_up_if_low(project)
                time.sleep(0.01)
                continue
            before = version()
            t0 = time.perf_counter()
            submit_label(project, item.pk, user, item.gold)
            labels_changed(project.pk)
            while version() == before and time.perf_counter() - t0 < args.timeout:
                time.sleep(0.002)
            if version() == before:
                timed_out += 1
                if timed_out >= 3:  # the label queue is starved: enough evidence
                    break
            else:
                latencies.append((time.perf_counter() - t0) * 1000)
            if run is not None and PlannerRun.objects.get(pk=run.pk).status == "running":
                during += 1
            deadline = time.monotonic() + args.timeout * 3
    finally:
        if run is not None:
            jobs.cancel(PlannerRun, run.pk)
        for proc, log in workers:
            proc.kill()
            proc.wait()
            log.unlink(missing_ok=True)
    latencies.sort()
    done = PlannerRun.objects.get(pk=run.pk) if run is not None else None
    return {"mode": mode, "labels": len(latencies), "timed_out": timed_out, "during": during,
            "median": statistics.median(latencies) if latencies else None,
            "p95": latencies[max(0, round(0.95 * len(latencies)) - 1)] if latencies else None,
            "max": latencies[-1] if latencies else None,
            "planner": f"{done.done}/{done.total} replays" if done else "none"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=60)
    parser.add_argument("--planner-items", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for one label")
    parser.add_argument("--modes", default="idle,apart,shared")
    parser.add_argument("--postgres", default=None)
    parser.add_argument("--redis", default=None)
    args = parser.parse_args()
    url = setup(args.postgres, args.redis)
    from annotator.labelling.projects.demo import create_demo

    create_demo(n_items=10)  # the demo users
    rows = [measure(mode, args) for mode in args.modes.split(",")]
    fmt = lambda v: "–" if v is None else f"{v:.0f}"  # noqa: E731
    lines = [
        "# Label -> model latency while a delta-planner run replays",
        "",
        f"`python benchmarks/planner_isolation.py --labels {args.labels} "
        f"--planner-items {args.planner_items} "
        f"--runs {args.runs}{' --postgres ... --redis ...' if args.postgres else ''}` "
        f"({url.split(':')[0]}, {args.redis or 'filesystem://'}; planner run: 4 candidates x {args.runs} "
        f"permutations on {args.planner_items} digits; workers `--pool=solo`; one 2-core machine shared "
        "with other work).",
        "",
        f"| set-up | labels applied | timed out (> {args.timeout:.0f} s) | given while the run replayed "
        "| median ms | p95 ms | max ms | planner progress at the end |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['labels']} | {r['timed_out']} | {r['during']} | "
                     f"{fmt(r['median'])} | {fmt(r['p95'])} | {fmt(r['max'])} | {r['planner']} |")
    lines += ["", "`idle`: no planner run. `apart`: label queue and heavy queue on separate workers "
              "(production layout). `shared`: one worker process for both queues while the run replays "
              "(labels wait behind the run).", "",
              "Read the latency columns with 'given while the run replayed': a label that timed out waited "
              "for a worker busy with the run, and labels given after the run ended count in the latencies "
              "but not as given while it replayed (in `shared`, the first label waits for the whole run)."]
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
