"""Project metrics (docs/architecture.md, "Metrics"), read from the decision log's running
aggregates (:mod:`.running_totals`) so that a request costs the same at 1k and 1M items.

* ``items``, ``pending`` (not decided yet) and ``waiting``: items an annotator could lease
  now (:meth:`.models.ItemQuerySet.waiting`, the count the project list and the queue show).
* ``seen``: items decided so far; ``queried`` and ``query_ratio`` = queried / seen.
* ``items_labelled``: the queried items that have their label from the people the query asked
  (an annotator's label, their consensus, or a reviewer's decision), applied or waiting for the
  worker: one per item, the sample the query rule drew. Not counted: an item in dispute (no label
  yet), an item whose label an admin replaced and a label given in Label Studio (``Label.drawn``
  False, docs/dataset.md), which leave it for good; ``labels``: the same figure under its name
  before ``items_labelled`` (kept so that API clients written then go on working);
  ``labels_applied``: those the worker has applied.
  ``seconds_per_label``: mean annotator time over those labels (the ones with a recorded time).
* ``labels_given``: every label people gave in this app and were paid for
  (:func:`labels_given`: each answer of an annotator, undone, changed, extra and honeypot answers
  included; docs/cost.md); it never decreases. ``label_cost``: ``price_per_label`` x
  ``labels_given`` (None without a price).
* ``accuracy_gold``: exact online accuracy of the logged predictions over every decided item
  that has a known (gold) class, queried or not.
* ``accuracy_iw``: the importance-weighted (Horvitz-Thompson) estimate of online accuracy
  from queried items only, each weighted by 1/q, with its 95% interval
  (:func:`learners.evaluation.metrics.importance_weighted_accuracy`) over the prefix of the
  stream it can cover (the rule of :mod:`.decision_log`), as of the worker's last pipeline run:
  ``covers`` = the items of that prefix (it stops at the item with ``seq == covers`` when
  ``covers < seen``), ``seen`` = those less the skipped queried ones and the items nobody could
  be asked about (query probability 0), ``n`` = its labels.
* ``coverage``: what every importance-weighted estimate covers (:func:`.coverage.estimate_coverage`:
  ``covered_items`` of ``decided_items``, ``held_by_cap``, ``unasked_items`` per cause,
  ``not_reached_items``, ``warning`` when the covered share is under 90%, and a ``summary``).
* ``accuracy_queried``: plain accuracy of the predictions on labelled queried items (a
  biased view: the learner queries the items it is unsure of).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotator.labelling.engine import running_totals
from annotator.labelling.engine.queue_counts import waiting_count
from annotator.labelling.models import Item, Label, LabelsGiven, LearnerState, Project, StreamStats
from learners.evaluation.metrics import iw_estimate

from .coverage import estimate_coverage


def aggregates(project: Project) -> tuple[StreamStats, LearnerState | None]:
    """The project's stored aggregates and state (built from the log once, under the state lock,
    for a project from before they existed or before they counted what they leave out:
    :func:`.running_totals.outdated`)."""
    found = StreamStats.objects.filter(project=project).first()
    state = LearnerState.objects.filter(project=project).defer("blob").first()
    if running_totals.outdated(found) and state is not None:
        with transaction.atomic():
            LearnerState.objects.select_for_update().filter(project=project).defer("blob").first()
            found = running_totals.load(project.pk)
        state.refresh_from_db(fields=["n_decided", "n_queried"])
    return found or StreamStats(project=project), state


def _estimate(value: float | None, n: int, **extra: Any) -> dict[str, Any]:
    return {"value": value, "n": n, **extra}


def labels_given(project: Project) -> int:
    """The labels people gave in ``project`` and were paid for (docs/cost.md, "Label cost"): every
    answer an annotator gave here (a ``Label`` of kind opinion drawn by this app: to a queued item,
    as an extra opinion or to a honeypot), whether it was undone or changed since (the work was
    done; a change is a second answer). Not a reviewer's decision nor an admin's relabel (kind
    adjudication, or no label of their own), nor a label given in Label Studio (not drawn here).
    Label rows are never deleted, so the count never decreases. Read from the project's counter
    (:class:`..models.LabelsGiven`), one row whatever the number of labels."""
    return LabelsGiven.of(project.pk)


def label_cost(project: Project, given: int) -> float | None:
    """The label cost of ``given`` labels given (:func:`labels_given`) at the project's price per
    label; None without a price (docs/cost.md)."""
    return None if project.price_per_label is None else project.price_per_label * given


def project_metrics(project: Project) -> dict[str, Any]:
    """The metrics of the module docstring as a JSON-able dict: :func:`model_metrics` plus the
    stream's live figures (``items``, ``pending``, ``waiting``: two bounded item queries)."""
    learnt = model_metrics(project)
    last = Item.objects.filter(project=project).order_by("-seq").values_list("seq", flat=True).first()
    items = 0 if last is None else last + 1
    return {"project": project.pk, "model_version": learnt["model_version"],
            "items": items, "pending": items - learnt["seen"], "waiting": waiting_count(project),
            **{k: v for k, v in learnt.items() if k not in ("project", "model_version")}}


def model_metrics(project: Project) -> dict[str, Any]:
    """The metrics of the module docstring but ``items``, ``pending`` and ``waiting``, from the
    aggregates (:mod:`.running_totals`) plus the labels not applied yet: the model card's, which reads no
    item row but those of these few labels (an export never reads the decision log)."""
    agg, state = aggregates(project)
    seen, queried = (state.n_decided, state.n_queried) if state else (0, 0)
    new = list(Label.objects.filter(project=project, primary=True, drawn=True, applied_version__isnull=True)
               .values_list("value", "item__prediction", "seconds"))  # the worker's backlog: a few rows
    labels = agg.labels + len(new)
    timed = agg.seconds_n + sum(1 for *_, s in new if s is not None)
    right = agg.labels_correct + sum(1 for v, p, _ in new if v == p)
    new_seconds = sum(s for *_, s in new if s is not None)
    iw = iw_estimate(agg.iw_s1, agg.iw_s2, agg.iw_m, agg.iw_seen)
    given = labels_given(project)
    return {
        "project": project.pk,
        "model_version": state.version if state else 0,
        "seen": seen, "queried": queried, "query_ratio": queried / seen if seen else None,
        "items_labelled": labels, "labels": labels, "labels_applied": agg.labels,
        "labels_given": given, "label_cost": label_cost(project, given),
        "seconds_per_label": (agg.seconds_sum + new_seconds) / timed if timed else None,
        "accuracy_gold": _estimate(agg.gold_correct / agg.gold_n if agg.gold_n else None, agg.gold_n),
        "accuracy_iw": _estimate(iw.value, iw.n, low=iw.low, high=iw.high, seen=agg.iw_seen,
                                 covers=min(agg.frontier, seen)),
        "accuracy_queried": _estimate(right / labels if labels else None, labels),
        "coverage": estimate_coverage(agg, seen),
    }
