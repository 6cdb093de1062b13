"""Label Studio JSON exports (a list of tasks) as uploads of text, URL or image items.

A task is ``{"id", "data": {"text" | "url" | "image": ...}, "annotations": [...],
"predictions": [...]}``; each annotation's or prediction's ``result`` is a list of
``{"from_name", "to_name", "type", "value"}`` regions. Only a ``Choices`` classification is
read: a result of type ``choices`` with exactly one choice, a class of the project. Its
annotations become the record's :attr:`~.records.Record.opinions` (``(class, who)``, ``who`` the
annotator as the export names them: the email of ``completed_by`` when the export expands it,
else ``created_username``, else ``user <id>``); cancelled (skipped) annotations and empty results
are left out. Predictions are checked by the same rules and then dropped: they are another
model's guesses, and this project's learner makes its own. A prediction given by its id only (an
integer: Label Studio's own "Export -> JSON" writes ``"predictions": [1]``) holds nothing to check
and is skipped.

Refused with the task's 0-based index (and its Label Studio id): a result of any other type (a
``labels`` span, a bounding box, a text area...), several choices in one result, a class the
project does not have, a task without its item's content. An image must be inline, a
``data:image/...;base64,`` URI (an export links its images: ``/data/upload/...`` or a storage
URL, which this parser does not fetch).

The file is UTF-8 JSON (a BOM at its start is dropped), read by the app's one JSON rule
(:func:`.input_rules.parse_json`: JSON nested too deeply is refused). It is read whole
(:data:`MAX_JSON_BYTES` at most): a JSON array cannot be streamed by
the standard library, and exports of classification projects stay far below that size.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any, BinaryIO

from .input_rules import parse_json, text_problem
from .lines import BOM
from .records import IngestError, Record, Target, checked_filename

#: largest Label Studio export read (bytes)
MAX_JSON_BYTES = 256 * 1024 * 1024
#: the ``data`` key of each item kind's content, in the order tried
CONTENT_KEYS = {"text": ("text",), "url": ("url", "text"), "image": ("image",)}


def task_where(index: int, task: Any) -> str:
    """``task 3`` or ``task 3 (Label Studio id 17)``: where a message points."""
    tid = task.get("id") if isinstance(task, dict) else None
    return f"task {index} (Label Studio id {tid})" if isinstance(tid, int) else f"task {index}"


def annotator_name(annotation: dict[str, Any]) -> str:
    """Who gave ``annotation``, as its export names them (module docstring)."""
    by = annotation.get("completed_by")
    if isinstance(by, dict):
        for key in ("email", "username"):
            if isinstance(by.get(key), str) and by[key].strip():
                return by[key].strip()
        by = by.get("id")
    name = annotation.get("created_username")
    if isinstance(name, str) and name.strip():
        return name.split(",")[0].strip()
    return f"user {by}" if isinstance(by, int) else "unknown"


def choice_of(target: Target, result: Any, where: str) -> Any:
    """The class a ``result`` list gives (None: an empty result); IngestError naming ``where``
    for a region that is not one ``choices`` value of a class of ``target``."""
    if not isinstance(result, list):
        raise IngestError(f"{where}: 'result' must be a list of regions")
    values = []
    for region in result:
        if not isinstance(region, dict):
            raise IngestError(f"{where}: each region of 'result' must be an object")
        kind = region.get("type")
        if kind != "choices":
            hint = " (a span control, <Labels>)" if kind == "labels" else ""
            raise IngestError(f"{where}: a {kind!r} result{hint}; only a Choices classification "
                              "(<Choices>, type 'choices') can be imported")
        chosen = (region.get("value") or {}).get("choices") if isinstance(region.get("value"), dict) else None
        if not isinstance(chosen, list) or len(chosen) != 1:
            raise IngestError(f"{where}: a choices result must hold exactly one choice, got {chosen!r}")
        values.append(chosen[0])
    if not values:
        return None
    if len(values) > 1:
        raise IngestError(f"{where}: several choices results; one class per task can be imported")
    value = values[0]
    try:
        return target.parse_class(value.strip() if isinstance(value, str) else value)
    except ValueError as exc:
        raise IngestError(f"{where}: class {exc}") from None


def _image(value: Any, where: str) -> bytes:
    if not isinstance(value, str) or not value.startswith("data:"):
        raise IngestError(f"{where}: data.image must be an inline data:image/...;base64, URI (a link to "
                          "Label Studio's storage is not fetched; upload the images as a ZIP instead)")
    head, _, body = value.partition(",")
    if not head.endswith(";base64"):
        raise IngestError(f"{where}: data.image must be base64-encoded")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise IngestError(f"{where}: data.image is not valid base64") from None


def task_record(target: Target, index: int, task: Any) -> Record:
    """The record of one task of an export; IngestError naming the task when it is bad."""
    where = task_where(index, task)
    if not isinstance(task, dict):
        raise IngestError(f"{where}: expected a task object, got {type(task).__name__}")
    data = task.get("data")
    if not isinstance(data, dict):
        raise IngestError(f"{where}: no 'data' object")
    keys = CONTENT_KEYS.get(target.item_kind)
    if keys is None:
        raise IngestError(f"Label Studio tasks hold text, URLs or images, not {target.item_kind} items")
    key = next((k for k in keys if k in data), None)
    if key is None:
        raise IngestError(f"{where}: no {' or '.join('data.' + k for k in keys)}")
    opinions = []
    for n, annotation in enumerate(task.get("annotations") or []):
        if not isinstance(annotation, dict):
            raise IngestError(f"{where}, annotation {n}: expected an object")
        if annotation.get("was_cancelled"):
            continue
        value = choice_of(target, annotation.get("result", []), f"{where}, annotation {n}")
        if value is not None:
            opinions.append((value, annotator_name(annotation)))
    for n, prediction in enumerate(task.get("predictions") or []):
        if isinstance(prediction, int) and not isinstance(prediction, bool):
            continue  # a prediction's id: Label Studio's "Export -> JSON" gives no more of it
        if not isinstance(prediction, dict):
            raise IngestError(f"{where}, prediction {n}: expected an object or a prediction id, "
                              f"got {type(prediction).__name__}")
        choice_of(target, prediction.get("result", []), f"{where}, prediction {n}")
    content = data[key]
    if target.item_kind == "image":
        name = data.get("filename", f"task-{index}")
        return Record(where, _image(content, where), filename=checked_filename(name, where),
                      opinions=tuple(opinions))
    if not isinstance(content, str) or not content.strip():
        raise IngestError(f"{where}: data.{key} must be a non-empty string")
    problem = text_problem(content)
    if problem:
        raise IngestError(f"{where}: data.{key} {problem}")
    return Record(where, content, opinions=tuple(opinions))


def iter_label_studio(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a Label Studio JSON export read from ``fh`` (module docstring)."""
    raw = fh.read(MAX_JSON_BYTES + 1)
    if len(raw) > MAX_JSON_BYTES:
        raise IngestError(f"a Label Studio export is read whole: at most {MAX_JSON_BYTES} bytes")
    try:
        tasks = parse_json(raw.removeprefix(BOM), "the Label Studio export")
    except ValueError as exc:
        raise IngestError(str(exc)) from None
    if isinstance(tasks, dict):
        tasks = [tasks]
    if not isinstance(tasks, list):
        raise IngestError("a Label Studio export is a JSON list of tasks")
    for index, task in enumerate(tasks):
        yield task_record(target, index, task)
