"""What is known of each learner a project may run, beside the majority-class baseline, so that a
learner that does not beat answering the most frequent class every time is marked wherever
learners are offered (the console, the new-project form, the planner).

The figures, per learner: the project's own planner replays when it has any (the best online
accuracy of that algorithm over the project's runs, against the replayed items' majority share),
else the measured online accuracy on the benchmark streams of the project's task and item kind
(:func:`learners.evaluation.learner_evidence.comparable`, at a 10% budget; never another kind's:
a kind without a benchmark stream of its own says so, :func:`no_benchmark_note`). The mark is advice:
the admin may still choose a marked learner (the console warns); the planner never recommends a
setting that does not beat the baseline (:func:`.planner.ranked`).
"""

from __future__ import annotations

from typing import Any

import learners
from annotator.labelling.models import Project
from learners.evaluation.learner_evidence import BUDGET, comparable, load, measured_kinds
from learners.evaluation.per_class import beats_baseline

from .planner import tried_settings


def _planner_figures(project: Project) -> dict[str, dict[str, Any]]:
    """The best replayed online accuracy of each algorithm over the project's planner runs."""
    best: dict[str, dict[str, Any]] = {}
    for row in tried_settings(project):
        result = row["result"]
        if result is None or "baseline_accuracy" not in result["mean"]:
            continue
        mean = result["mean"]
        if row["algorithm"] not in best or mean["accuracy"] > best[row["algorithm"]]["accuracy"]:
            best[row["algorithm"]] = {
                "where": f"this project's planner (delta={float(row['delta']):g}, "
                         f"query ratio {mean['query_ratio']:.0%})",
                "accuracy": mean["accuracy"], "std": result["std"].get("accuracy"),
                "baseline": mean["baseline_accuracy"], "beats": beats_baseline(mean, "accuracy")}
    return best


def learner_rows(task: str, kind: str | None, project: Project | None = None) -> list[dict[str, Any]]:
    """One row per learner of ``task``, in the registry's order: ``name``, ``summary``,
    ``figures`` (each ``where``, ``accuracy``, ``std``, ``baseline`` = the majority class's share,
    ``beats``; the project's planner figure when it has one, else one per benchmark stream of
    ``task`` and ``kind`` that measured the learner (every stream of the task when ``kind`` is
    None); empty when nothing is known) and ``below``: some figure does not beat its baseline."""
    planner = _planner_figures(project) if project is not None else {}
    streams = comparable(task, kind, load())
    rows = []
    for name in learners.names_for_task(task):
        if name in planner:
            figures = [planner[name]]
        else:
            figures = [{"where": f"benchmark stream {s['name']} ({s['kind']}, {s['classes']} classes, "
                                 f"{s['featurizer']}, {BUDGET:.0%} labels"
                                 + (f"; {r['note']}" if r["note"] else "") + ")",
                        "accuracy": r["accuracy"], "std": r["std"], "baseline": s["majority"],
                        "beats": r["accuracy"] > s["majority"]}
                       for s in streams if (r := s["learners"].get(name)) is not None]
        rows.append({"name": name, "summary": learners.get_spec(name).summary, "figures": figures,
                     "below": any(not f["beats"] for f in figures)})
    return rows


def below_baseline(task: str, kind: str | None, project: Project | None = None) -> dict[str, str]:
    """``{learner: why}`` for the learners of :func:`learner_rows` marked ``below``; ``why`` names
    the figure, e.g. "0.601 online accuracy on benchmark stream sms (...) against 0.866"."""
    return {row["name"]: "; ".join(f"{f['accuracy']:.3f} online accuracy on {f['where']} against the "
                                   f"majority baseline's {f['baseline']:.3f}"
                                   for f in row["figures"] if not f["beats"])
            for row in learner_rows(task, kind, project) if row["below"]}


def no_benchmark_note(task: str, kind: str | None) -> str | None:
    """What to tell the admin of a ``task`` / ``kind`` project when no benchmark stream of that
    task and kind was measured (None when one was, or with ``kind`` None): its learners are known
    only from this project's own planner replays, not from other kinds' streams."""
    if kind is None or comparable(task, kind, load()):
        return None
    others = measured_kinds(task)
    measured = (f"the {task} streams measured are of {', '.join(others)} items" if others
                else f"no {task} stream was measured")
    return (f"No benchmark stream of {kind} items for a {task} task: {measured}, which say nothing of "
            f"{kind} items, so no learner is marked from them. Run the delta planner on this project's "
            f"labels to measure the learners here.")
