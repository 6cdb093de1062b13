"""Exports: the trained model (``.npz`` + JSON card, via ``learners.model_file.save_model``)
and the labels (CSV or JSONL rows).

The labels CSV is meant to be opened in spreadsheets, so it neutralises formula injection
(OWASP "CSV Injection"): a text cell that begins with ``=``, ``+``, ``-``, ``@`` (or their
full-width forms), a tab or a carriage return gets a leading apostrophe, which spreadsheets
read as "this is text". Numbers are written as numbers. The JSONL export is for programs and
keeps every value exactly.

The model file holds the learner exactly as the app stores it, with the project's
featurizer config, so ``learners.load_model(path).predict(raw_items)`` gives the app's
predictions without Django.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.utils import timezone

import learners
from learners.model_file import full_card, model_bytes, save_model

from .metrics import project_metrics
from .models import Label, LearnerState, Project

#: first characters that make a spreadsheet read a cell as a formula (OWASP, plus full-width forms)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
LABEL_FIELDS = ("item_id", "seq", "content", "label", "annotator", "seconds", "primary",
                "applied_version", "created")


def model_card(project: Project, state: LearnerState, learner: learners.Learner) -> dict[str, Any]:
    """The JSON card describing an exported model (issue 2 item 10).

    ``learners.model_file.full_card`` adds the featurizer config and the learner's own record.
    """
    params = learner.get_params()
    return {
        "project": project.name, "algorithm": learner.name, "parameters": params,
        "delta": params.get("delta"), "classes": list(learner.classes), "task": project.task,
        "model_version": state.version,
        "labels_used": learner.n_labels, "items_seen": learner.n_seen,
        "metrics": project_metrics(project), "created": timezone.now().isoformat(),
    }


def _current(project: Project) -> tuple[learners.Learner, dict[str, Any]]:
    """The committed learner and its card (no lock: export never blocks labelling)."""
    state = LearnerState.objects.get(project=project)
    learner = learners.from_bytes(bytes(state.blob))
    return learner, model_card(project, state, learner)


def export_model(project: Project, path: str | Path) -> dict[str, Any]:
    """Write the project's current model to ``path`` (``.npz``) and its card beside it; returns the card."""
    learner, card = _current(project)
    save_model(path, learner, project.featurizer(), card)
    return card


def model_download(project: Project) -> tuple[bytes, dict[str, Any]]:
    """``(npz bytes, completed card)`` of the current model, for download views."""
    learner, card = _current(project)
    featurizer = project.featurizer()
    return model_bytes(learner, featurizer, card), full_card(learner, featurizer, card)


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


def labels_csv(project: Project) -> Iterator[str]:
    """CSV text of :func:`label_rows` with :func:`spreadsheet_safe` cells, header first,
    yielded line by line."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=LABEL_FIELDS)
    writer.writeheader()
    for row in label_rows(project):
        writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    yield buf.getvalue()


def labels_jsonl(project: Project) -> Iterator[str]:
    """JSON Lines of :func:`label_rows`."""
    for row in label_rows(project):
        yield json.dumps(row) + "\n"
