"""Dawid-Skene EM (``learners.aggregation.dawid_skene``): time, iterations and label accuracy
against majority vote on a simulated team, as the consensus pipeline runs it (docs/teams.md).

::

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python \
        benchmarks/dawid_skene_speed.py [--items 1000 3000 10000]

A team of five annotators labels every item, 3 of them per item drawn at random: four answer
right with accuracies 0.9, 0.85, 0.8, 0.75 (else a uniform other class) and one careless
annotator answers at random; 10 classes. For each ``--items``: wall and CPU seconds of one fit
(the default stopping rule, at most 100 iterations; CPU time, since the machine is shared), the
iterations run, CPU milliseconds per iteration, and the
share of items whose label is right under Dawid-Skene and under majority vote (no strict
majority counts as wrong). Writes ``benchmarks/DAWID_SKENE.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from learners.aggregation import dawid_skene
from learners.evaluation.majority import majority_vote

ACCURACIES = (0.9, 0.85, 0.8, 0.75, 0.1)  # the last one: careless (random over 10 classes)
N_CLASSES = 10


def team(n_items: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(opinions, truth)`` of the simulated team (module docstring)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(N_CLASSES, size=n_items)
    ops = []
    for i in range(n_items):
        for a in rng.choice(len(ACCURACIES), size=3, replace=False):
            right = rng.random() < ACCURACIES[a]
            said = truth[i] if right else (truth[i] + rng.integers(1, N_CLASSES)) % N_CLASSES
            ops.append((i, a, said))
    return np.array(ops), truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 3000, 10000])
    args = parser.parse_args()
    lines = ["# Dawid-Skene EM: time and accuracy on a simulated team", "",
             "`PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python "
             "benchmarks/dawid_skene_speed.py --items "
             + " ".join(map(str, args.items)) + "`", "",
             "Five annotators, 3 per item, accuracies 0.9, 0.85, 0.8, 0.75 and a careless 0.1 "
             "(random over 10 classes). Machine shared by other jobs: wall times include waiting for a "
             "core; CPU times are this process's.", "",
             "| items | wall s | CPU s | iterations | CPU ms / iteration | Dawid-Skene right | "
             "majority vote right |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in args.items:
        ops, truth = team(n)
        start, cpu = time.perf_counter(), time.process_time()
        fit = dawid_skene(ops, n, len(ACCURACIES), N_CLASSES)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        mv = majority_vote(ops, n, N_CLASSES)
        lines.append(f"| {n} | {seconds:.2f} | {cpu:.2f} | {fit.n_iter} | {1000 * cpu / fit.n_iter:.1f} | "
                     f"{np.mean(fit.labels() == truth):.3f} | {np.mean(mv == truth):.3f} |")
        print(lines[-1], flush=True)
    out = Path(__file__).resolve().parent / "DAWID_SKENE.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
