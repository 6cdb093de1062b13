"""The measured online accuracy of each learner on the product's own benchmark streams, beside
the majority-class baseline (``learner_evidence.json``, written by
``benchmarks/learner_evidence.py`` from ``benchmarks/LABEL_EFFICIENCY.md``).

:func:`comparable` answers, for a project's task and item kind, the streams of the same task
and kind with each learner's figure and whether it beats answering the majority class every
time; none when no stream of that task and kind was measured (another kind's figures say nothing
of this one: OASIS loses to the majority baseline on SMS and URLs, which tells nothing of vectors).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: the query budget whose figures are kept
BUDGET = 0.1
EVIDENCE_FILE = Path(__file__).with_name("learner_evidence.json")


def load(path: Path = EVIDENCE_FILE) -> dict[str, Any]:
    """The evidence document; ``{"streams": {}}`` when the file was never written."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {"streams": {}}


def comparable(task: str, kind: str | None, doc: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The benchmark streams comparable with a ``task`` / ``kind`` project: those of the same task
    and item kind, empty when there is none (never another kind's); with ``kind`` None (no
    project yet: the new-project form lists them by task) every stream of the task. Each:
    ``name``, ``kind``, ``classes``, ``majority`` (the majority class's share: the baseline's
    accuracy), ``featurizer`` and ``learners`` (name -> accuracy, std, query_ratio, note)."""
    streams = (doc or load())["streams"]
    same_task = [{"name": n, **s} for n, s in sorted(streams.items()) if s["task"] == task]
    return same_task if kind is None else [s for s in same_task if s["kind"] == kind]


def measured_kinds(task: str, doc: dict[str, Any] | None = None) -> list[str]:
    """The item kinds with a benchmark stream of ``task``, sorted."""
    return sorted({s["kind"] for s in (doc or load())["streams"].values() if s["task"] == task})
