"""Prodigy's JSONL tasks for text classification, read and written (no Django, no Prodigy).

Reading (a line of a ``.jsonl`` upload is a Prodigy task when it holds one of
:data:`PRODIGY_KEYS`; other lines follow the plain JSONL rules of :mod:`.tabular`):

* the content: ``text`` (text projects; URL projects take ``text`` or ``image``, an image's URL;
  image projects take ``image`` as a ``data:`` URI of the file's bytes in base64, as Prodigy
  shows them, named by ``path``, ``meta.file`` or the line); a line without it is refused with
  its line number, and the whole file with it;
* the class: ``label`` (a binary task: "is this ``label``?") or ``accept`` (the choice interface:
  the ids of the chosen ``options``), read only when ``answer`` is ``accept`` (or absent):

  - ``accept``: the class is ``label``, or the one id in ``accept``; an option id that is not a
    class is matched by the option's ``text``; an empty ``accept`` gives no class; two or more
    ids are refused (a project gives one class per item);
  - ``reject``: no class (a rejected label says which class the item is *not*; Prodigy's binary
    recipes also reject broken input, so the other class is not assumed even with two classes);
  - ``ignore``: no class (the annotator skipped it);

  the item is imported either way: it is still an item of the stream, whose class is unknown;
* ``_input_hash``, ``_task_hash``, ``meta``, ``_session_id`` and other keys are read and dropped
  (the export computes the hashes again from the content, :func:`task_hashes`).

Writing (:func:`task`): one task per label, in the choice interface: ``text`` (or ``image``),
``options`` (every class of the project, ``{"id": class, "text": str(class)}``), ``accept``
(``[class]``), ``answer`` ``"accept"``, ``_input_hash`` / ``_task_hash``, ``_annotator_id``
and ``meta``.

The hashes follow the rule Prodigy documents for ``set_hashes``: the input hash is a MurmurHash
of the task's input keys (:data:`INPUT_HASH_KEYS`), the task hash a MurmurHash of the input hash
with the task keys (:data:`TASK_HASH_KEYS`). Prodigy does not publish its exact serialisation,
so what is hashed is ours (:func:`task_hashes`: MurmurHash3 x86 32-bit, seed 0, signed, of the
JSON of those keys with sorted keys): the same content always gets the same ``_input_hash`` here,
and Prodigy keeps hashes a task already has (``set_hashes`` does not overwrite by default),
but its own hash of the same text may differ.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .records import IngestError, Record, Target, checked_filename, gold_of, record_text

#: keys that make a JSONL line a Prodigy task
PRODIGY_KEYS = ("answer", "accept", "options", "_input_hash", "_task_hash", "image")
ANSWERS = ("accept", "reject", "ignore")
#: the keys of the input hash and of the task hash (Prodigy's defaults, as its docs list them)
INPUT_HASH_KEYS = ("text", "image", "html", "input")
TASK_HASH_KEYS = ("spans", "label", "options", "arcs")


def is_prodigy(row: Mapping[str, Any]) -> bool:
    """True if the JSON object ``row`` is a Prodigy task (:data:`PRODIGY_KEYS`)."""
    return any(k in row for k in PRODIGY_KEYS)


def _image(row: Mapping[str, Any], where: str) -> tuple[bytes, str]:
    """``(bytes, file name)`` of an image task's ``data:`` URI; IngestError naming ``where``."""
    value = row.get("image")
    if not isinstance(value, str) or not value.startswith("data:") or ";base64," not in value:
        raise IngestError(f"{where}: an image project needs 'image' as a data: URI of the image's bytes "
                          "(base64); image URLs are not fetched")
    try:
        data = base64.b64decode(value.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        raise IngestError(f"{where}: 'image' is not valid base64") from None
    meta = row.get("meta")
    name = row.get("path") or (meta.get("file") if isinstance(meta, dict) else None)
    name = name.rsplit("/", 1)[-1] if isinstance(name, str) and name else where.replace(" ", "-")
    return data, checked_filename(name, where)


def _content(target: Target, row: Mapping[str, Any], where: str) -> str:
    keys = ("text", "image") if target.item_kind == "url" else ("text",)
    if target.item_kind not in ("text", "url"):
        raise IngestError(f"{where}: Prodigy tasks are read into text, URL or image projects, not "
                          f"{target.item_kind} ones")
    key = next((k for k in keys if k in row), None)
    if key is None:
        raise IngestError(f"{where}: the Prodigy task has no {' or '.join(repr(k) for k in keys)}")
    return record_text(row[key], key, where)


def _chosen(target: Target, row: Mapping[str, Any], where: str) -> Any:
    """The class the one id in ``accept`` names (or its option's ``text``); None if empty."""
    accept = row["accept"]
    if not isinstance(accept, list):
        raise IngestError(f"{where}: 'accept' must be a list of option ids")
    if not accept:
        return None
    if len(accept) > 1:
        raise IngestError(f"{where}: 'accept' holds {len(accept)} options; a project takes one class "
                          "per item")
    chosen = accept[0]
    try:
        return gold_of(target, chosen, where)
    except IngestError:
        options = row.get("options")
        texts = [o.get("text") for o in options if isinstance(o, dict) and o.get("id") == chosen] \
            if isinstance(options, list) else []
        if not texts or not isinstance(texts[0], str):
            raise
        return gold_of(target, texts[0], where)


def prodigy_record(target: Target, row: Mapping[str, Any], where: str) -> Record:
    """The record of one Prodigy task (module docstring); IngestError naming ``where``."""
    filename = ""
    if target.item_kind == "image":
        content: Any
        content, filename = _image(row, where)
    else:
        content = _content(target, row, where)
    answer = row.get("answer", "accept")
    if answer not in ANSWERS:
        raise IngestError(f"{where}: 'answer' must be one of {', '.join(ANSWERS)}, not {answer!r}")
    gold = None
    if answer == "accept":
        if "accept" in row:
            gold = _chosen(target, row, where)
        elif "label" in row:
            gold = gold_of(target, row["label"], where)
    return Record(where, content, gold, filename=filename)


def murmurhash3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` as a signed int (as ``mmh3.hash`` and spaCy's
    ``murmurhash.hash`` give it)."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed & mask
    n = len(data) - len(data) % 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[n:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def _hash(values: Mapping[str, Any]) -> int:
    return murmurhash3_32(json.dumps(values, sort_keys=True, ensure_ascii=False).encode("utf-8"))


def task_hashes(task: Mapping[str, Any]) -> tuple[int, int]:
    """``(_input_hash, _task_hash)`` of a task (module docstring): the input hash of the
    :data:`INPUT_HASH_KEYS` it has, the task hash of that hash and its :data:`TASK_HASH_KEYS`."""
    input_hash = _hash({k: task[k] for k in INPUT_HASH_KEYS if k in task})
    task_hash = _hash({"_input_hash": input_hash, **{k: task[k] for k in TASK_HASH_KEYS if k in task}})
    return input_hash, task_hash


def data_uri(data: bytes, filename: str = "") -> str:
    """An image's bytes as the ``data:`` URI Prodigy shows (PNG/JPEG/GIF by extension, else
    ``application/octet-stream``)."""
    kinds = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
             "webp": "image/webp", "bmp": "image/bmp"}
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    mime = kinds.get(suffix, "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def task(content: Mapping[str, Any], classes: Sequence[Any], value: Any, annotator: str | None,
         meta: Mapping[str, Any]) -> dict[str, Any]:
    """The Prodigy task of one label: ``content`` is ``{"text": ...}`` or ``{"image": ...}``;
    ``value`` the chosen class (module docstring)."""
    out: dict[str, Any] = dict(content)
    out["options"] = [{"id": c, "text": str(c)} for c in classes]
    out["accept"] = [value]
    out["answer"] = "accept"
    out["_input_hash"], out["_task_hash"] = task_hashes(out)
    if annotator is not None:
        out["_annotator_id"] = annotator
    out["meta"] = dict(meta)
    return out
