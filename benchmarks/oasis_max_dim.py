"""OASIS's ``max_dim`` on text embeddings: project the 384-d ``minilm`` vectors to 256, or not.

::

    PYTHONPATH=. .venv/bin/python benchmarks/oasis_max_dim.py [--items 2000] [--dims 256 384]

OASIS projects inputs wider than ``max_dim`` (default 256, docs/algorithms/oasis.md) with a
seeded random +-1 projection. The default text featurizer gives 384 columns, so with the default
the embedding is projected. For the first ``--items`` SMS messages (binary) and AG News items (4
classes), embedded by the app's ``minilm`` featurizer, and each ``max_dim`` of ``--dims``, the
default OASIS is replayed (permutation 0 of :func:`learners.evaluation.engine.run_once`) at a
10% budget and with every label; reported: online accuracy, achieved query ratio, milliseconds
per item and particle memory (:func:`learners.oasis.particle_bytes`). Writes
``benchmarks/OASIS_MAX_DIM.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.raw_streams import DATA
from learners.evaluation.engine import Setting, make_task, run_once
from learners.evaluation.raw_datasets import ag_news, sms
from learners.features import make_featurizer
from learners.oasis import particle_bytes
from learners.registry import validate_params

OUT = Path(__file__).resolve().parent / "OASIS_MAX_DIM.md"
BUDGET = 0.1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=2000, help="first items of each stream")
    ap.add_argument("--dims", type=int, nargs="+", default=[256, 384])
    args = ap.parse_args(argv)
    featurizer = make_featurizer({"kind": "text", "name": "minilm"})
    texts_sms, y_sms = sms(DATA, args.items)
    texts_ag, y_ag = ag_news(DATA, args.items)
    streams = {"SMS spam": (texts_sms, np.asarray(y_sms)), "AG News": (texts_ag, np.asarray(y_ag))}
    load = os.getloadavg()[0]
    rows = []
    for name, (texts, y) in streams.items():
        X = featurizer.transform(texts)
        task = make_task(y)
        for max_dim in args.dims:
            for mode, budget, extra in (("10% budget", BUDGET, {}), ("every label", None, {"query": "all"})):
                params = validate_params("oasis", {"max_dim": max_dim, **extra})
                m = run_once(Setting("oasis", params, budget=budget), X, task, 0, 0)
                k = 1 if task.binary else len(task.classes)
                mib = particle_bytes(k, params["m"], min(max_dim, X.shape[1]), params["tau"]) / 2**20
                projected = "no" if max_dim >= X.shape[1] else "yes"
                rows.append(f"| {name} | {X.shape[1]} | {max_dim} | {projected} | {mode} | "
                            f"{m['accuracy']:.3f} | {m['query_ratio']:.3f} | "
                            f"{1e3 * m['seconds'] / X.shape[0]:.2f} | {mib:.0f} |")
                print(rows[-1], flush=True)
    OUT.write_text(
        "# OASIS on text embeddings: max_dim 256 (projected) or 384 (as they are)\n\n"
        f"`PYTHONPATH=. .venv/bin/python benchmarks/oasis_max_dim.py --items {args.items} --dims "
        f"{' '.join(map(str, args.dims))}`\n\n"
        f"First {args.items} items of each stream, `minilm` embeddings (384 columns), default OASIS "
        f"(m = 1000 particles), one permutation; load average at the start {load:.1f} on "
        f"{os.cpu_count()} shared cores (ms per item moves with it).\n\n"
        "| stream | width | max_dim | projected | run | online accuracy | query ratio | ms per item "
        "| particle MiB |\n|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
