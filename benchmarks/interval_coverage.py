"""Coverage of the importance-weighted 95% intervals (docs/estimates.md, "Coverage").

::

    PYTHONPATH=. .venv/bin/python benchmarks/interval_coverage.py [--streams 1000] [--seed 7]

Simulates ``--streams`` streams of each scenario (:mod:`learners.evaluation.coverage`: 3
imbalanced classes, a model better on the frequent class, query probabilities falling with the
model's confidence down to a floor) and reports, per figure, the share of streams whose nominal
95% interval (Taylor linearisation of the ratio estimator, on the logit scale, with a Student t
quantile at Satterthwaite's degrees of freedom) holds the exact figure of the whole stream. The
acceptance band is 93-97%.
Writes ``benchmarks/INTERVAL_COVERAGE.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import report
from learners.evaluation.coverage import Scenario, coverage

SCENARIOS = {
    "2,000 items, q floor 0.05": Scenario(),
    "2,000 items, q floor 0.10": Scenario(q_min=0.10),
    "5,000 items, q floor 0.05": Scenario(n=5000),
    "2,000 items, q floor 0.05, q = (1 - confidence)^2": Scenario(power=2.0),
}
BAND = (0.93, 0.97)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("::")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    load, t0 = os.getloadavg()[0], time.monotonic()
    results = {name: coverage(args.streams, args.seed, s) for name, s in SCENARIOS.items()}
    names = [k for k in next(iter(results.values())) if k != "labels"]
    lines = ["# Coverage of the importance-weighted 95% intervals", "",
             "Command: `PYTHONPATH=. .venv/bin/python benchmarks/interval_coverage.py "
             f"--streams {args.streams} --seed {args.seed}`", "",
             f"{args.streams} simulated streams per scenario (learners/evaluation/coverage.py): "
             "classes with priors 0.75 / 0.17 / 0.08, the model right with probability 0.95 / 0.80 / 0.70 "
             "per class, query probability max(floor, (1 - confidence)^power). Cell: share of streams whose "
             "nominal 95% interval (delta-method variance of the ratio estimator, logit-scale interval "
             "with a Student t quantile at Satterthwaite's degrees of freedom; accuracy: the "
             "Horvitz-Thompson "
             "normal interval) holds the exact figure "
             "of the whole stream. "
             f"Acceptance band {BAND[0]:.0%}-{BAND[1]:.0%}; a cell outside it is marked **bold**.", "",
             "| figure | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    outside = 0
    for name in names:
        cells = []
        for r in results.values():
            v = r.get(name)
            bad = v is not None and not BAND[0] <= v <= BAND[1]
            outside += bad
            cells.append("–" if v is None else (f"**{v:.3f}**" if bad else f"{v:.3f}"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    labels = " | ".join(f"{r['labels']:.0f}" for r in results.values())
    lines.append(f"| mean labels per stream | {labels} |")
    lines += ["", f"Cells outside the band: {outside}. Class 0 is the majority class, 2 the rarest."]
    report.write("INTERVAL_COVERAGE.md", lines, t0, load)


if __name__ == "__main__":
    main()
