"""Races of state-changing requests, many rounds: count what a double tap or a retrying client
could break (docs/architecture.md, "Repeated and concurrent requests").

Each round runs every scenario of :mod:`harness.races` (undo, label, skip, change, a
reviewer's decision, planner starts: the same request from several threads at once, through
Django's test client, on PostgreSQL), then counts:

* ``cases``: requests sent; ``5xx``: server errors (must be 0);
* ``doubled``: an action applied more than once; ``lost``: an answered write missing or an
  opinion lost; ``broken``: database invariants violated afterwards (:mod:`.invariants`)
  (each must be 0).

Then, per round, two annotators label 40 items each of a stream with honeypots (a random 30% of
the items queried, ``honeypot_rate`` 0.25) and every signal they can observe is collected
(:mod:`harness.honeypot_signals`): ``separating`` counts the signals with a value on a honeypot
that no real item showed (must be 0).

Writes ``benchmarks/RACES.md``. Usage::

    .venv/bin/python -m benchmarks.races --postgres postgres://postgres@127.0.0.1:5432/postgres \\
        --broker redis://127.0.0.1:6379/0 [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections import Counter
from typing import Any

from benchmarks.appsetup import ROOT, setup


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", required=True, help="PostgreSQL server URL (a fresh database is made)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0", help="Celery broker (tasks are sent)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--honeypot-steps", type=int, default=40,
                        help="items each annotator labels per round")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RACES.md"))
    args = parser.parse_args()
    os.environ["ALLOWED_HOSTS"] = "testserver"  # the test client's host
    setup(args.postgres, broker=args.broker)
    from harness.races import SCENARIOS

    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    totals: dict[str, Counter] = {name: Counter() for name in SCENARIOS}
    notes: list[str] = []
    start = time.monotonic()
    for _ in range(args.rounds):
        for name, scenario in SCENARIOS.items():
            outcome = scenario()
            t = totals[name]
            t["cases"] += len(outcome.statuses)
            t["5xx"] += outcome.server_errors
            t["doubled"] += outcome.doubled
            t["lost"] += outcome.lost
            t["broken"] += len(outcome.broken)
            t.update(f"status {s}" for s in outcome.statuses)
            notes += [f"{name}: {b}" for b in outcome.broken]
    served, signals = honeypot_rounds(args.rounds, args.honeypot_steps)
    seconds = time.monotonic() - start
    keys = ("cases", "5xx", "doubled", "lost", "broken")
    total = sum((c for c in totals.values()), Counter())
    lines = ["# Races of state-changing requests", "",
             f"Command: `.venv/bin/python -m benchmarks.races --postgres {args.postgres} --broker "
             f"{args.broker} --rounds {args.rounds}` ({seconds:.0f} s; load: `{load}`).", "",
             "Each scenario sends one request from several threads at once through Django's test client "
             "on PostgreSQL (harness/races.py), then the pipeline runs and the invariants are checked "
             "(annotator/labelling/annotation/invariants.py).", "",
             "| scenario | " + " | ".join(keys) + " | answers |", "|---" * (len(keys) + 2) + "|"]
    for name, c in [*totals.items(), ("**all**", total)]:
        answers = ", ".join(f"{k[7:]}: {v}" for k, v in sorted(c.items()) if k.startswith("status "))
        lines.append(f"| {name} | " + " | ".join(str(c[k]) for k in keys) + f" | {answers} |")
    lines += ["", "Violations:" if notes else "No invariant was violated.",
              *[f"- {n}" for n in notes[:50]], ""]
    separating = signals.separating()
    lines += ["## Honeypot signals", "",
              f"Items served: {served['real']} real, {served['gold']} honeypots, to {2 * args.rounds} "
              "annotators (harness/honeypot_signals.py: the panel's structure, the annotator's and a "
              "reviewer's items-API row, the answers to a label and to its repeat, the id against the "
              "ids seen before).", "",
              "| signal | values on real items | values on honeypots | separating values |",
              "|---|---|---|---|"]
    for name in sorted(signals.real):
        lines.append(f"| {name} | {len(signals.real[name])} | {len(signals.gold.get(name, ()))} | "
                     f"{len(separating.get(name, ()))} |")
    lines += ["", f"Separating signals: {len(separating)}.", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0 if not any(total[k] for k in keys[1:]) and not separating else 1


def honeypot_rounds(rounds: int, steps: int) -> tuple[Counter, Any]:
    """Two annotators per round label ``steps`` items each of a fresh stream with honeypots;
    the items served of each kind and every signal collected (:class:`.honeypot_signals.Signals`)."""
    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.models import Honeypot, Label, Membership, Project
    from harness.honeypot_signals import Signals, collect
    from harness.races import client_for, digits_project, member

    signals, served = Signals(), Counter()
    for r in range(rounds):
        project = digits_project(600, look_ahead=200, honeypot_rate=0.25,
                                 params={"delta": 1.0, "query": "random", "p": 0.3})
        update_project(project.pk)
        reviewer = client_for(member(project, f"hp-reviewer-{r}", Membership.Role.REVIEWER))
        for a in range(2):
            user = member(project, f"hp-annotator-{r}-{a}")
            colleague = client_for(member(project, f"hp-colleague-{r}-{a}"))
            collect(project, user, client_for(user), reviewer, steps, signals=signals, colleague=colleague)
        gold = Honeypot.objects.filter(project=project).count()
        served["gold"] += gold
        served["real"] += Label.objects.filter(project=project).count() - gold
        Project.objects.filter(pk=project.pk).delete()
    return served, signals


if __name__ == "__main__":
    raise SystemExit(main())
