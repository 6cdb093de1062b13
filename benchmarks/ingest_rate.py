"""Ingest rate of short texts: parse a CSV upload, featurize, insert in one transaction.

    python benchmarks/ingest_rate.py [--n 20000] [--repeats 3] [--postgres postgres://postgres@127.0.0.1:5432/postgres]

Texts: the SMS Spam Collection (``raw_text/`` of the data sets, short real messages) cycled to
``n`` items; without the dataset, synthetic 8-word texts. Each repeat imports the whole file
into a fresh project; the median of the repeats is reported, split into parse, featurize and
insert. Runs on a throw-away database (SQLite file by default).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import statistics
import time

import numpy as np
from appsetup import ROOT, setup

SMS = ROOT.parent / "shared" / "datasets" / "raw_text" / "SMSSpamCollection.gz"


def texts(n: int) -> tuple[list[str], str]:
    if SMS.exists():
        with gzip.open(SMS, "rt", encoding="utf-8") as fh:
            base = [line.rstrip("\n").partition("\t")[2] for line in fh]
        source = "SMS Spam Collection, cycled"
    else:
        rng = np.random.default_rng(0)
        words = [f"w{i}" for i in range(5000)]
        base = [" ".join(rng.choice(words, 8)) for _ in range(5000)]
        source = "synthetic 8-word texts"
    return [base[i % len(base)] for i in range(n)], source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--postgres", default=None, help="PostgreSQL server URL (default: SQLite file)")
    args = parser.parse_args()
    url = setup(args.postgres)

    from annotator.labelling.ingest import featurize, import_records, parse_upload
    from annotator.labelling.models import Item
    from annotator.labelling.projects.creation import create_project

    items, source = texts(args.n)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["text"])
    writer.writerows([t] for t in items)
    data = buf.getvalue().encode()

    runs = []
    for r in range(args.repeats):
        project = create_project(name=f"bench {r}", task="binary", item_kind="text", classes=["ham", "spam"],
                                 algorithm="paa-i")
        t0 = time.perf_counter()
        records = parse_upload(project, "texts.csv", data)
        t1 = time.perf_counter()
        featurize(project, records)  # timed alone to split the cost (import_records repeats it)
        t2 = time.perf_counter()
        import_records(project, records)
        t3 = time.perf_counter()
        assert Item.objects.filter(project=project).count() == args.n
        total = (t1 - t0) + (t3 - t2)  # parse + (featurize + insert) as an upload does it
        runs.append({"parse_s": t1 - t0, "featurize_s": t2 - t1, "import_s": t3 - t2, "total_s": total,
                     "items_per_s": args.n / total})
    median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(json.dumps({"database": url.split(":")[0], "texts": source, "n": args.n, "repeats": args.repeats,
                      "median": median, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
