"""The dataset export (docs/dataset.md): every item of a project, one row each, with its final
label and where that label came from, as CSV, JSON Lines or Parquet.

Provenance of the final label (:func:`provenance_case`, one SQL definition that the item browser
filters on too; :func:`provenance` reads the label it names):

* ``human``: the item's primary label (an annotator's; or its consensus, ``method`` = majority,
  dawid-skene, adjudication (a reviewer) or relabel (an admin, ``drawn`` False), with the
  standing ``opinions``);
* ``honeypot``: an item served as a honeypot: its known gold class;
* ``audited``: an item the model decided alone that a reviewer audited: the reviewer's class;
* ``model``: decided without a query: the model's prediction (``model_version``, ``score``,
  ``query_prob``);
* ``disputed``: an overlapped item whose opinions are all in without a strict majority
  (:func:`.consensus.disputed_q`), under majority vote: no label until a reviewer decides (its
  ``opinions`` say who said what; under Dawid-Skene such an item has Dawid-Skene's class, ``human``);
* ``waiting``: queried, no final label yet (in the queue); ``pending``: not decided.

Every decided item also gets ``probability``, the calibrated probability that its prediction is
right, and ``probabilities``, that confidence spread over the classes (:class:`Calibration`: a
Platt fit of the decision-time ``|score|`` on the project's query-drawn labels, each weighted by
``1/q``, fitted once per export before the first row).

Streamed: items are read a page of :data:`PAGE` at a time by keyset over ``(project, seq)``
(the ``one_seq_per_project`` index), each page with one query per related table for its ids
only, so memory does not grow with the project. The CSV neutralises formula injection exactly
as the other exports (:func:`.export.spreadsheet_safe`); the JSONL keeps every value exactly;
the Parquet file writes one row group per page with classes, opinions and vectors as JSON text
(a class may be a string or an integer, which one Parquet column cannot hold).
"""

from __future__ import annotations

import csv
import io
import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import numpy as np
from django.db.models import Case, Exists, OuterRef, Q, Value, When
from django.db.models.functions import Abs
from django.utils.dateparse import parse_datetime

from annotator.labelling.models import Consensus, Honeypot, Item, Label, Project, Review
from annotator.labelling.teams.consensus import RELABEL, disputed_q
from learners.label_errors import platt_fit, spread, top_probability

from .export import spreadsheet_safe

#: items read per query (and per Parquet row group)
PAGE = 2000
PROVENANCES = ("human", "model", "audited", "honeypot", "disputed", "waiting", "pending")
FORMATS = ("csv", "jsonl", "parquet")
FIELDS = ("id", "seq", "item", "label", "provenance", "labelled_at", "annotator", "method", "drawn",
          "opinions", "reviewer", "prediction", "score", "probability", "probabilities", "query_prob",
          "queried", "model_version", "decided_at", "gold", "status")
#: the query keys :func:`parse_filters` takes (anything else is refused)
FILTER_KEYS = ("provenance", "class", "min_confidence", "max_confidence", "min_probability",
               "max_probability", "since", "until")
#: keys a caller may send beside the filters (the format)
OTHER_KEYS = ("format",)


@dataclass
class Filters:
    """What rows to export. ``provenance``: allowed provenances (empty: all); ``classes``: allowed
    final labels (empty: all); ``min_confidence`` / ``max_confidence``: bounds on ``|score|``
    (items not decided have none and are left out by either); ``min_probability`` /
    ``max_probability``: bounds on the calibrated ``probability`` (items without one are left out
    by either); ``since`` / ``until``: bounds on ``labelled_at`` (when the final label was set;
    items without one are left out by either)."""

    provenance: set[str] = field(default_factory=set)
    classes: list[Any] = field(default_factory=list)
    min_confidence: float | None = None
    max_confidence: float | None = None
    min_probability: float | None = None
    max_probability: float | None = None
    since: datetime | None = None
    until: datetime | None = None

    def keeps(self, row: Mapping[str, Any]) -> bool:
        """Whether the finished ``row`` passes the filters decided in Python."""
        if self.classes and (row["label"] is None or not any(row["label"] == c for c in self.classes)):
            return False
        return (_within(row["probability"], self.min_probability, self.max_probability)
                and _within(row["labelled_at"], self.since, self.until))

    def item_q(self) -> Q:
        """The filters decided by the database, on the item rows."""
        q = provenance_q(self.provenance) if self.provenance else Q()
        if self.min_confidence is not None:
            q &= Q(confidence__gte=self.min_confidence)
        if self.max_confidence is not None:
            q &= Q(confidence__lte=self.max_confidence)
        return q


def _within(value: Any, low: Any, high: Any) -> bool:
    """Whether ``value`` lies in ``[low, high]`` (a None bound: open); a None ``value`` passes only
    when both bounds are None."""
    if low is None and high is None:
        return True
    return value is not None and (low is None or value >= low) and (high is None or value <= high)


def _number(key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number, not {text!r}") from None
    if not value >= 0:
        raise ValueError(f"{key} must be 0 or more")
    if key.endswith("_probability") and value > 1:
        raise ValueError(f"{key} must be 1 or less")
    return value


def _time(key: str, text: str) -> datetime:
    try:
        when = parse_datetime(text)
    except ValueError:
        when = None
    if when is None:
        raise ValueError(f"{key} must be an ISO 8601 time such as 2026-01-31T12:00:00+00:00, not {text!r}")
    if when.tzinfo is None:
        raise ValueError(f"{key} must name its time zone (e.g. +00:00 or Z)")
    return when


def parse_filters(project: Project, query: Mapping[str, str], extra: Iterable[str] = OTHER_KEYS) -> Filters:
    """The :class:`Filters` of a query (``?provenance=human,model&class=spam&min_confidence=0.5
    &since=2026-01-01T00:00Z``; lists comma-separated). ValueError naming the key for an unknown
    key (other than ``extra``), provenance or class, a bad number or time."""
    unknown = sorted(k for k in query if k not in FILTER_KEYS and k not in extra)
    if unknown:
        raise ValueError(f"unknown filter {unknown[0]!r}; the filters are {', '.join(FILTER_KEYS)}")
    found = Filters()
    for key, text in query.items():
        if key not in FILTER_KEYS or text == "":
            continue
        if key == "provenance":
            found.provenance = {p.strip() for p in text.split(",") if p.strip()}
            wrong = sorted(found.provenance - set(PROVENANCES))
            if wrong:
                raise ValueError(f"unknown provenance {wrong[0]!r}; one of {', '.join(PROVENANCES)}")
        elif key == "class":
            found.classes = [project.parse_class(c.strip()) for c in text.split(",") if c.strip()]
        elif key in ("min_confidence", "max_confidence", "min_probability", "max_probability"):
            setattr(found, key, _number(key, text))
        else:
            setattr(found, key, _time(key, text))
    return found


def _content(project: Project, text: str, filename: str, pairs: Any) -> Any:
    """The item as exported: text or URL, image file name, or ``[[index, value], ...]``."""
    if project.item_kind == Project.Kind.IMAGE:
        return filename
    if project.item_kind == Project.Kind.VECTORS:
        return pairs
    return text


def provenance_rules() -> list[tuple[str, Q]]:
    """The provenance of an item's final label (module docstring) as ``(name, condition)`` in
    order: the first condition an item meets names it. A primary label makes it ``human``; else
    not decided ``pending``; a honeypot with a gold class ``honeypot``; a decided audit
    ``audited``; decided without a query ``model``; a disputed consensus ``disputed``; else
    ``waiting``. Each ``EXISTS`` goes by an index of the item's id (labels, honeypots, reviews;
    the consensus is keyed by it)."""
    item = OuterRef("pk")
    return [
        ("human", Q(Exists(Label.objects.filter(item=item, primary=True)))),
        ("pending", Q(status=Item.Status.PENDING)),
        ("honeypot", Q(Exists(Honeypot.objects.filter(item=item))) & Q(gold__isnull=False)),
        ("audited", Q(Exists(Review.objects.filter(item=item, reason=Review.Reason.AUDIT,
                                                   decided_at__isnull=False)))),
        ("model", Q(status=Item.Status.AUTO)),
        ("disputed", Q(Exists(Consensus.objects.filter(disputed_q(), item=item)))),
        ("waiting", Q()),
    ]


def provenance_case() -> Case:
    """SQL: the provenance of an item (:func:`provenance_rules`) as one ``CASE``."""
    *rules, (last, _) = provenance_rules()
    return Case(*(When(cond, then=Value(name)) for name, cond in rules), default=Value(last))


def provenance_q(wanted: Iterable[str]) -> Q:
    """SQL: the items whose provenance is one of ``wanted``, as plain conditions (its rule and
    the negation of every earlier one) rather than a test of :func:`provenance_case`, so that the
    database can start from the few items a rare provenance has (an index of the table its
    ``EXISTS`` reads) instead of walking every item."""
    found, earlier = Q(pk__in=[]), Q()
    for name, cond in provenance_rules():
        if name in wanted:
            found |= cond & ~earlier if earlier else cond
        earlier = earlier | cond if earlier else cond
    return found


def annotated_items(project: Project) -> Any:
    """The project's items with ``provenance`` (:func:`provenance_case`) and ``confidence``
    (``|score|``, None until decided) annotated: what the export and the item browser filter."""
    return Item.objects.filter(project=project).annotate(provenance=provenance_case(),
                                                         confidence=Abs("score"))


ITEM_COLUMNS = ("id", "seq", "status", "text", "filename", "vector_pairs", "gold", "prediction", "score",
                "query_prob", "queried", "model_version", "decided_at", "overlap_k", "provenance")


def _pages(project: Project, filters: Filters, after: int = -1) -> Iterator[list[dict[str, Any]]]:
    """The item rows with ``seq > after`` passing the database filters, :data:`PAGE` at a time in
    ``seq`` order (keyset: each query starts after the last ``seq`` of the one before)."""
    items = annotated_items(project).filter(filters.item_q())
    while True:
        page = list(items.filter(seq__gt=after).order_by("seq").values(*ITEM_COLUMNS)[:PAGE])
        if not page:
            return
        yield page
        after = page[-1]["seq"]


def related_rows(items: list[dict[str, Any]]) -> dict[str, Any]:
    """For the item rows ``items`` (of :data:`ITEM_COLUMNS`; at most one query per table, each for
    the few items whose provenance needs it): the primary labels and consensuses of the ``human``
    ones, the decided audits of the ``audited`` ones, and the standing opinions of the overlapped
    ones and of those with a consensus."""
    human = [r["id"] for r in items if r["provenance"] == "human"]
    audited = [r["id"] for r in items if r["provenance"] == "audited"]
    primary = {i: (v, at, who, drawn) for i, v, at, who, drawn in Label.objects.filter(
        item_id__in=human, primary=True).values_list("item_id", "value", "created", "annotator__username",
                                                     "drawn")} if human else {}
    agreed = {i: (m, who) for i, m, who in Consensus.objects.filter(item_id__in=human).values_list(
        "item_id", "method", "decided_by__username")} if human else {}
    audits = {i: (v, at, who) for i, v, at, who in Review.objects.filter(
        item_id__in=audited, reason=Review.Reason.AUDIT, decided_at__isnull=False).values_list(
        "item_id", "value", "decided_at", "decided_by__username")} if audited else {}
    opinions: dict[int, list[list[Any]]] = {}
    wanted = sorted({r["id"] for r in items if r["overlap_k"] > 1 and r["provenance"] != "pending"}
                    | set(agreed))
    if wanted:
        for i, who, v in (Label.objects.filter(item_id__in=wanted, undone_at__isnull=True,
                                               kind=Label.Kind.OPINION, drawn=True)
                          .order_by("id").values_list("item_id", "annotator__username", "value")):
            opinions.setdefault(i, []).append([who, v])
    return {"primary": primary, "consensus": agreed, "audits": audits, "opinions": opinions}


def provenance(item: Mapping[str, Any], related: Mapping[str, Any]) -> dict[str, Any]:
    """The final label of ``item`` (a row of :data:`ITEM_COLUMNS`) and where it came from (module
    docstring): ``{"label", "provenance", "labelled_at", "annotator", "method", "drawn",
    "opinions", "reviewer"}``, None where it does not apply."""
    pk, source = item["id"], item["provenance"]
    out: dict[str, Any] = {"label": None, "provenance": source, "labelled_at": None, "annotator": None,
                           "method": None, "drawn": None, "opinions": related["opinions"].get(pk),
                           "reviewer": None}
    if source == "human" and pk in related["primary"]:
        value, at, who, drawn = related["primary"][pk]
        method, by = related["consensus"].get(pk, (None, None))
        out.update(label=value, labelled_at=at, annotator=who, drawn=drawn,
                   method=method or None, reviewer=by if method != RELABEL else None)
    elif source == "honeypot":
        out.update(label=item["gold"], labelled_at=item["decided_at"])
    elif source == "audited" and pk in related["audits"]:
        value, at, who = related["audits"][pk]
        out.update(label=value, labelled_at=at, reviewer=who)
    elif source == "model":
        out.update(label=item["prediction"], labelled_at=item["decided_at"])
    return out


#: the fewest labels a project's calibration is fitted on (and among them at least one right and
#: one wrong prediction); with fewer, ``probability`` and ``probabilities`` are null
MIN_CALIBRATION_LABELS = 20


@dataclass(frozen=True)
class Calibration:
    """P(the model's prediction is right | ``|score|``) for one export (docs/dataset.md, "Class
    probabilities"): ``fit``, the ``(a, b)`` of :func:`learners.label_errors.platt_fit` (None:
    fewer than :data:`MIN_CALIBRATION_LABELS` labels, or only right or only wrong predictions
    among them); ``classes``: the project's classes."""

    fit: tuple[float, float] | None
    classes: tuple[Any, ...]

    def page(self, items: Sequence[Mapping[str, Any]]) -> dict[int, tuple[float, dict[str, float] | None]]:
        """For the decided ones of ``items`` (rows of :data:`ITEM_COLUMNS`): ``{id: (probability,
        {str(class): p} over the classes, or None when the prediction is no longer one of them)}``;
        empty without a fit. One numpy pass per page."""
        decided = [r for r in items if r["score"] is not None and r["prediction"] is not None]
        if self.fit is None or not decided:
            return {}
        code = {repr(c): j for j, c in enumerate(self.classes)}
        top = top_probability(self.fit, np.array([r["score"] for r in decided], dtype=float))
        known = [j for j, r in enumerate(decided) if repr(r["prediction"]) in code]
        pred = np.array([code[repr(decided[j]["prediction"])] for j in known], dtype=np.int64)
        keys = [str(c) for c in self.classes]
        spreads = {j: dict(zip(keys, map(float, ps), strict=True))
                   for j, ps in zip(known, spread(pred, top[known], len(keys)), strict=True)}
        return {r["id"]: (float(top[j]), spreads.get(j)) for j, r in enumerate(decided)}


def calibration(project: Project) -> Calibration:
    """The project's :class:`Calibration`, from one query over its labels: the primary labels
    drawn by the query rule (an admin's relabel is not: docs/dataset.md) of queried items with a
    positive ``q`` and a logged score, each weighted by ``1/q`` (the sample of the importance-weighted
    estimates, docs/estimates.md). Each score was logged before its label was learnt: the fit is
    out of sample. The labels are read in chunks into three typed arrays (17 bytes a label)."""
    labels = Label.objects.filter(project=project, primary=True, drawn=True, undone_at__isnull=True,
                                  item__queried=True, item__query_prob__gt=0, item__score__isnull=False)
    right, score, q = array("b"), array("d"), array("d")
    rows = cast(Iterator[tuple[Any, Any, float, float]], labels.values_list(  # not null: filtered above
        "value", "item__prediction", "item__score", "item__query_prob").iterator(chunk_size=PAGE))
    for value, prediction, s, prob in rows:
        right.append(value == prediction)
        score.append(abs(s))
        q.append(prob)
    agree = np.frombuffer(right, dtype=np.int8).astype(bool)
    classes = tuple(project.classes)
    if len(agree) < MIN_CALIBRATION_LABELS or agree.all() or not agree.any():
        return Calibration(None, classes)
    return Calibration(platt_fit(np.frombuffer(score), agree, 1.0 / np.frombuffer(q)), classes)


def dataset_rows(project: Project, filters: Filters | None = None) -> Iterator[dict[str, Any]]:
    """Every item of ``project`` passing ``filters``, in ``seq`` order, as dicts of :data:`FIELDS`
    (times as ``datetime``; :func:`jsonable` turns a row into JSON values). The calibration is
    fitted once (:func:`calibration`) before the first page is read."""
    filters = filters or Filters()
    calibrated = calibration(project)
    for page in _pages(project, filters):
        related = related_rows(page)
        probabilities = calibrated.page(page)
        for item in page:
            p, spread_over = probabilities.get(item["id"], (None, None))
            row = {"id": item["id"], "seq": item["seq"],
                   "item": _content(project, item["text"], item["filename"], item["vector_pairs"]),
                   **provenance(item, related),
                   **{k: item[k] for k in ("prediction", "score", "query_prob", "queried", "model_version",
                                           "decided_at", "gold", "status")},
                   "probability": p, "probabilities": spread_over}
            if filters.keeps(row):
                yield row


def jsonable(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with its times in ISO 8601 (the JSONL and API form)."""
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}


def _cell(value: Any) -> Any:
    """A CSV or Parquet text cell: lists (opinions, vectors) as JSON, None as empty."""
    if isinstance(value, list | dict):
        return json.dumps(value)
    return value


def dataset_csv(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """CSV of ``rows`` (header first) with :func:`.export.spreadsheet_safe` cells, a page of lines
    per chunk."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS)
    writer.writeheader()
    for n, row in enumerate(rows, 1):
        writer.writerow({k: spreadsheet_safe(_cell(v)) for k, v in jsonable(row).items()})
        if n % PAGE == 0:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def dataset_jsonl(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """JSON Lines of ``rows`` (values exactly as stored, times ISO 8601), a page per chunk."""
    lines: list[str] = []
    for row in rows:
        lines.append(json.dumps(jsonable(row)) + "\n")
        if len(lines) >= PAGE:
            yield "".join(lines)
            lines = []
    yield "".join(lines)


class ParquetSink(io.RawIOBase):
    """A write-only file that keeps what was written until :meth:`take` (the Parquet stream)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


def _parquet_schema() -> Any:
    import pyarrow as pa

    text, number, integer = pa.string(), pa.float64(), pa.int64()
    types = {"id": integer, "seq": integer, "score": number, "probability": number, "query_prob": number,
             "queried": pa.bool_(), "model_version": integer, "drawn": pa.bool_(),
             "labelled_at": pa.timestamp("us", tz="UTC"), "decided_at": pa.timestamp("us", tz="UTC")}
    return pa.schema([(f, types.get(f, text)) for f in FIELDS])


#: text columns holding a class value, a list or a mapping: JSON in Parquet (module docstring);
#: ``item`` is JSON only for vectors (a text, URL or file name stays plain text)
JSON_COLUMNS = ("label", "prediction", "gold", "opinions", "probabilities")


def _parquet_cell(name: str, value: Any) -> Any:
    """``value`` of column ``name`` as the Parquet schema holds it."""
    if value is None:
        return None
    if name in JSON_COLUMNS or (name == "item" and not isinstance(value, str)):
        return json.dumps(value)
    return value


def parquet_chunks(rows: Iterable[Mapping[str, Any]], schema: Any,
                   columns: Callable[[list[Mapping[str, Any]]], dict[str, list[Any]]]) -> Iterator[bytes]:
    """A Parquet file of ``rows`` with ``schema``, a row group per :data:`PAGE` rows (``columns``
    turns a page of rows into the row group's columns), yielded as it is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = ParquetSink()
    writer = pq.ParquetWriter(sink, schema)
    batch: list[Mapping[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= PAGE:
            writer.write_table(pa.table(columns(batch), schema=schema))
            batch = []
            yield sink.take()
    if batch:
        writer.write_table(pa.table(columns(batch), schema=schema))
    writer.close()
    yield sink.take()


def dataset_parquet(rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """A Parquet file of ``rows`` (schema :func:`_parquet_schema`), a row group per :data:`PAGE`
    rows, yielded as it is written. Text items stay text in ``item``; the class columns, the
    opinions and vectors hold JSON (``"spam"``, ``3``, ``[[0, 1.5]]``)."""
    return parquet_chunks(rows, _parquet_schema(),
                          lambda batch: {f: [_parquet_cell(f, r[f]) for r in batch] for f in FIELDS})


def dataset_stream(project: Project, fmt: str, filters: Filters | None = None) -> Iterator[Any]:
    """The export of :func:`dataset_rows` in ``fmt`` (one of :data:`FORMATS`; ValueError otherwise):
    chunks of text (csv, jsonl) or bytes (parquet)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    rows = dataset_rows(project, filters)
    if fmt == "csv":
        return dataset_csv(rows)
    if fmt == "jsonl":
        return dataset_jsonl(rows)
    return dataset_parquet(rows)


CONTENT_TYPES = {"csv": "text/csv", "jsonl": "application/jsonl",
                 "parquet": "application/vnd.apache.parquet"}
