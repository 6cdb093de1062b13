"""Suspected label errors: precision and recall of the flags at the top 5%, beside cleanlab's
``find_label_issues`` on the same out-of-sample probabilities (docs/estimates.md, "Suspected
label errors").

::

    PYTHONPATH=. .venv/bin/python benchmarks/label_errors.py [--seeds 0 1 2] [--featurizer hashed-ngrams]

Needs ``pip install -r requirements-bench.txt`` and ``pip install --no-deps -r
requirements-bench-nodeps.txt`` (cleanlab). For each data set (SMS Spam Collection: binary,
``paa-i``; AG News test split: 4 classes, ``mpaa-i``; read from the data sets folder beside the
repository, docs/architecture.md "Data sets") and seed: the items in a random order, 5% of them
given a wrong label drawn uniformly from the other classes (the "human" labels), then the replay
(the papers' online protocol, one item at a time: the learner predicts, then learns the item's label
if it queries it) with every item queried (``query="all"``) and with the active rule (``delta`` 1).
Each queried label is scored by :func:`learners.label_errors.suspicion` from the prediction and
score logged before it was learnt (symmetric annotator confusion: one annotator, no overlap).
Flagged: the top 5% of the labels. cleanlab gets the same calibrated probabilities
(:func:`learners.label_errors.calibrated_probabilities`) and the same labels: its own flag set
(``find_label_issues`` defaults, "prune_by_noise_rate") and, for the same budget, that set ranked by
``self_confidence`` and cut at 5% (all of it when it is smaller).
Writes ``benchmarks/LABEL_ERRORS.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import report
from benchmarks.raw_streams import DATA
from learners.evaluation.raw import featurizer_config
from learners.evaluation.raw_datasets import ag_news, sms
from learners.features import make_featurizer
from learners.label_errors import calibrated_probabilities, suspicion, top_fraction
from learners.registry import make
from learners.uploads import Record, featurize_chunks

FLIP = 0.05
TOP = 0.05


def load(name: str, featurizer: str):
    texts, labels = sms(DATA) if name == "SMS" else ag_news(DATA)
    f = make_featurizer(featurizer_config("text", featurizer))
    import scipy.sparse as sp

    X = sp.vstack(list(featurize_chunks(f, [Record(str(i), t) for i, t in enumerate(texts)])), format="csr")
    classes = sorted(set(labels))
    index = {c: k for k, c in enumerate(classes)}
    return X, np.array([index[c] for c in labels]), classes


def replay(X, noisy, classes, algo, params, rng):
    """The online protocol: per item ``(prediction code, score, queried)`` before its label was learnt."""
    learner = make(algo, n_features=X.shape[1], classes=list(range(len(classes))), **params)
    n = X.shape[0]
    pred, score, asked = np.empty(n, dtype=np.int64), np.empty(n), np.zeros(n, dtype=bool)
    for i in range(n):
        a, b = X.indptr[i], X.indptr[i + 1]
        idx, vals = X.indices[a:b], X.data[a:b]
        d = learner.decide_row(idx, vals, rng)
        pred[i], score[i], asked[i] = d.prediction, d.score, d.queried
        if d.queried:
            learner.learn_row(idx, vals, int(noisy[i]))
        else:
            learner.observe_row(idx, vals)
    return pred, score, asked


def precision_recall(flags: np.ndarray, flipped: np.ndarray) -> tuple[float, float]:
    hits = int(np.sum(flipped[flags]))
    return hits / max(1, len(flags)), hits / max(1, int(flipped.sum()))


def run(name: str, algo: str, featurizer: str, seeds: list[int]) -> list[dict]:
    from cleanlab.filter import find_label_issues

    X, y, classes = load(name, featurizer)
    k = len(classes)
    rows = []
    for mode, params in (("every item queried", {"query": "all"}), ("active, delta 1", {"delta": 1.0})):
        for seed in seeds:
            rng = np.random.default_rng([seed, 0])
            order = rng.permutation(len(y))
            Xs, ys = X[order], y[order]
            flipped = rng.random(len(ys)) < FLIP
            noisy = np.where(flipped, (ys + rng.integers(1, k, size=len(ys))) % k, ys)
            pred, score, asked = replay(Xs, noisy, classes, algo, params, np.random.default_rng([seed, 1]))
            given, wrong = noisy[asked], flipped[asked]
            probs = calibrated_probabilities(pred[asked], score[asked], given, k)
            ours = top_fraction(suspicion(probs, given), TOP)
            issues = np.flatnonzero(find_label_issues(given, probs))
            ranked = find_label_issues(given, probs, return_indices_ranked_by="self_confidence")
            cut = ranked[:len(ours)]
            rows.append({"data": name, "mode": mode, "seed": seed, "labels": int(asked.sum()),
                         "flipped": int(wrong.sum()), "flagged": len(ours),
                         "ours": precision_recall(ours, wrong), "cleanlab": precision_recall(issues, wrong),
                         "cleanlab_n": len(issues), "cleanlab_top": precision_recall(cut, wrong),
                         "accuracy": float(np.mean(pred == ys))})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("::")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--featurizer", default="hashed-ngrams")
    args = parser.parse_args()
    load0, t0 = os.getloadavg()[0], time.monotonic()
    rows = run("SMS", "paa-i", args.featurizer, args.seeds)
    rows += run("AG News", "mpaa-i", args.featurizer, args.seeds)
    lines = ["# Suspected label errors: flags at the top 5% beside cleanlab", "",
             "Command: `PYTHONPATH=. .venv/bin/python benchmarks/label_errors.py --seeds "
             f"{' '.join(map(str, args.seeds))} --featurizer {args.featurizer}`", "",
             f"5% of the labels flipped at random; featurizer {args.featurizer}; SMS with paa-i, "
             "AG News (test split, 4 classes) with mpaa-i. Ours: the top 5% of the labels by suspicion "
             "(out-of-sample prediction and score, Platt-calibrated, symmetric annotator confusion). "
             "cleanlab 2.7.1 on the same probabilities: `find_label_issues` with its defaults (its own "
             "number "
             "of flags) and its "
             "flag set ranked by self-confidence, cut at the same 5%. Precision = flipped among flagged, "
             "recall = flagged among flipped; mean over seeds (min-max).", "",
             "| data | labels | mode | online accuracy | flipped | flagged | ours: precision | ours: recall "
             "| cleanlab (own set): flags | precision | recall | cleanlab top 5%: precision | recall |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(values: list[float]) -> str:
        return f"{np.mean(values):.3f} ({min(values):.2f}-{max(values):.2f})"

    for (data, mode) in dict.fromkeys((r["data"], r["mode"]) for r in rows):
        mine = [r for r in rows if r["data"] == data and r["mode"] == mode]
        lines.append(
            f"| {data} | {np.mean([r['labels'] for r in mine]):.0f} | {mode} | "
            f"{np.mean([r['accuracy'] for r in mine]):.3f} | {np.mean([r['flipped'] for r in mine]):.0f} | "
            f"{np.mean([r['flagged'] for r in mine]):.0f} | {cell([r['ours'][0] for r in mine])} | "
            f"{cell([r['ours'][1] for r in mine])} | {np.mean([r['cleanlab_n'] for r in mine]):.0f} | "
            f"{cell([r['cleanlab'][0] for r in mine])} | {cell([r['cleanlab'][1] for r in mine])} | "
            f"{cell([r['cleanlab_top'][0] for r in mine])} | {cell([r['cleanlab_top'][1] for r in mine])} |")
    lines += ["", f"Seeds {args.seeds}."]
    report.write("LABEL_ERRORS.md", lines, t0, load0)


if __name__ == "__main__":
    main()
