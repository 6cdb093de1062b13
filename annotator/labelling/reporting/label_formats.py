"""The labels export in other tools' formats: Prodigy tasks (JSONL) and Parquet.

* :func:`prodigy_lines`: one Prodigy task per standing label (undone ones are left out: an undone
  answer is no answer), in label order, in the choice interface (``options``, ``accept``,
  ``answer`` ``"accept"``, ``_input_hash`` / ``_task_hash``, ``_annotator_id``, ``meta`` with the
  item's id and seq, the label's id, seconds and time, an image's file name as ``file``;
  :mod:`learners.uploads.prodigy`). The
  content is ``text`` (text and URL items) or ``image`` (a ``data:`` URI of the image's bytes);
  vector items have no Prodigy form (ValueError). Several annotators' labels of one item are
  several tasks with one ``_input_hash``, as Prodigy stores them.
* :func:`labels_parquet`: the rows of :func:`.export.label_rows` (:data:`.export.LABEL_FIELDS`:
  the standing labels, or every label with ``undone``; ``kind`` and ``undone_at`` say what each
  is), a row group per :data:`PAGE` labels, written as they are read. The ``label`` column is
  ``int64`` when every class of the project is an integer, else text (``str`` of the class), so
  that pandas or Hugging Face ``datasets`` read plain values.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from annotator.labelling.models import Label, Project
from learners.uploads.prodigy import data_uri, task

from .dataset_export import parquet_chunks
from .export import LABEL_FIELDS, UNDONE_KEY, label_rows, parse_undone, table_csv, table_jsonl

#: labels per chunk of the Prodigy stream (and per Parquet row group: :data:`.dataset_export.PAGE`)
PAGE = 2000
PRODIGY_KINDS = (Project.Kind.TEXT, Project.Kind.URL, Project.Kind.IMAGE)


def prodigy_lines(project: Project) -> Iterator[str]:
    """JSON Lines of the project's standing labels as Prodigy tasks (module docstring); ValueError
    for a vectors project."""
    if project.item_kind not in PRODIGY_KINDS:
        raise ValueError("Prodigy tasks hold texts or images; this project's items are vectors")
    classes = list(project.classes)
    image = project.item_kind == Project.Kind.IMAGE
    labels = (Label.objects.filter(project=project, undone_at__isnull=True).order_by("id")
              .values_list("id", "value", "seconds", "created", "annotator__username", "item_id",
                           "item__seq", "item__text", "item__filename"))
    lines: list[str] = []
    rows = labels.iterator(chunk_size=1000)
    for pk, value, seconds, created, username, item_id, seq, text, filename in rows:
        if image:
            # one query per image label: the bytes are read one image at a time, never a page of them
            data = bytes(Label.objects.filter(pk=pk).values_list("item__data", flat=True).get() or b"")
            content: dict[str, Any] = {"image": data_uri(data, filename)}
        else:
            content = {"text": text}
        meta = {"item_id": item_id, "seq": seq, "label_id": pk, "seconds": seconds,
                "created": created.isoformat()}
        if filename:
            meta["file"] = filename  # where Prodigy's image loader keeps the file name
        lines.append(json.dumps(task(content, classes, value, username, meta), ensure_ascii=False) + "\n")
        if len(lines) >= PAGE:
            yield "".join(lines)
            lines = []
    yield "".join(lines)


def _label_type(project: Project) -> Any:
    import pyarrow as pa

    ints = all(isinstance(c, int) and not isinstance(c, bool) for c in project.classes)
    return pa.int64() if ints else pa.string()


def _schema(project: Project) -> Any:
    import pyarrow as pa

    types = {"item_id": pa.int64(), "seq": pa.int64(), "label": _label_type(project), "seconds": pa.float64(),
             "primary": pa.bool_(), "applied_version": pa.int64(), "created": pa.timestamp("us", tz="UTC"),
             "undone_at": pa.timestamp("us", tz="UTC")}
    return pa.schema([(f, types.get(f, pa.string())) for f in LABEL_FIELDS])


def labels_parquet(project: Project, undone: bool = False) -> Iterator[bytes]:
    """A Parquet file of the project's standing labels (``undone``: every label; module
    docstring), yielded as it is written."""
    import pyarrow as pa
    from django.utils.dateparse import parse_datetime

    schema = _schema(project)
    as_text = pa.types.is_string(schema.field("label").type)

    def columns(batch: list[Mapping[str, Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {f: [r[f] for r in batch] for f in LABEL_FIELDS}
        for when in ("created", "undone_at"):
            out[when] = [None if v is None else parse_datetime(v) for v in out[when]]
        if as_text:
            out["label"] = [None if v is None else str(v) for v in out["label"]]
        return out

    return parquet_chunks(label_rows(project, undone), schema, columns)


#: the labels table's formats (the opinions table: csv and jsonl only)
LABEL_FORMATS = ("csv", "jsonl", "parquet", "prodigy")
CONTENT_TYPES = {"csv": "text/csv", "jsonl": "application/jsonl", "parquet": "application/vnd.apache.parquet",
                 "prodigy": "application/jsonl"}
#: the downloaded file's suffix per format
SUFFIXES = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet", "prodigy": "prodigy.jsonl"}


def table_stream(project: Project, table: str, fmt: str,
                 query: Mapping[str, str] | None = None) -> Iterator[Any]:
    """The export of ``table`` (:data:`.export.TABLES`) in ``fmt``: chunks of text, or bytes for
    Parquet; the labels' ``query`` may ask for the undone labels too (:func:`.export.parse_undone`;
    the opinions always hold them). ValueError for a format the table does not have
    (:data:`LABEL_FORMATS` for the labels; csv and jsonl for the opinions), a bad ``undone``
    value, undone labels asked as Prodigy tasks (an undone answer is no answer) or Prodigy tasks
    of a vectors project."""
    formats = LABEL_FORMATS if table == "labels" else ("csv", "jsonl")
    if fmt not in formats:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(formats)}")
    undone = table == "labels" and parse_undone(query or {})
    if fmt == "csv":
        return table_csv(project, table, undone)
    if fmt == "jsonl":
        return table_jsonl(project, table, undone)
    if fmt == "parquet":
        return labels_parquet(project, undone)
    if undone:
        raise ValueError(f"Prodigy tasks hold the standing labels only: no {UNDONE_KEY}=include")
    if project.item_kind not in PRODIGY_KINDS:  # refused before the stream starts
        raise ValueError("Prodigy tasks hold texts or images; this project's items are vectors")
    return prodigy_lines(project)
