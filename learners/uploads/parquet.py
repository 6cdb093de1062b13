"""Parquet uploads (``.parquet``): one item per row, read a batch at a time.

The content column, by the project's item kind:

* text: ``text``; URL: ``url`` (or ``text``): strings;
* image: ``image``: the file's bytes (binary), or a struct with a ``bytes`` field and an optional
  ``path`` (how Hugging Face ``datasets`` stores its ``Image`` feature); the name is ``path``, else
  a ``filename`` column, else ``row-<n>``;
* vectors: ``vector``: a list of numbers (a dense row, its non-zero entries kept) or a list of
  ``[index, value]`` pairs (0-based, as the JSON API takes them).

An optional ``label`` (or ``gold``) column gives the known class (null: unknown), as in CSV; the
other columns are ignored and each record names them (:mod:`.columns`, the one definition of
these rules). A file without the content column is refused before anything is read, naming the
columns it has.

Memory: only the needed columns are read, :data:`BATCH_ROWS` rows at a time
(``ParquetFile.iter_batches``), with column chunks read through a buffer of :data:`READ_BUFFER`
bytes instead of whole, without pyarrow's pre-buffering (which reads every selected column chunk
of the file at once) and on the calling thread (pyarrow's decoding threads raised the import's
peak resident set by a quarter of a gigabyte for a million texts, measured): memory stays flat in
the file's size and in its row groups' size.
Messages name the row (``row 7``, from 1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .columns import CONTENT_COLUMNS, Columns, pick
from .records import IngestError, Record, Target, checked_filename, gold_of, record_text

#: rows decoded at a time
BATCH_ROWS = 2000
#: bytes read at a time from a column chunk (pyarrow's ``buffer_size``; 0 would read a chunk whole)
READ_BUFFER = 1024 * 1024
__all__ = ["BATCH_ROWS", "CONTENT_COLUMNS", "READ_BUFFER", "iter_parquet"]


def _open(fh: BinaryIO) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # pre_buffer off: pyarrow's default (on) reads every selected column chunk of the file
        # whole before the first batch (measured: one read of the file's size)
        return pq.ParquetFile(fh, buffer_size=READ_BUFFER, pre_buffer=False)
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"not a readable Parquet file ({exc})") from None


def _columns(target: Target, names: list[str]) -> Columns:
    """The columns of the file that ``target`` reads (:func:`.columns.pick`); IngestError naming
    the file's columns when it has no content column."""
    wanted = CONTENT_COLUMNS.get(target.item_kind)
    if wanted is None:
        raise IngestError(f"Parquet uploads hold text, URLs, images or vectors, not {target.item_kind} items")
    columns = pick(target.item_kind, names)
    if columns.content is None:
        raise IngestError(f"the Parquet file has no {' or '.join(repr(k) for k in wanted)} column, which "
                          f"a {target.item_kind} project needs (its columns: {names[:12]})")
    return columns


def _image(value: Any, name: Any, column: str, where: str) -> tuple[bytes, str]:
    if isinstance(value, dict):
        name = value.get("path") or name
        value = value.get("bytes")
    if not isinstance(value, bytes) or not value:
        raise IngestError(f"{where}: {column!r} must hold the image file's bytes")
    return value, checked_filename(name if name else where.replace(" ", "-"), where)


def _vector(value: Any, column: str, where: str) -> list[list[Any]]:
    if not isinstance(value, list):
        raise IngestError(f"{where}: {column!r} must be a list of numbers or of [index, value] pairs")
    if all(isinstance(v, list) and len(v) == 2 for v in value):
        pairs = value
    elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        pairs = [[i, float(v)] for i, v in enumerate(value) if v]
    else:
        raise IngestError(f"{where}: {column!r} must be a list of numbers or of [index, value] pairs")
    for i, v in pairs:
        if not isinstance(i, int | float) or isinstance(i, bool) or int(i) != i or i < 0 \
                or not isinstance(v, int | float) or isinstance(v, bool):
            raise IngestError(f"{where}: {column!r} holds a bad pair [{i!r}, {v!r}]")
    return [[int(i), float(v)] for i, v in pairs]


def iter_parquet(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a Parquet upload read from the seekable ``fh`` (module docstring); IngestError
    on a missing column or the first bad row."""
    import pyarrow as pa

    pf = _open(fh)
    columns = _columns(target, list(pf.schema_arrow.names))
    content, gold, filename, ignored = columns.content, columns.gold, columns.filename, columns.ignored
    assert content is not None  # _columns refuses a file without it
    wanted = [c for c in (content, gold, filename) if c is not None]
    number = 0
    try:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False):
            values = batch.column(content).to_pylist()
            golds = batch.column(gold).to_pylist() if gold else [None] * len(values)
            names = batch.column(filename).to_pylist() if filename else [None] * len(values)
            for value, label, name in zip(values, golds, names, strict=True):
                number += 1
                where = f"row {number}"
                if target.item_kind == "image":
                    data, file = _image(value, name, content, where)
                    yield Record(where, data, gold_of(target, label, where), filename=file, ignored=ignored)
                elif target.item_kind == "vectors":
                    yield Record(where, _vector(value, content, where), gold_of(target, label, where),
                                 ignored=ignored)
                else:
                    yield Record(where, record_text(value, content, where), gold_of(target, label, where),
                                 ignored=ignored)
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"row {number + 1}: the Parquet file cannot be read ({exc})") from None
