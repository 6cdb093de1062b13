"""Races of state-changing requests, many rounds: count what a double tap or a retrying client
could break (docs/architecture.md, "Repeated and concurrent requests").

Each round runs every scenario of :mod:`harness.races` (undo, label, skip, change, a
reviewer's decision, planner starts: the same request from several threads at once, through
Django's test client, on PostgreSQL), then counts:

* ``cases``: requests sent; ``5xx``: server errors (must be 0);
* ``doubled``: an action applied more than once; ``lost``: an answered write missing or an
  opinion lost; ``broken``: database invariants violated afterwards (:mod:`.invariants`)
  (each must be 0).

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

from benchmarks.appsetup import ROOT, setup


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", required=True, help="PostgreSQL server URL (a fresh database is made)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0", help="Celery broker (tasks are sent)")
    parser.add_argument("--rounds", type=int, default=10)
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
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0 if not any(total[k] for k in keys[1:]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
