"""How long the dashboard's cost-per-accuracy view (annotator/labelling/cost_view.py, docs/cost.md)
takes to compute when its cache is cold: a digits project whose stream was decided and labelled
with the gold classes, then the view computed once per learner (the random-querying replay of
BASELINE_MAX_ITEMS gold items, 3 runs, plus reading the rows). Writes benchmarks/COST_VIEW.md.

    .venv/bin/python benchmarks/cost_view.py [--items 2000] [--algorithms mpaa-i,md-ada,oasis,kmc]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from appsetup import setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--algorithms", default="mpaa-i,md-ada,oasis,kmc")
    args = parser.parse_args()
    setup()
    from django.conf import settings
    from django.core.cache import cache

    from annotator.labelling.engine.pipeline import update_project
    from annotator.labelling.ingest import import_records
    from annotator.labelling.models import Item, Project, StreamStats
    from annotator.labelling.projects.creation import create_project
    from annotator.labelling.projects.demo import digit_records
    from annotator.labelling.reporting import cost_view
    from harness.chosen_labels import label_chosen

    settings.BASELINE_MAX_ITEMS = args.items
    project = create_project(name="cost view", task="multiclass", item_kind="image", classes=list(range(10)),
                             algorithm="mpaa-i", params={"delta": 0.3}, look_ahead=200,
                             featurizer_config={"kind": "image", "width": 16, "height": 16, "invert": True})
    import_records(project, digit_records(args.items, seed=1))
    user = __import__("django.contrib.auth.models", fromlist=["User"]).User.objects.create(username="ann")
    t0 = time.perf_counter()
    while True:
        update_project(project.pk)
        queued = list(Item.objects.filter(project=project, status=Item.Status.QUEUED)
                      .values_list("pk", "gold"))
        if not queued:
            break
        for pk, gold in queued:
            label_chosen(project, pk, user, gold)
    update_project(project.pk)
    prepared = time.perf_counter() - t0
    gold_n = StreamStats.objects.get(project=project).gold_n
    lines = ["# Cost-per-accuracy view: cold-cache compute time", "",
             f"`.venv/bin/python benchmarks/cost_view.py --items {args.items} "
             f"--algorithms {args.algorithms}`", "",
             f"A digits project (16x16 pixels, 10 classes) of {args.items} items (the demo's digits: "
             "1,797 at most), all with gold, decided by "
             f"mpaa-i (delta 0.3) and labelled with the gold classes ({prepared:.0f} s to prepare). For each "
             "learner the project is switched to it and the view computed once with a cold cache: read the "
             f"{cost_view.rows_wanted(gold_n)} gold rows, replay the learner with query=random "
             f"{cost_view.RUNS} times. The dashboard then serves it from the cache until the gold rows grow "
             "by a tenth. Machine: 2 cores shared with other work (load noted below).", "",
             "| learner | seconds (cold) | items | p | accuracy: learner / random |",
             "| --- | --- | --- | --- | --- |"]
    for name in args.algorithms.split(","):
        Project.objects.filter(pk=project.pk).update(algorithm=name, params={})
        project.refresh_from_db()
        cache.clear()
        t = time.perf_counter()
        view = cost_view.cost_view(project, gold_n)
        seconds = time.perf_counter() - t
        assert view is not None
        end = view["random_end"]
        rand = f"{end[1]:.3f}" if end else "not replayed (changes between labels)"
        lines.append(f"| {name} | {seconds:.2f} | {view['items']} | {view['p']:.3f} | "
                     f"{view['active_end'][1]:.3f} / {rand} |")
        print(lines[-1], flush=True)
    import os
    lines += ["", f"Load average during the run: {os.getloadavg()[0]:.1f} (1 min). The learner's own "
              "accuracy is that of mpaa-i's logged decisions whatever the row's learner (the stream was "
              "decided by mpaa-i); only the random replay changes with it. Before OASIS and KMC were left "
              "out of the replay, OASIS alone ran for more than 4 minutes (stopped) on these rows."]
    out = Path(__file__).with_name("COST_VIEW.md")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
