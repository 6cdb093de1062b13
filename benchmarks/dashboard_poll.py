"""Cost of the dashboard's 2-second poll on a 10,000-item project.

    .venv/bin/python benchmarks/dashboard_poll.py [--items 10000] [--postgres URL]

A binary text project with ``--items`` decided items (random query probabilities, gold on every
item, the queried ones labelled) is written straight into a throw-away database; then
:func:`annotator.labelling.reporting.dashboard.dashboard_data` is timed after a change (the numbers and
curves are recomputed from the decision log) and for an unchanged project (the cached poll).
Medians of 5.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from appsetup import setup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--postgres", default=None)
    args = ap.parse_args()
    setup(args.postgres)
    from django.contrib.auth import get_user_model
    from django.core.cache import cache

    from annotator.labelling.models import Item, Label
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.reporting.dashboard import dashboard_data

    project = create_project(name="poll", task="binary", item_kind="text", classes=["ham", "spam"],
                             algorithm="paa-i")
    user = get_user_model().objects.create_user("ann")
    rng = np.random.default_rng(0)
    items = []
    for i in range(args.items):
        q = float(rng.uniform(0.05, 1.0))
        queried = bool(rng.random() < q)
        items.append(Item(project=project, seq=i, text="x", vector=b"", gold=str(rng.choice(["ham", "spam"])),
                          prediction="ham", score=0.1, query_prob=q, queried=queried, model_version=0,
                          status="labelled" if queried else "auto"))
    Item.objects.bulk_create(items, batch_size=1000)
    labelled = Item.objects.filter(project=project, queried=True).order_by("seq")
    labels = [Label(item=it, project=project, annotator=user, value=it.gold, seconds=1.0,
                    applied_version=k + 1) for k, it in enumerate(labelled)]
    Label.objects.bulk_create(labels, batch_size=1000)
    cold, warm = [], []
    for _ in range(5):
        cache.clear()
        t = time.perf_counter()
        dashboard_data(project)
        cold.append(time.perf_counter() - t)
        t = time.perf_counter()
        dashboard_data(project)
        warm.append(time.perf_counter() - t)
    print(f"{args.items} items: poll after a change (recomputed) {1e3 * statistics.median(cold):.0f} ms, "
          f"poll of an unchanged project (cached) {1e3 * statistics.median(warm):.1f} ms (medians of 5)")


if __name__ == "__main__":
    main()
