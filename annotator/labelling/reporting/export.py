"""Exports: the trained model (``.npz`` + JSON card, via ``learners.model_file.save_model``),
the labels and the opinions (CSV or JSONL rows, :data:`TABLES`).

Labels: every label with its item's content, for training elsewhere. Opinions
(docs/teams.md): every label, undone ones too, with who gave it, their role and when, and its
item's consensus (class, status, method, reviewer, time), for agreement and review.

The labels CSV is meant to be opened in spreadsheets, so it neutralises formula injection
(OWASP "CSV Injection"): a text cell that begins with ``=``, ``+``, ``-``, ``@`` (or their
full-width forms), a tab or a carriage return gets a leading apostrophe, which spreadsheets
read as "this is text". Numbers are written as numbers. The JSONL export is for programs and
keeps every value exactly.

The model file holds the learner exactly as the app stores it, with the project's
featurizer config, so ``learners.load_model(path).predict(raw_items)`` gives the app's
predictions without Django. An export also fits the batch refit (:func:`project_refit`,
docs/algorithms/refit.md) on the labels and keeps it in the file, predicting in the learner's
place, when it beats the learner in the check; the card's ``model`` record says which model
predicts and how that was checked.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from django.utils import timezone

import learners
from annotator.labelling.engine.learner_state import stored_learner
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import Label, LearnerState, Membership, Project
from learners.model_file import full_card, model_bytes, save_model
from learners.refit import RefitResult, refit

from .metrics import model_metrics

#: first characters that make a spreadsheet read a cell as a formula (OWASP, plus full-width forms)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
LABEL_FIELDS = ("item_id", "seq", "content", "label", "annotator", "seconds", "primary",
                "applied_version", "created")
OPINION_FIELDS = ("label_id", "item_id", "seq", "annotator", "role", "kind", "label", "created", "primary",
                  "undone_at", "overlap_k", "consensus", "consensus_status", "consensus_method",
                  "consensus_by", "consensus_at")


def model_card(project: Project, state: LearnerState, learner: learners.Learner) -> dict[str, Any]:
    """The JSON card describing an exported model; its ``metrics`` are
    :func:`.metrics.model_metrics` (no item row read but the few of the labels not applied yet:
    the export's memory and time do not grow with the stream).

    ``learners.model_file.full_card`` adds the featurizer config and the learner's own record.
    """
    params = learner.get_params()
    return {
        "project": project.name, "algorithm": learner.name, "parameters": params,
        "delta": params.get("delta"), "classes": list(learner.classes), "task": project.task,
        "model_version": state.version,
        "labels_used": learner.n_labels, "items_seen": learner.n_seen,
        "metrics": model_metrics(project), "created": timezone.now().isoformat(),
    }


#: the newest labels a refit uses at most: the download views fit it in the request (21 fits of
#: these labels, docs/algorithms/refit.md; seconds for a thousand labels on 2 cores)
REFIT_MAX_LABELS = 5_000


def project_refit(project: Project, learner: learners.Learner) -> RefitResult:
    """:func:`learners.refit.refit` on the project's applied primary labels of queried items, in
    applied order (the newest :data:`REFIT_MAX_LABELS`), each weighted by 1/q of its item's
    logged query probability; the online side of the check is a fresh learner of the project's
    configuration (:meth:`.models.Project.new_learner`, its cold start included). Labels of items
    the learner did not query (audits, honeypots) or whose vector was dropped are left out:
    they have no query probability to weight them by."""
    labels = list(Label.objects.filter(project=project, primary=True, applied_version__isnull=False,
                                       item__queried=True, item__query_prob__gt=0,
                                       item__vector__isnull=False)
                  .order_by("-applied_version").values_list("value", "item__vector", "item__query_prob")
                  [:REFIT_MAX_LABELS])[::-1]
    n = learner.n_features
    rows = [decode(vector, n) for _, vector, _ in labels]
    X = sp.vstack(rows, format="csr") if rows else sp.csr_matrix((0, n))
    codes = np.array([learner.class_code(project.parse_class(value)) for value, _, _ in labels],
                     dtype=np.int64)
    qs = np.array([q for _, _, q in labels], dtype=float)
    return refit(lambda: project.new_learner(n), X, codes, qs, seed=project.rng_seed)


def _current(project: Project) -> tuple[learners.Learner, dict[str, Any], RefitResult]:
    """The committed learner, its card and the batch refit of its labels (no lock: export never
    blocks labelling)."""
    state = LearnerState.objects.get(project=project)
    learner = stored_learner(state)
    return learner, model_card(project, state, learner), project_refit(project, learner)


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


def label_rows(project: Project) -> Iterator[dict[str, Any]]:
    """Every label of the project in label order, as flat JSON-able dicts (:data:`LABEL_FIELDS`)."""
    labels = (Label.objects.filter(project=project).order_by("id")
              .select_related("item", "annotator").defer("item__data", "item__vector"))
    for lab in labels.iterator(chunk_size=1000):
        item = lab.item
        content = item.filename or item.text or json.dumps(item.vector_pairs)
        yield {"item_id": item.pk, "seq": item.seq, "content": content, "label": lab.value,
               "annotator": lab.annotator.username if lab.annotator else None,
               "seconds": lab.seconds, "primary": lab.primary, "applied_version": lab.applied_version,
               "created": lab.created.isoformat()}


def spreadsheet_safe(value: Any) -> Any:
    """``value`` with a leading apostrophe when it is a string a spreadsheet would read as a
    formula (it starts with one of :data:`FORMULA_STARTS`); anything else unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def opinion_rows(project: Project, after: int = 0, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """The project's labels with ``id > after`` in label order, undone ones too, at most ``limit``
    (None: all), as flat JSON-able dicts (:data:`OPINION_FIELDS`). ``role``: the annotator's
    membership role in the project (None: no membership, e.g. staff, or a deleted user);
    ``kind``: ``opinion``, or ``adjudication`` (a reviewer's class no annotator gave);
    ``primary``: the label the learner uses; ``undone_at``: when it was undone (None: it stands);
    ``overlap_k``: annotators the item needs; the item's consensus (:class:`.models.Consensus`;
    all None while it has none): ``consensus`` (its class; None while disputed under majority
    vote), ``consensus_status``, ``consensus_method``, ``consensus_by`` (the reviewer) and
    ``consensus_at``; times are ISO 8601."""
    roles = dict(Membership.objects.filter(project=project).values_list("user_id", "role"))
    labels = (Label.objects.filter(project=project, id__gt=after).order_by("id")
              .values_list("id", "item_id", "item__seq", "annotator_id", "annotator__username", "kind",
                           "value", "created", "primary", "undone_at", "item__overlap_k",
                           "item__consensus__value", "item__consensus__status", "item__consensus__method",
                           "item__consensus__decided_by__username", "item__consensus__decided_at"))
    if limit is not None:
        labels = labels[:limit]
    for (pk, item_id, seq, user_id, username, kind, value, created, primary, undone_at, overlap_k, agreed,
         status, method, by, at) in labels.iterator(chunk_size=1000):
        yield {"label_id": pk, "item_id": item_id, "seq": seq, "annotator": username,
               "role": roles.get(user_id), "kind": kind, "label": value, "created": created.isoformat(),
               "primary": primary, "undone_at": _iso(undone_at), "overlap_k": overlap_k,
               "consensus": agreed, "consensus_status": status, "consensus_method": method or None,
               "consensus_by": by, "consensus_at": _iso(at)}


def _iso(when: Any) -> str | None:
    """ISO 8601 of a time, None for None."""
    return when.isoformat() if when else None


#: the exported tables: name -> (rows of a project, CSV columns)
TABLES: dict[str, tuple[Callable[[Project], Iterator[dict[str, Any]]], tuple[str, ...]]] = {
    "labels": (label_rows, LABEL_FIELDS), "opinions": (opinion_rows, OPINION_FIELDS)}


def table_csv(project: Project, table: str) -> Iterator[str]:
    """CSV text of the rows of :data:`TABLES` ``[table]`` with :func:`spreadsheet_safe` cells,
    header first, yielded line by line."""
    rows, fields = TABLES[table]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields)
    writer.writeheader()
    for row in rows(project):
        writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    yield buf.getvalue()


def table_jsonl(project: Project, table: str) -> Iterator[str]:
    """JSON Lines of the rows of :data:`TABLES` ``[table]`` (values exactly as stored)."""
    rows, _ = TABLES[table]
    for row in rows(project):
        yield json.dumps(row) + "\n"
