"""CSV and JSONL uploads of text or URL items (shared by the app's ingest and the replay).

CSV: UTF-8 with a header row. The content column is ``text`` for text projects and ``url``
for URL projects (``text`` is accepted for URL projects too); an optional ``label`` or
``gold`` column gives the known class (empty cell = unknown). Errors name the file line
(the header is line 1).

JSONL: one JSON object per line with the same keys; blank lines are ignored.

Both are read as a stream (:func:`iter_csv`, :func:`iter_jsonl`): a line at a time from a binary
file, so memory does not grow with the file (issue 18).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any, BinaryIO

from .input_rules import parse_json, text_problem
from .lines import text_lines
from .records import IngestError, Record, Target, gold_of

GOLD_KEYS = ("label", "gold")


def content_keys(kind: str) -> tuple[str, ...]:
    """Accepted names of the content column for a project's item kind."""
    if kind == "text":
        return ("text",)
    if kind == "url":
        return ("url", "text")
    raise IngestError(f"CSV and JSONL uploads hold text or URLs, not {kind} items")


def row_record(target: Target, row: dict[str, Any], where: str) -> Record:
    """The record of one CSV row / JSON object of a text or URL project; IngestError if bad."""
    keys = content_keys(target.item_kind)
    key = next((k for k in keys if k in row), None)
    if key is None:
        raise IngestError(f"{where}: no {' or '.join(repr(k) for k in keys)} field")
    content = row[key]
    if not isinstance(content, str) or not content.strip():
        raise IngestError(f"{where}: {key!r} must be a non-empty string")
    problem = text_problem(content)
    if problem:
        raise IngestError(f"{where}: {key!r} {problem}")
    gold_key = next((k for k in GOLD_KEYS if k in row), None)
    gold = gold_of(target, row[gold_key], where) if gold_key else None
    return Record(where, content, gold)


def iter_csv(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a CSV upload read from ``fh`` (module docstring); IngestError on the first bad line."""
    keys = content_keys(target.item_kind)
    reader = csv.reader(line for _, line in text_lines(fh))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise IngestError("the file is empty") from None
    except csv.Error as exc:
        raise IngestError(f"line 1: {exc}") from None
    if not any(k in header for k in keys):
        raise IngestError(f"line 1: the header needs a {' or '.join(repr(k) for k in keys)} column "
                          f"(found {header})")
    twice = sorted({h for h in header if header.count(h) > 1 and h})
    if twice:  # one of the two columns would be dropped without a word
        raise IngestError(f"line 1: the header names {', '.join(repr(h) for h in twice)} twice")
    try:
        for cells in reader:
            where = f"line {reader.line_num}"
            if not cells:
                continue
            if len(cells) != len(header):
                raise IngestError(f"{where}: {len(cells)} fields, the header has {len(header)}")
            yield row_record(target, dict(zip(header, cells, strict=True)), where)
    except csv.Error as exc:
        raise IngestError(f"line {reader.line_num}: {exc}") from None


def iter_jsonl(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a JSONL upload read from ``fh`` (module docstring); IngestError on the first bad line."""
    content_keys(target.item_kind)
    for number, line in text_lines(fh):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            row = parse_json(line, where)
        except ValueError as exc:
            raise IngestError(str(exc)) from None
        if not isinstance(row, dict):
            raise IngestError(f"{where}: expected a JSON object, got {type(row).__name__}")
        yield row_record(target, {k.lower(): v for k, v in row.items()}, where)
