"""The measured online accuracy of each learner on the product's own benchmark streams, beside
the majority-class baseline (``learner_evidence.json``, written by
``benchmarks/learner_evidence.py`` from ``benchmarks/LABEL_EFFICIENCY.md``).

:func:`comparable` answers, for a project's task and item kind, the streams of the same task
and kind (or, when there is none, of the same task) with each learner's figure and whether it
beats answering the majority class every time.
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
    """The benchmark streams comparable with a ``task`` / ``kind`` project: the same task and item
    kind, else (or with ``kind`` None) the same task of any kind. Each: ``name``, ``kind``,
    ``classes``, ``majority`` (the majority class's share: the baseline's accuracy),
    ``featurizer`` and ``learners`` (name -> accuracy, std, query_ratio, note)."""
    streams = (doc or load())["streams"]
    same_task = [{"name": n, **s} for n, s in sorted(streams.items()) if s["task"] == task]
    return [s for s in same_task if s["kind"] == kind] or same_task
