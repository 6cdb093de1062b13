"""Exports: the trained model (``.npz`` + JSON card, via ``learners.model_file.save_model``),
the labels and the opinions (CSV or JSONL rows, :data:`TABLES`).

Labels: the standing labels (not undone: the ones the dashboard and the Prodigy export count)
with their item's content, for training elsewhere; with :data:`UNDONE_KEY` = ``include`` the
undone ones too (:func:`parse_undone`). Each row says what it is: ``kind`` (:func:`answer_kind`:
an annotator's ``opinion``, a reviewer's ``adjudication`` or the answer to a ``honeypot``) and
``undone_at`` (null: it stands). Opinions (docs/teams.md): every label, undone ones too, with
who gave it, their role and when, and its item's consensus (class, status, method, reviewer,
time), for agreement and review.

The labels CSV is meant to be opened in spreadsheets, so it neutralises formula injection
(OWASP "CSV Injection"): a text cell that begins with ``=``, ``+``, ``-``, ``@`` (or their
full-width forms), a tab or a carriage return gets a leading apostrophe, which spreadsheets
read as "this is text", unless the whole cell is a plain number such as ``-1`` or ``+0.5``
(:data:`PLAIN_NUMBER`: a spreadsheet reads it as that number, and it cannot hold a formula).
Numbers are written as numbers. The JSONL export is for programs and
keeps every value exactly.

The model file holds the learner exactly as the app stores it, with the project's
featurizer config, so ``learners.load_model(path).predict(raw_items)`` gives the app's
predictions without Django. An export also holds the batch refit (:func:`project_refit`,
docs/algorithms/refit.md) of the labels, predicting in the learner's place when it beats the
learner in the check: the refit job's stored result on every label when it is current, else one
fitted in the request on the newest labels. The card's ``model`` record says which model predicts
and how that was checked, its ``refit`` record where the refit came from.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Case, Exists, F, OuterRef, Value, When
from django.utils import timezone

import learners
from annotator.labelling.engine.learner_state import stored_learner
from annotator.labelling.models import Honeypot, Label, LearnerState, Membership, Project
from learners.model_file import full_card, model_bytes, save_model
from learners.refit import RefitResult

from . import refit_runs
from .metrics import model_metrics
from .summary import budget_summary

#: first characters that make a spreadsheet read a cell as a formula (OWASP, plus full-width forms)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: a plain decimal number: an optional ASCII sign, ASCII digits with at most one point, an
#: optional exponent ("-1", "+1", "-0.5", "-.5", "+1e-3"). A spreadsheet reads it as that number,
#: and it can hold no reference, function or command, so it is written as it is.
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
LABEL_FIELDS = ("item_id", "seq", "content", "label", "annotator", "kind", "seconds", "primary",
                "applied_version", "created", "undone_at")
#: the labels export's query key that adds the undone labels, and its values (the first: default)
UNDONE_KEY, UNDONE_CHOICES = "undone", ("exclude", "include")
#: the labels export's ``kind`` of the answer to a honeypot (the others: :class:`.models.Label.Kind`)
HONEYPOT_ANSWER = "honeypot"
CONSENSUS_FIELDS = ("consensus", "consensus_status", "consensus_method", "consensus_by", "consensus_at")
OPINION_FIELDS = ("label_id", "item_id", "seq", "annotator", "role", "kind", "label", "created", "primary",
                  "undone_at", "overlap_k", *CONSENSUS_FIELDS)


def model_card(project: Project, state: LearnerState, learner: learners.Learner) -> dict[str, Any]:
    """The JSON card describing an exported model; its ``metrics`` are
    :func:`.metrics.model_metrics` (no item row read but the few of the labels not applied yet:
    the export's memory and time do not grow with the stream).

    ``delta`` is the delta the stream uses, as the console and the dashboard state it
    (:func:`.summary.budget_summary`): while a label budget steers it, the budget controller's value
    and not ``parameters["delta"]`` (the project's setting, which the budget replaces; docs/budget.md,
    "What the pages and the model card say"). ``delta_set_by``: ``"label budget"``,
    ``"project parameter"`` or None for a learner without a delta. ``label_budget``: None without a
    budget, else ``{"target", "achieved"}`` (target query ratio and queried / decided so far).

    ``learners.model_file.full_card`` adds the featurizer config and the learner's own record.
    """
    params = learner.get_params()
    budget = budget_summary(project, state)
    return {
        "project": project.name, "algorithm": learner.name, "parameters": params,
        "delta": budget["delta"],
        "delta_set_by": None if budget["delta"] is None
        else "label budget" if budget["budget_steers"] else "project parameter",
        "label_budget": None if budget["target"] is None
        else {"target": budget["target"], "achieved": budget["achieved"]},
        "classes": list(learner.classes), "task": project.task,
        "model_version": state.version,
        "labels_used": learner.n_labels, "items_seen": learner.n_seen,
        "metrics": model_metrics(project), "created": timezone.now().isoformat(),
    }


def project_refit(project: Project, state: LearnerState,
                  learner: learners.Learner) -> tuple[RefitResult, dict[str, Any]]:
    """The batch refit an export holds and the card's ``refit`` record saying where it came from.

    The stored result of the refit job (:func:`.refit_runs.current_run`, fitted on every label)
    when one is current at ``state``; else :func:`learners.refit.refit` run now, in the request,
    on the newest ``settings.REFIT_REQUEST_MAX_LABELS`` usable labels (:func:`.refit_runs.read_labels`:
    applied primary labels of queried items, each weighted by 1/q of its item's logged query
    probability; audits, honeypots and items whose vector was dropped have none).

    The record: ``source`` (``"refit job"`` or ``"export request"``), ``labels`` (fitted),
    ``model_version``, ``all_labels`` (whether every usable label was fitted), and for a job its
    ``run`` id and ``fitted_at`` (ISO 8601), for the request the ``cap`` and ``why``.
    """
    stored = refit_runs.current_run(project, state)
    if stored is not None:
        return refit_runs.stored_result(stored), {
            "source": "refit job", "run": stored.pk, "labels": stored.labels, "all_labels": True,
            "model_version": stored.model_version, "fitted_at": _iso(stored.finished)}
    cap = settings.REFIT_REQUEST_MAX_LABELS
    labelled = refit_runs.read_labels(project, learner, state.version, newest=cap)
    n = labelled.X.shape[0]
    return refit_runs.fit(project, learner, labelled), {
        "source": "export request", "labels": n, "model_version": state.version, "cap": cap,
        "all_labels": n < cap or refit_runs.count_labels(project, state.version) == n,
        "why": f"no refit job result is current at model version {state.version}: fitted in the export "
               f"request on the newest {cap:,} labels at most, labels only (the console's \"Refit on all "
               "labels\" fits on every label, self-trained on items the model decided alone where that "
               "checks better)"}


def _current(project: Project) -> tuple[learners.Learner, dict[str, Any], RefitResult]:
    """The committed learner, its card (with its ``refit`` record, :func:`project_refit`) and the
    batch refit (no lock: export never blocks labelling)."""
    state = LearnerState.objects.get(project=project)
    learner = stored_learner(state)
    result, source = project_refit(project, state, learner)
    return learner, {**model_card(project, state, learner), "refit": source}, result


def export_model(project: Project, path: str | Path) -> dict[str, Any]:
    """Write the project's current model to ``path`` (``.npz``) and its card beside it; returns the
    completed card (its ``model`` record says whether the refit or the learner predicts)."""
    learner, card, result = _current(project)
    featurizer = project.featurizer()
    save_model(path, learner, featurizer, card, refit=result)
    return full_card(learner, featurizer, card, result)


def model_download(project: Project) -> tuple[bytes, dict[str, Any]]:
    """``(npz bytes, completed card)`` of the current model, for download views."""
    learner, card, result = _current(project)
    featurizer = project.featurizer()
    return model_bytes(learner, featurizer, card, result), full_card(learner, featurizer, card, result)


def parse_undone(query: Mapping[str, str]) -> bool:
    """Whether the labels export's ``query`` asks for the undone labels too (``undone=include``;
    absent, empty or ``exclude``: the standing labels only). ValueError naming the values for
    anything else."""
    value = query.get(UNDONE_KEY, "") or UNDONE_CHOICES[0]
    if value not in UNDONE_CHOICES:
        raise ValueError(f"{UNDONE_KEY} must be one of {', '.join(UNDONE_CHOICES)}, not {value!r}")
    return value == "include"


def answer_kind() -> Case:
    """SQL, on labels: what kind of answer a label is, the labels export's ``kind``: the answer to
    a honeypot (:data:`HONEYPOT_ANSWER`: an opinion of an annotator who was served the item as
    a honeypot, :class:`.models.Honeypot`, undone answers included), else the label's own
    ``kind`` (``opinion``, or ``adjudication``: a reviewer's or admin's class no annotator gave)."""
    served = Honeypot.objects.filter(item_id=OuterRef("item_id"), annotator_id=OuterRef("annotator_id"))
    return Case(When(Exists(served), kind=Label.Kind.OPINION, then=Value(HONEYPOT_ANSWER)), default=F("kind"))


def label_rows(project: Project, undone: bool = False) -> Iterator[dict[str, Any]]:
    """The project's standing labels (``undone``: every label, undone ones too) in label order,
    as flat JSON-able dicts (:data:`LABEL_FIELDS`; ``kind``: :func:`answer_kind`, ``undone_at``:
    ISO 8601, None for a standing label)."""
    labels = Label.objects.filter(project=project)
    if not undone:
        labels = labels.filter(undone_at__isnull=True)
    labels = (labels.order_by("id").annotate(answer=answer_kind())
              .select_related("item", "annotator").defer("item__data", "item__vector"))
    for lab in labels.iterator(chunk_size=1000):
        item = lab.item
        content = item.filename or item.text or json.dumps(item.vector_pairs)
        yield {"item_id": item.pk, "seq": item.seq, "content": content, "label": lab.value,
               "annotator": lab.annotator.username if lab.annotator else None, "kind": lab.answer,
               "seconds": lab.seconds, "primary": lab.primary, "applied_version": lab.applied_version,
               "created": lab.created.isoformat(), "undone_at": _iso(lab.undone_at)}


def spreadsheet_safe(value: Any) -> Any:
    """``value`` with a leading apostrophe when it is a string a spreadsheet would read as a
    formula: it starts with one of :data:`FORMULA_STARTS` and is not a :data:`PLAIN_NUMBER`
    (``"-2+3"``, ``"+A1"``, ``"=cmd"``, ``"@x"`` get one; ``"-1"``, ``"+1"``, ``"-0.5"`` do not).
    Anything else unchanged (docs/dataset.md, "The export")."""
    if (isinstance(value, str) and value.startswith(FORMULA_STARTS)
            and PLAIN_NUMBER.fullmatch(value) is None):
        return "'" + value
    return value


def opinion_rows(project: Project, after: int = 0, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """The project's labels with ``id > after`` in label order, undone ones too, at most ``limit``
    (None: all), as flat JSON-able dicts (:data:`OPINION_FIELDS`). ``role``: the annotator's
    membership role in the project (None: no membership, e.g. staff, or a deleted user);
    ``kind``: ``opinion``, or ``adjudication`` (a reviewer's class no annotator gave);
    ``primary``: the label the learner uses; ``undone_at``: when it was undone (None: it stands);
    ``overlap_k``: annotators the item needs; the item's consensus (:class:`.models.Consensus`;
    all None while it has none, and while its opinions wait for the pipeline to aggregate them:
    ``due``): ``consensus`` (its class; None while disputed under majority
    vote), ``consensus_status``, ``consensus_method``, ``consensus_by`` (the reviewer) and
    ``consensus_at``; times are ISO 8601."""
    roles = dict(Membership.objects.filter(project=project).values_list("user_id", "role"))
    labels = (Label.objects.filter(project=project, id__gt=after).order_by("id")
              .values_list("id", "item_id", "item__seq", "annotator_id", "annotator__username", "kind",
                           "value", "created", "primary", "undone_at", "item__overlap_k",
                           "item__consensus__value", "item__consensus__status", "item__consensus__method",
                           "item__consensus__decided_by__username", "item__consensus__decided_at",
                           "item__consensus__due"))
    if limit is not None:
        labels = labels[:limit]
    for (pk, item_id, seq, user_id, username, kind, value, created, primary, undone_at, overlap_k, agreed,
         status, method, by, at, due) in labels.iterator(chunk_size=1000):
        agreement: dict[str, Any] = {  # none while not aggregated yet (due)
            "consensus": agreed, "consensus_status": status, "consensus_method": method or None,
            "consensus_by": by, "consensus_at": _iso(at)} if not due else dict.fromkeys(CONSENSUS_FIELDS)
        yield {"label_id": pk, "item_id": item_id, "seq": seq, "annotator": username,
               "role": roles.get(user_id), "kind": kind, "label": value, "created": created.isoformat(),
               "primary": primary, "undone_at": _iso(undone_at), "overlap_k": overlap_k, **agreement}


def _iso(when: Any) -> str | None:
    """ISO 8601 of a time, None for None."""
    return when.isoformat() if when else None


def _opinion_table(project: Project, undone: bool) -> Iterator[dict[str, Any]]:
    """The opinions table (:func:`opinion_rows`: undone labels always in)."""
    return opinion_rows(project)


#: the exported tables: name -> (rows of a project, undone labels too or not; CSV columns)
TABLES: dict[str, tuple[Callable[[Project, bool], Iterator[dict[str, Any]]], tuple[str, ...]]] = {
    "labels": (label_rows, LABEL_FIELDS), "opinions": (_opinion_table, OPINION_FIELDS)}


def table_csv(project: Project, table: str, undone: bool = False) -> Iterator[str]:
    """CSV text of the rows of :data:`TABLES` ``[table]`` (``undone``: the labels table's undone
    labels too) with :func:`spreadsheet_safe` cells, header first, yielded line by line."""
    rows, fields = TABLES[table]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields)
    writer.writeheader()
    for row in rows(project, undone):
        writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    yield buf.getvalue()


def table_jsonl(project: Project, table: str, undone: bool = False) -> Iterator[str]:
    """JSON Lines of the rows of :data:`TABLES` ``[table]`` (values exactly as stored; ``undone``
    as :func:`table_csv`'s)."""
    rows, _ = TABLES[table]
    for row in rows(project, undone):
        yield json.dumps(row) + "\n"
