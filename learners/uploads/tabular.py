"""CSV and JSONL uploads of text or URL items (shared by the app's ingest and the replay).

CSV: UTF-8 with a header row, its cells separated by commas, tabs or semicolons (the first of
these, by count in the header line, that makes a header with a content column; a ``.tsv`` file is
read the same way). The content column is ``text`` for text projects and ``url``
for URL projects (``text`` is accepted for URL projects too); an optional ``label`` or
``gold`` column gives the known class (empty cell = unknown); the other columns are ignored and
each record names them (:mod:`.columns`, the one definition of these rules). Errors name the
file line (the header is line 1).

JSONL: one JSON object per line with the same keys; blank lines are ignored. A line that is a
Prodigy task (it has ``answer``, ``accept``, ``options``, ``_input_hash``, ``_task_hash`` or
``image``) is read by Prodigy's rules instead (:mod:`.prodigy`).

Both are read as a stream (:func:`iter_csv`, :func:`iter_jsonl`): a line at a time from a binary
file, so memory does not grow with the file.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from typing import Any, BinaryIO

from .columns import CONTENT_COLUMNS, GOLD_KEYS, Columns, pick
from .input_rules import parse_json
from .lines import text_lines
from .prodigy import is_prodigy, prodigy_record
from .records import IngestError, Record, Target, gold_of, record_text

__all__ = ["GOLD_KEYS", "content_keys", "iter_csv", "iter_jsonl", "row_record", "sniff_delimiter"]

#: the cell separators a CSV upload may use (tab-separated files are common exports of spreadsheets)
DELIMITERS = (",", "\t", ";")
DELIMITER_NAMES = {",": "commas", "\t": "tabs", ";": "semicolons"}


def content_keys(kind: str) -> tuple[str, ...]:
    """Accepted names of the content column for a project's item kind."""
    if kind in ("text", "url"):
        return CONTENT_COLUMNS[kind]
    raise IngestError(f"CSV and JSONL uploads hold text or URLs, not {kind} items")


def row_record(target: Target, row: dict[str, Any], where: str, columns: Columns | None = None) -> Record:
    """The record of one CSV row / JSON object of a text or URL project, reading ``columns``
    (default: :func:`.columns.pick` of the row's keys); IngestError if bad."""
    keys = content_keys(target.item_kind)
    columns = pick(target.item_kind, row) if columns is None else columns
    if columns.content is None:
        raise IngestError(f"{where}: no {' or '.join(repr(k) for k in keys)} field")
    content = record_text(row[columns.content], columns.content, where)
    gold = gold_of(target, row[columns.gold], where) if columns.gold else None
    return Record(where, content, gold, ignored=columns.ignored)


def _header(line: str, delimiter: str) -> list[str]:
    return [h.strip().lower() for h in next(csv.reader([line], delimiter=delimiter), [])]


def sniff_delimiter(line: str, keys: tuple[str, ...]) -> str | None:
    """The separator of the header ``line`` (:data:`DELIMITERS`, most frequent first) whose cells
    include one of the content column names ``keys``; None when none does."""
    for delimiter in sorted(DELIMITERS, key=lambda d: -line.count(d)):
        if any(k in _header(line, delimiter) for k in keys):
            return delimiter
    return None


def iter_csv(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a CSV upload read from ``fh`` (module docstring); IngestError on the first bad line."""
    keys = content_keys(target.item_kind)
    lines = (line for _, line in text_lines(fh))
    first = next(lines, None)
    if first is None:
        raise IngestError("the file is empty")
    delimiter = sniff_delimiter(first, keys)
    if delimiter is None:
        tried = ", ".join(DELIMITER_NAMES[d] for d in DELIMITERS)
        cells = _header(first, max(DELIMITERS, key=first.count))
        raise IngestError(f"line 1: the header needs a {' or '.join(repr(k) for k in keys)} column "
                          f"(found {cells[:8]}; cells separated by {tried} were tried)")
    reader = csv.reader(itertools.chain([first], lines), delimiter=delimiter)
    try:
        header = [h.strip().lower() for h in next(reader)]
    except csv.Error as exc:
        raise IngestError(f"line 1: {exc}") from None
    twice = sorted({h for h in header if header.count(h) > 1 and h})
    if twice:  # one of the two columns would be dropped without a word
        raise IngestError(f"line 1: the header names {', '.join(repr(h) for h in twice)} twice")
    columns = pick(target.item_kind, header)
    try:
        for cells in reader:
            where = f"line {reader.line_num}"
            if not cells:
                continue
            if len(cells) != len(header):
                raise IngestError(f"{where}: {len(cells)} fields, the header has {len(header)} "
                                  f"(separated by {DELIMITER_NAMES[delimiter]})")
            yield row_record(target, dict(zip(header, cells, strict=True)), where, columns)
    except csv.Error as exc:
        raise IngestError(f"line {reader.line_num}: {exc}") from None


def iter_jsonl(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a JSONL upload read from ``fh`` (module docstring); IngestError on the first bad line.
    An image project's lines must be Prodigy tasks (their images as ``data:`` URIs)."""
    images = target.item_kind == "image"
    if not images:
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
        if is_prodigy(row):
            yield prodigy_record(target, row, where)
        elif images:
            raise IngestError(f"{where}: an image project's JSONL lines are Prodigy tasks with an 'image' "
                              "data: URI")
        else:
            yield row_record(target, {k.lower(): v for k, v in row.items()}, where)
