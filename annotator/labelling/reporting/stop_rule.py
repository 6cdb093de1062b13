"""The quality target of the model's own labels and the stop rule (docs/estimates.md, "Stop rule").

A project may set ``quality_target`` (e.g. 0.97: "the model's own labels are at least 97% correct")
and ``quality_confidence`` (0.95). The target **holds** when

* the importance-weighted estimate of the share of correct model labels
  (:func:`.class_figures.model_label_accuracy`) has the lower end of its interval at that
  confidence at or above the target: the labels prove it; and
* the audit (:func:`.audit_sampling.audit_estimate`), when reviewers decided any audit, does not
  contradict it: the upper end of its interval is at or above the target. Once the rule has held,
  that audit is of the model labels decided in its last pause (from ``stopped_from_seq``, the
  items nobody was asked about): the importance-weighted estimate speaks for the time before, and
  a fall of the labels' quality afterwards would be diluted in an audit of the whole stream.

The importance-weighted estimate speaks for the covered items only (:mod:`.coverage`): with a
label budget whose cap holds most items it rests on the first items of the stream, so the target's
status carries the coverage of the estimate it was proved on, and says so where it is shown.

When that audit contradicts the target the stream asks people again, and keeps asking: the
importance-weighted estimate of the time before the pause still proves the target, so only the
admin re-arms the rule (turning ``stop_at_target`` off clears ``stopped_from_seq``).

With ``stop_at_target`` the workers keep ``Project.asking_stopped`` equal to "the target holds"
(:func:`refresh`, before each pipeline run and on each sweep): the stream then asks nobody
(:func:`.stream.advance`) and resumes as soon as the target no longer holds. While nobody is
asked the importance-weighted estimate gets no new labels, so what can make it stop holding is
the audit: a project that wants the stream to resume when the model's labels get worse sets an
audit rate.
"""

from __future__ import annotations

from typing import Any

from annotator.labelling.models import LearnerState, Project
from annotator.labelling.teams.audit_sampling import audit_estimate

from .class_figures import model_label_accuracy
from .coverage import estimate_coverage
from .metrics import aggregates


def target_status(project: Project, model_labels: dict[str, Any], audit: dict[str, Any],
                  coverage: dict[str, Any]) -> dict[str, Any] | None:
    """``{"target", "confidence", "holds", "proved" (by the importance-weighted estimate),
    "contradicted" (by the audit), "stop_enabled", "stopped", "coverage"}``; None without a target.
    ``model_labels``: :func:`.class_figures.model_label_accuracy` at the project's confidence;
    ``audit``: :func:`.audit_sampling.audit_estimate` at the same confidence (of the items decided
    while nobody was asked, when the stream asks nobody); ``coverage``: what the estimate covers
    (:func:`.coverage.estimate_coverage`), which the status carries: "proved" is proved on those
    items."""
    target = project.quality_target
    if target is None:
        return None
    low = model_labels["low"] if model_labels["value"] is not None else None
    proved = low is not None and low >= target
    contradicted = audit["n"] > 0 and audit["high"] is not None and audit["high"] < target
    return {"target": target, "confidence": project.quality_confidence, "holds": proved and not contradicted,
            "proved": proved, "contradicted": contradicted, "stop_enabled": project.stop_at_target,
            "stopped": project.asking_stopped, "coverage": coverage}


def evaluate(project: Project) -> dict[str, Any]:
    """``{"model_labels", "audit", "audit_stopped" (of the last pause; None before one), "target"}`` at
    the project's confidence (:func:`target_status`)."""
    stats, state = aggregates(project)
    labels = model_label_accuracy(project, stats, project.quality_confidence)
    audit = audit_estimate(project, project.quality_confidence)
    pause = project.stopped_from_seq
    stopped = audit_estimate(project, project.quality_confidence, pause) if pause is not None else None
    return {"model_labels": labels, "audit": audit, "audit_stopped": stopped,
            "target": target_status(project, labels, stopped or audit,
                                    estimate_coverage(stats, state.n_decided if state else 0))}


def refresh(project_id: int) -> bool | None:
    """Set ``asking_stopped`` to whether the target holds, for a project with ``stop_at_target``
    (off otherwise); returns the new value (None: no such project). One conditional update, so a
    concurrent change of the settings is not overwritten."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return None
    stop = False
    armed = project.stop_at_target and project.quality_target is not None
    if armed:
        status = evaluate(project)["target"]
        stop = bool(status and status["holds"])
    if stop and not project.asking_stopped:  # a pause starts at the next item to decide
        start = LearnerState.objects.filter(project_id=project_id).values_list("n_decided", flat=True).first()
        Project.objects.filter(pk=project_id).update(asking_stopped=True, stopped_from_seq=start or 0)
    elif not stop and (project.asking_stopped or (not armed and project.stopped_from_seq is not None)):
        Project.objects.filter(pk=project_id).update(
            asking_stopped=False, **({} if armed else {"stopped_from_seq": None}))
    return stop
