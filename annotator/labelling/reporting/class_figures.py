"""Per-class figures of a project (docs/estimates.md): precision, recall and F1 per class,
macro-F1, balanced accuracy and the majority-class baseline, exact on the items with a gold class
and estimated from the queried labels (importance-weighted, with 95% intervals), plus the share
of the model's own labels that is correct, per predicted class.

Everything is read from the running aggregates (:mod:`.running_totals`: ``gold_cells``,
``iw_cells``, ``iw_auto``), a few numbers per class, so the cost does not grow with the stream.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from annotator.labelling.models import Project, StreamStats
from learners.evaluation.metrics import Estimate
from learners.evaluation.per_class import Cells, auto_label_error, estimated_figures, exact_figures, z_of


def _index(project: Project) -> dict[str, int]:
    """Class (as text, the aggregates' keys) -> its position in ``project.classes``."""
    return {str(c): k for k, c in enumerate(project.classes)}


def gold_matrix(project: Project, stats: StreamStats) -> np.ndarray:
    """The confusion matrix (k, k) of the decided items with a gold class (gold x prediction);
    cells of a class no longer in the project are left out."""
    index, k = _index(project), len(project.classes)
    T = np.zeros((k, k))
    for key, n in stats.gold_cells.items():
        a, b = json.loads(key)
        if a in index and b in index:
            T[index[a], index[b]] += n
    return T


def iw_cells(project: Project, stats: StreamStats) -> Cells:
    """The importance-weighted sums of the covered prefix as :class:`~learners.evaluation.per_class.Cells`."""
    index, k = _index(project), len(project.classes)
    cells = Cells.empty(k)
    for key, (m, s1, s2) in stats.iw_cells.items():
        a, b = json.loads(key)
        if a in index and b in index:
            cells.m[index[a], index[b]] += m
            cells.s1[index[a], index[b]] += s1
            cells.s2[index[a], index[b]] += s2
    return cells


def iw_auto(project: Project, stats: StreamStats) -> np.ndarray:
    """Items of the covered prefix decided without a query, per predicted class (k,)."""
    return np.array([float(stats.iw_auto.get(str(c), 0)) for c in project.classes])


def _json(e: Estimate) -> dict[str, Any]:
    return {"value": e.value, "low": e.low, "high": e.high, "n": e.n}


def class_figures(project: Project, stats: StreamStats) -> dict[str, Any]:
    """JSON-able: ``{"exact": {...} or None without gold, "estimated": {...}}``, both as
    :func:`learners.evaluation.per_class.exact_figures` (estimates as ``{"value", "low",
    "high", "n"}``), plus ``"rows"``: per class ``{"cls", "support", and per figure
    "<f>_exact" / "<f>_est"}`` and ``"overall"``: per figure (accuracy, macro-F1, balanced
    accuracy) ``{"name", "exact", "est", "base_exact", "base_est", "below_exact", "below_est"}``
    (below: not above the majority baseline), what the dashboard's table shows."""
    T = gold_matrix(project, stats)
    exact = exact_figures(T, project.classes) if T.sum() else None
    est = estimated_figures(iw_cells(project, stats), stats.iw_seen, project.classes)
    rows = []
    for k, (c, e) in enumerate(zip(project.classes, est["classes"], strict=True)):
        row: dict[str, Any] = {"cls": c, "support": exact["classes"][k]["support"] if exact else None}
        for f in ("precision", "recall", "f1"):
            row[f"{f}_exact"] = exact["classes"][k][f] if exact else None
            row[f"{f}_est"] = _json(e[f])
        rows.append(row)
    overall: list[dict[str, Any]] = [{"name": name, "label": label,
                "exact": exact[name] if exact else None, "est": _json(est[name]),
                "base_exact": exact["baseline"][name] if exact else None,
                "base_est": _json(est["baseline"][name])}
               for name, label in (("accuracy", "accuracy"), ("macro_f1", "macro-F1"),
                                   ("balanced_accuracy", "balanced accuracy"))]
    for o in overall:  # not above the majority-class baseline: exactly, or by the estimates
        o["below_exact"] = o["exact"] is not None and o["exact"] <= o["base_exact"]
        o["below_est"] = o["est"]["value"] is not None and o["base_est"]["value"] is not None \
            and o["est"]["value"] <= o["base_est"]["value"]
    return {"rows": rows, "overall": overall, "gold_n": int(T.sum()),
            "baseline_class": {"exact": exact["baseline"]["class"] if exact else None,
                               "est": est["baseline"]["class"]},
            "labels": int(iw_cells(project, stats).m.sum()), "covers": stats.frontier}


def model_label_accuracy(project: Project, stats: StreamStats, confidence: float = 0.95) -> dict[str, Any]:
    """The share of the model's own labels (items decided without a query) that is correct,
    estimated from the importance-weighted labels of the covered prefix (docs/estimates.md,
    "Model labels"), with its interval at ``confidence``: ``{"value", "low", "high", "n"
    (labels it rests on), "auto" (model labels of the prefix), "classes": [{"cls", "auto",
    "value", "low", "high", "n"}]}`` (None where nothing is known)."""
    out = auto_label_error(iw_cells(project, stats), iw_auto(project, stats), project.classes,
                           z_of(confidence))

    def correct(e: Estimate) -> dict[str, Any]:
        if e.value is None and e.low is None:
            return {"value": None, "low": None, "high": None, "n": e.n}
        return {"value": None if e.value is None else 1.0 - e.value,
                "low": None if e.high is None else 1.0 - e.high,
                "high": None if e.low is None else 1.0 - e.low, "n": e.n}

    return {**correct(out["error"]), "auto": out["auto"],
            "classes": [{"cls": r["cls"], "auto": r["auto"], **correct(r["error"])} for r in out["classes"]]}
