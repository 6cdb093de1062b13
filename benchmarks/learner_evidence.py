"""What is known of each learner on the product's own streams, for the pages that offer learners.

    .venv/bin/python benchmarks/learner_evidence.py [--report benchmarks/LABEL_EFFICIENCY.md]

Reads the measured online accuracies of ``benchmarks/label_efficiency.py``'s report (each learner's
published query rule at a 10% budget, with the default featurizer of each stream's kind) and the
majority-class share of each stream (computed from the data sets), and writes
``learners/evaluation/learner_evidence.json`` (:mod:`learners.evaluation.learner_evidence` reads
it): the console, the new-project form and the planner show these figures beside the baseline
of answering the majority class every time, and mark a learner that does not beat it. No replay
runs here: re-run ``label_efficiency.py`` to re-measure, then this script.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.raw_streams import DATA, N_URLS, STREAMS  # noqa: E402
from learners.evaluation import raw_datasets  # noqa: E402
from learners.evaluation.learner_evidence import BUDGET, EVIDENCE_FILE  # noqa: E402
from learners.features import DEFAULT  # noqa: E402

ROW = re.compile(r"^\| (?P<learner>[a-z0-9-]+) \| active \| (?P<cells>.*)$")
CELL = re.compile(r"(?P<mean>[0-9.]+) ± (?P<std>[0-9.]+) \((?P<ratio>[0-9.]+)%(?P<note>[^)]*)\)")
#: the budgets' columns in the report, in order
COLUMNS = ("2%", "5%", "10%", "20%", "100%")


def majority_share(name: str) -> tuple[int, float]:
    """(number of classes, share of the most frequent class) of a benchmark stream."""
    if name == "sms":
        labels: list = raw_datasets.sms(DATA)[1]
    elif name == "ag_news":
        labels = raw_datasets.ag_news(DATA)[1]
    elif name == "mnist":
        labels = raw_datasets.mnist(DATA)[1].tolist()
    else:
        types = raw_datasets.urls(DATA, N_URLS)[1]
        labels = [t if name == "urls4" or t == "benign" else "malicious" for t in types]
    counts = Counter(labels)
    return len(counts), max(counts.values()) / len(labels)


def parse(report: str) -> dict[str, dict[str, dict[str, dict]]]:
    """``{stream: {featurizer: {learner: {accuracy, std, query_ratio, note}}}}`` of the active rows
    at the 10% budget (a learner replayed on a prefix of each permutation keeps the row's note)."""
    out: dict[str, dict[str, dict[str, dict]]] = {}
    stream = featurizer = None
    for line in report.splitlines():
        if line.startswith("## "):
            stream, featurizer = line[3:].split(" ")[0], None
            if stream not in STREAMS:
                stream = None
        elif line.startswith("### featurizer `") and stream:
            featurizer = line.split("`")[1]
        elif stream and featurizer and (m := ROW.match(line)):
            cells = [c.strip() for c in m["cells"].split(" | ")]
            cell = CELL.match(cells[COLUMNS.index(f"{BUDGET:.0%}")])
            if cell is None:
                continue
            prefix = re.search(r"first (\d+) items", m["cells"])
            out.setdefault(stream, {}).setdefault(featurizer, {})[m["learner"]] = {
                "accuracy": float(cell["mean"]), "std": float(cell["std"]),
                "query_ratio": float(cell["ratio"]) / 100.0,
                "note": f"first {prefix[1]} items of each permutation" if prefix else ""}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--report", default=str(ROOT / "benchmarks" / "LABEL_EFFICIENCY.md"))
    args = p.parse_args()
    measured = parse(Path(args.report).read_text())
    streams = {}
    for name, stream in STREAMS.items():
        featurizer = DEFAULT[stream.kind]
        n_classes, share = majority_share(name)
        streams[name] = {"kind": stream.kind, "task": "binary" if stream.binary else "multiclass",
                         "classes": n_classes, "majority": round(share, 4), "featurizer": featurizer,
                         "learners": measured.get(name, {}).get(featurizer, {})}
        below = [n for n, r in streams[name]["learners"].items() if r["accuracy"] <= share]
        print(f"{name}: majority {share:.3f}, {len(streams[name]['learners'])} learners, "
              f"not beating it: {', '.join(below) or 'none'}")
    doc = {"source": "benchmarks/LABEL_EFFICIENCY.md (benchmarks/label_efficiency.py)", "budget": BUDGET,
           "metric": "online accuracy", "streams": streams}
    EVIDENCE_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {EVIDENCE_FILE}")


if __name__ == "__main__":
    main()
