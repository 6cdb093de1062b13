"""The export's batch refit on every label (the heavy-queue job) against the in-request fit on the
newest 5,000: writes benchmarks/REFIT_JOB.md (with ``--unlabelled``, REFIT_JOB_UNLABELLED.md).

    nice -n 10 .venv/bin/python benchmarks/refit_job.py [--labels 40000] [--unlabelled N] [--postgres URL]

A binary vectors project of the first ``--labels`` rows of w8a in a seeded random order (the
file holds its positives together; LIBSVM, 300 binary features, 3% positive;
/work/shared/datasets/libsvm_binary/w8a.gz), the default learner, every item queried
(``query: all``, so q = 1 and the 1/q weights are flat) and labelled with its class (labels
stored in bulk, then applied by the real pipeline); the rows after them are held out. Reported:
the export's time and the accuracy on the held-out rows of the model it holds, without a refit
job (fitted in the request on the newest ``REFIT_REQUEST_MAX_LABELS``) and with the job's stored
result; the job's time in a fresh process, and in another run its peak of memory allocated by
Python and numpy (``tracemalloc``, which also counts numpy's arrays) above what was allocated
when it began.

``--unlabelled N`` (at most ``--labels``; default 0): then N more items enter the stream after
the labels are applied and the model decides them alone while the stop rule holds (the project's
``asking_stopped`` set as the stop rule sets it; the real pipeline decides them: status ``auto``, a
stored vector, query probability 0), so the job's refit self-trains on them (at most
``REFIT_MAX_UNLABELLED`` of them). Their rows are the first N labelled rows again (w8a holds
49,749 rows: 40,000 labels and 20,000 fresh rows would leave none held out; 30% of w8a's rows
repeat another row anyway), so the held-out rows are the same as without the option. Reported
besides: the check's self-training record (gain over the labels-only fit, its standard error,
whether the self-trained fit was used, the unlabelled items it used).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from appsetup import ROOT, setup
from report import write

W8A = Path("/work/shared/datasets/libsvm_binary/w8a.gz")

#: a fresh process: set up Django, then run the refit job ``{run}`` (traced: ``{traced}``); prints
#: its seconds and the peak of traced memory (MB) above the start (0 untraced)
PROCESS = ("import sys, time, tracemalloc, django; sys.path.insert(0, '.'); django.setup();"
           "from annotator.labelling.reporting import refit_runs; traced = {traced};"
           "traced and tracemalloc.start(); base = tracemalloc.get_traced_memory()[0];"
           "t0 = time.perf_counter();"
           "refit_runs.run({run}); print(time.perf_counter() - t0);"
           "print((tracemalloc.get_traced_memory()[1] - base) / 2**20)")


def job_process(run: int, traced: bool) -> tuple[float, float]:
    """``(seconds, peak traced MB)`` of refit job ``run`` in a fresh process on this database."""
    code = PROCESS.format(run=run, traced=traced)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), check=True,
                          capture_output=True, text=True)
    seconds, peak = done.stdout.strip().splitlines()[-2:]
    return float(seconds), float(peak)


def exported(project, X_test, y_test, folder: Path) -> tuple[float, float, dict]:
    """``(seconds, held-out accuracy, card)`` of an export of ``project``'s model."""
    from annotator.labelling.reporting.export import export_model
    from learners import load_model

    t0 = time.perf_counter()
    card = export_model(project, folder / "model.npz")
    seconds = time.perf_counter() - t0
    predicted = load_model(folder / "model.npz").predictor.predict(X_test)
    return seconds, float(np.mean(np.asarray(predicted) == y_test)), card


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=int, default=40_000)
    ap.add_argument("--unlabelled", type=int, default=0,
                    help="items the model decides alone after the labels (at most --labels)")
    ap.add_argument("--postgres", help="PostgreSQL server URL (default: SQLite in a temporary folder)")
    args = ap.parse_args()
    if not 0 <= args.unlabelled <= args.labels:
        ap.error("--unlabelled must be between 0 and --labels")
    started, load = time.monotonic(), os.getloadavg()[0]
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    setup(args.postgres)
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.ingest import Record, import_records
    from annotator.labelling.models import Item, Label, LearnerState, Project, RefitRun
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.reporting import refit_runs
    from learners import DEFAULT_ALGORITHM
    from learners.evaluation.datasets import load as load_dataset
    from learners.refit import steps

    data = load_dataset(W8A, n_features=300)
    order = np.random.default_rng(0).permutation(data.X.shape[0])
    X, y = data.X[order], np.asarray(data.y)[order]
    n = args.labels
    X_test, y_test = X[n:], y[n:]
    classes = sorted({int(v) for v in y})
    project = create_project(name="w8a", task="binary", item_kind="vectors", classes=classes,
                             algorithm=DEFAULT_ALGORITHM["binary"], params={"query": "all"},
                             featurizer_config={"kind": "vectors", "n_features": 300}, look_ahead=n)
    rows = X[:n]

    def records(count: int, gold: bool) -> list[Record]:
        """The first ``count`` rows as vectors records, with their class as gold or without."""
        return [Record(f"row {i}", [[int(j), float(v)] for j, v in
                                    zip(rows[i].indices, rows[i].data, strict=True)],
                       int(y[i]) if gold else None) for i in range(count)]

    import_records(project, records(n, gold=True))
    update_project(project.pk)  # decides every item: each is queried (q = 1)
    user = get_user_model().objects.create_user("annotator")
    Label.objects.bulk_create(Label(item_id=pk, project=project, annotator=user, value=gold)
                              for pk, gold in Item.objects.filter(project=project, status=Item.Status.QUEUED)
                              .values_list("pk", "gold"))
    update_project(project.pk)  # applies them all, in order
    if args.unlabelled:
        # what the stop rule writes when its target holds (stop_rule.refresh): nobody is asked
        Project.objects.filter(pk=project.pk).update(asking_stopped=True, stopped_from_seq=n)
        import_records(project, records(args.unlabelled, gold=False))
        update_project(project.pk)  # decides them alone: auto, q = 0
    decided = Item.objects.filter(project=project, status=Item.Status.AUTO, vector__isnull=False).count()
    assert decided == args.unlabelled, decided
    state = LearnerState.objects.get(project=project)
    labels = refit_runs.count_labels(project, state.version)
    print(f"{labels} labels applied, {decided} items decided alone (model version {state.version})",
          flush=True)

    with tempfile.TemporaryDirectory(prefix="refit-job-") as tmp:
        before = exported(project, X_test, y_test, Path(tmp))
        print(f"in-request export: {before[0]:.1f} s, held-out accuracy {before[1]:.4f}", flush=True)
        traced = refit_runs.start(project, user)[0]
        _, job_peak = job_process(traced.pk, traced=True)
        job = refit_runs.start(project, user)[0]
        job_seconds, _ = job_process(job.pk, traced=False)
        job = RefitRun.objects.get(pk=job.pk)
        assert job.status == "done", job.error
        print(f"job: {job_seconds:.1f} s, peak traced memory {job_peak:.0f} MB", flush=True)
        after = exported(project, X_test, y_test, Path(tmp))
    figures = job.figures or {}
    unlabelled = figures.get("unlabelled", 0)
    label_pages = -(-job.labels // refit_runs.PAGE)
    lines = [
        "# The batch refit on every label (heavy-queue job) against the in-request fit"
        f"{', with items the model decided alone' if args.unlabelled else ''}",
        "",
        f"`nice -n 10 .venv/bin/python benchmarks/refit_job.py --labels {n}"
        f"{f' --unlabelled {args.unlabelled}' if args.unlabelled else ''}"
        f"{' --postgres ...' if args.postgres else ''}` ({'PostgreSQL' if args.postgres else 'SQLite'});"
        f" `uptime` at the start: {uptime}",
        "",
        f"w8a (300 binary features): the first {n:,} rows labelled ({labels:,} labels, learner "
        f"`{project.algorithm}`, every item queried so q = 1), the other {len(y_test):,} rows held out "
        f"(majority class {max(np.mean(y_test == c) for c in classes):.4f}).",
        "",
        *([f"Then {args.unlabelled:,} more items decided by the model alone (the pipeline, while the "
           f"stop rule holds: status `auto`, q = 0), their rows the first {args.unlabelled:,} labelled "
           f"rows again; the job reads at most {refit_runs.unlabelled_limit(labels):,} of them "
           f"(`REFIT_MAX_UNLABELLED` {settings.REFIT_MAX_UNLABELLED:,}, at most 10 per label).", ""]
          if args.unlabelled else []),
        "| export | labels fitted | export time (s) | model used | check: online / refit "
        "| held-out accuracy |",
        "|---|---|---|---|---|---|",
        f"| without a job: fitted in the request (newest {settings.REFIT_REQUEST_MAX_LABELS:,}) | "
        f"{before[2]['refit']['labels']:,} | {before[0]:.1f} | {before[2]['model']['used']} | "
        f"{_check(before[2]['model']['check'])} | {before[1]:.4f} |",
        f"| with the job's stored result | {after[2]['refit']['labels']:,} | {after[0]:.1f} | "
        f"{after[2]['model']['used']} | {_check(figures)} | {after[1]:.4f} |",
        "",
        f"The job (`refit_runs.run` in a fresh process): {job_seconds:.1f} s; in another run under "
        f"`tracemalloc`, its peak of memory allocated (numpy arrays included) above the start: "
        f"{job_peak:.0f} MB. Steps: {job.total} ({label_pages} label pages of {refit_runs.PAGE}, "
        f"{job.total - label_pages - steps(unlabelled > 0)} unlabelled pages (at most), then "
        f"{steps(unlabelled > 0)} fit steps).",
    ]
    if args.unlabelled:
        trained = figures["self_training"]
        lines += [
            "",
            "| self-training (the check) | unlabelled items | gain over the labels-only fit | standard error "
            "| used | neighbours |",
            "|---|---|---|---|---|---|",
            f"| best candidate ({figures['weighting']}, l2 {figures['l2']:g}) | {unlabelled:,} | "
            f"{trained['gain']:+.4f} | {trained['standard_error']:.4f} | {trained['used']} | "
            f"{trained['neighbours']} |",
        ]
    write("REFIT_JOB_UNLABELLED.md" if args.unlabelled else "REFIT_JOB.md", lines, started, load)


def _check(check: dict) -> str:
    if check.get("online_accuracy") is None:
        return f"not tried ({check.get('skipped')})"
    return f"{check['online_accuracy']:.4f} / {check['refit_accuracy']:.4f}"


if __name__ == "__main__":
    main()
