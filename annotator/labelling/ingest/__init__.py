"""Ingestion: records in, pending items out, at the database's speed (COPY on PostgreSQL).

* :func:`import_records` (the JSON API, the demo, the command line): records already in
  memory, all-or-nothing: every record is featurized before the first row is written, in one
  transaction, so a malformed one (the error names it) leaves the project unchanged.
* :func:`run_job` (an uploaded file, :class:`..models.ImportJob`): streamed, two passes over
  the stored file (:mod:`.upload_file`), memory flat in its size.

The formats are parsed by :mod:`learners.uploads` (Django-free, shared with the replay CLI),
which picks the parser from the file name.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import timedelta
from itertools import islice
from typing import Any

from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from annotator.labelling.engine import jobs
from annotator.labelling.engine.faults import hold_point
from annotator.labelling.engine.stored_vectors import encode_rows
from annotator.labelling.engine.table_stats import after_commit
from annotator.labelling.models import ImportJob, Item, Project
from annotator.labelling.webhooks import events
from learners import uploads
from learners.uploads import (
    IngestError,
    Record,
    featurize_chunks,
    featurize_part,
    format_suffix,
    iter_upload,
    parse_upload,
    record_chunks,
)
from learners.uploads.columns import CONTENT_COLUMNS, GOLD_KEYS
from learners.uploads.input_rules import text_problem

from .opinions import store_opinions
from .upload_file import drop_upload, open_upload, store_upload

__all__ = ["IngestError", "Record", "RepeatedUploadError", "import_ids", "import_notes", "import_records",
           "insert_items", "item_content", "new_job", "parse_upload", "repeated_import", "run_job", "survey"]

log = logging.getLogger(__name__)

def featurize(project: Project, records: Sequence[Record],
              progress: Callable[[int], None] | None = None) -> list[bytes]:
    """Encoded feature rows of ``records``; IngestError naming the record that failed."""
    out: list[bytes] = []
    for X in featurize_chunks(project.featurizer(), records):
        out.extend(encode_rows(X))
        if progress is not None:
            progress(len(out))
    return out


def item_content(project: Project, record: Record) -> tuple[Any, Any, str, Any]:
    """``(text, data, filename, vector_pairs)`` of a record's item, by the project's item kind:
    what an item imported from ``record`` stores."""
    if project.item_kind == Project.Kind.IMAGE:
        return "", record.raw, record.filename, None
    if project.item_kind == Project.Kind.VECTORS:
        return "", None, "", record.raw
    return record.raw, None, "", None


def import_records(project: Project, records: Sequence[Record],
                   progress: Callable[[int], None] | None = None) -> list[Item]:
    """Featurize ``records`` and insert them as pending items after the project's last one.

    Returns the new items (with ids) in order. IngestError before anything is written.
    """
    if not records:
        raise IngestError("nothing to import")
    ids = import_ids(project, records, progress)
    by_id = Item.objects.in_bulk([pk for pk, _ in ids])
    return [by_id[pk] for pk, _ in ids]


def import_ids(project: Project, records: Sequence[Record],
               progress: Callable[[int], None] | None = None) -> list[tuple[int, int]]:
    """:func:`import_records` returning the new items' ``(id, seq)`` only, in order (the JSON
    API: no model instance per item)."""
    if not records:
        raise IngestError("nothing to import")
    return insert_items(project, records, featurize(project, records, progress))


#: the columns an import writes (the others keep their defaults: pending, no decision, no lease)
COPY_COLUMNS = ("project_id", "seq", "text", "data", "filename", "vector_pairs", "vector", "gold", "status",
                "created")


def _dumped(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _rows(project: Project, first: int, records: Sequence[Record], vectors: Sequence[bytes],
          as_json: Callable[[Any], Any]) -> Iterator[tuple[Any, ...]]:
    """The :data:`COPY_COLUMNS` of the new items, JSON columns passed through ``as_json``."""
    now = timezone.now()
    status = Item.Status.PENDING
    for i, (record, vector) in enumerate(zip(records, vectors, strict=True)):
        text, data, filename, pairs = item_content(project, record)
        yield (project.pk, first + i, text, data, filename, as_json(pairs), vector, as_json(record.gold),
               status, now)


def _copy(rows: Iterable[tuple[Any, ...]]) -> None:
    """PostgreSQL: insert ``rows`` by one ``COPY`` (no per-row SQL, no placeholders to bind)."""
    table = connection.ops.quote_name(Item._meta.db_table)
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {table} ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def insert_items(project: Project, records: Sequence[Record],
                 vectors: Sequence[bytes]) -> list[tuple[int, int]]:
    """Insert featurized ``records`` (``vectors`` from :func:`featurize`) as pending items after
    the project's last one, in one transaction; the new items' ``(id, seq)`` in order (no model
    instance per item on PostgreSQL). Records' opinions (labels given elsewhere) are stored
    with them (:func:`.opinions.store_opinions`). Once enough rows were written since the item
    table's last analyse, the commit is followed by one (:mod:`..engine.table_stats`)."""
    with transaction.atomic():
        # lock the project row so concurrent imports get consecutive, distinct seq ranges
        Project.objects.select_for_update().filter(pk=project.pk).first()
        last = Item.objects.filter(project=project).aggregate(m=Max("seq"))["m"]
        first = 0 if last is None else last + 1
        if connection.vendor == "postgresql":
            _copy(_rows(project, first, records, vectors, _dumped))  # at the database's speed
        else:
            rows = _rows(project, first, records, vectors, lambda value: value)
            Item.objects.bulk_create((Item(**dict(zip(COPY_COLUMNS, row, strict=True))) for row in rows),
                                     batch_size=500)
        after_commit(Item, len(records))  # a large import leaves the planner fresh statistics
        ids = list(Item.objects.filter(project=project, seq__gte=first, seq__lt=first + len(records))
                   .order_by("seq").values_list("pk", "seq"))
        if any(record.opinions for record in records):
            store_opinions(project, records, ids)  # labels given elsewhere (a Label Studio export)
        return ids


#: an upload of the same bytes as an import of the project that is waiting, running, or finished
#: (having stored items) less than this long ago is refused unless confirmed (docs/uploads.md)
REPEAT_WINDOW = timedelta(minutes=10)


class RepeatedUploadError(Exception):
    """The file of an upload is the file of a recent import of the project (:func:`new_job`);
    ``earlier`` is that import, the message names it (the caller says how to import it anyway)."""

    def __init__(self, earlier: ImportJob) -> None:
        self.earlier = earlier
        if earlier.status in (ImportJob.Status.WAITING, ImportJob.Status.RUNNING):
            when = f"is still being imported ({earlier.done} items stored so far)"
        else:
            minutes = int((timezone.now() - (earlier.finished or earlier.created)).total_seconds() // 60)
            ago = f"{minutes} min ago" if minutes else "less than a minute ago"
            when = f"was imported {ago} ({earlier.status}, {earlier.done} items stored)"
        super().__init__(f"the same file (the same bytes) {when}: import {earlier.pk}, "
                         f"{earlier.filename!r}. Its items would be stored twice")


def repeated_import(job: ImportJob) -> ImportJob | None:
    """The newest other import of ``job``'s project with the same file (``sha256``) that is
    waiting or running, or finished less than :data:`REPEAT_WINDOW` ago having stored items;
    None when there is none. A cancelled import, or a failed one that stored nothing, is none."""
    recent = timezone.now() - REPEAT_WINDOW
    active = Q(status__in=(ImportJob.Status.WAITING, ImportJob.Status.RUNNING))
    return (ImportJob.objects.filter(project_id=job.project_id, sha256=job.sha256).exclude(pk=job.pk)
            .filter(active | Q(finished__gte=recent, done__gt=0)).exclude(status=ImportJob.Status.CANCELLED)
            .order_by("-created").first())


def new_job(project: Project, filename: str, chunks: Iterable[bytes], user: Any = None, *,
            again: bool = False) -> ImportJob:
    """A waiting import of the file ``filename`` whose content ``chunks`` gives (stored in parts,
    :func:`.upload_file.store_upload`, with its SHA-256), in one transaction; the caller sends it
    to a worker.

    Unless ``again``, :class:`RepeatedUploadError` (nothing stored) when the project has a
    :func:`repeated_import` of the same bytes. Decided once the file is stored, under the project
    row's lock, so of two uploads of one file at once (two tabs) the second to take the lock sees
    the first committed and is refused: exactly one import, whatever the timing.
    """
    digest = hashlib.sha256()

    def hashed() -> Iterator[bytes]:
        for chunk in chunks:
            digest.update(chunk)
            yield chunk

    with transaction.atomic():
        job = ImportJob.objects.create(project=project, created_by=user, filename=filename)
        store_upload(job, hashed())
        job.sha256 = digest.hexdigest()
        ImportJob.objects.filter(pk=job.pk).update(sha256=job.sha256)
        # every upload takes the lock, a confirmed one too, so that an unconfirmed upload running
        # beside it sees it once it commits. NO KEY UPDATE: creating the job took a KEY SHARE lock
        # on the project row (its foreign key), which a plain FOR UPDATE would wait for in
        # another upload doing the same: a deadlock. (SQLite: the IMMEDIATE transaction
        # serializes the whole upload.)
        Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()
        earlier = None if again else repeated_import(job)
        if earlier is not None:
            raise RepeatedUploadError(earlier)
    return job


def _close(job: ImportJob, status: str, **fields: Any) -> None:
    """Write the outcome (inside :func:`.jobs.finishing`, or the drain's lock: once per job) and
    its ``import.finished`` webhook event in the same transaction; the stored upload is dropped."""
    ImportJob.objects.filter(pk=job.pk).update(status=status, finished=timezone.now(), **fields)
    closed = ImportJob.objects.get(pk=job.pk)
    events.import_finished(closed)
    drop_upload(job)


def _records(project: Project, job: ImportJob) -> Iterator[Record]:
    with open_upload(job) as fh:
        yield from iter_upload(project, job.filename, fh)


def refused_item_note(item_kind: str) -> str:
    """What the upload page and the import command tell about an item only the featurizer refuses
    (an image that cannot be decoded): :func:`run_job` meets it in its second pass, when the
    records are stored a chunk at a time (:func:`learners.uploads.record_chunks`)."""
    what = "An image that cannot be decoded" if item_kind == "image" else "An item the featurizer refuses"
    return (f"{what} is found only when the import reaches it, and fails the import there, naming it. "
            f"Items are stored in batches ({uploads.CHUNK:,} items or {uploads.CHUNK_BYTES // 2**20} MB "
            "of content, whichever comes first) and the failing item's batch is not stored: from a file "
            "that fits in one batch nothing is imported; from a larger one the batches before it stay "
            "imported, and the failure says how many items that is.")


#: most ignored column names an import records (a JSONL file may name new keys on every line)
MAX_IGNORED_NAMES = 20
#: longest column name recorded (a longer one is cut, ending in an ellipsis)
MAX_NAME_CHARS = 60
#: the formats whose known class comes from a column (:mod:`learners.uploads.columns`)
COLUMN_FORMATS = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet")


def _shown_name(name: str) -> str:
    """A column name as recorded: escaped when it cannot be stored as text, at most
    :data:`MAX_NAME_CHARS` long."""
    if text_problem(name):
        name = ascii(name)[1:-1]
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS - 1] + "\u2026"


def survey(records: Iterable[Record]) -> dict[str, Any]:
    """The first pass over an import's records, as the :class:`..models.ImportJob` fields it sets:
    ``total`` (records), ``known`` (those that came with a class: a known class or labels given
    elsewhere) and ``ignored_columns`` (the columns or keys no rule read, in order of first
    appearance, at most :data:`MAX_IGNORED_NAMES` and one more when there were more)."""
    total = known = 0
    ignored: dict[str, None] = {}  # an ordered set
    last: tuple[str, ...] = ()
    for record in records:
        total += 1
        if record.gold is not None or record.opinions:
            known += 1
        if record.ignored and record.ignored is not last:  # a CSV's rows share one tuple
            last = record.ignored
            for name in record.ignored:
                if len(ignored) > MAX_IGNORED_NAMES:
                    break
                ignored.setdefault(_shown_name(name))
    return {"total": total, "known": known, "ignored_columns": list(ignored)}


def import_notes(job: ImportJob, kind: str) -> list[str]:
    """What the import's page tells of the file of ``job`` (a project of item ``kind``) once its
    first pass counted it: the columns its import ignored and the items that came with a class
    (docs/uploads.md). Empty before that."""
    if job.known is None or not job.total:
        return []
    notes = []
    if job.ignored_columns:
        names = ", ".join(repr(n) for n in job.ignored_columns[:MAX_IGNORED_NAMES])
        more = " and others" if len(job.ignored_columns) > MAX_IGNORED_NAMES else ""
        content = " or ".join(repr(c) for c in CONTENT_COLUMNS.get(kind, ()))
        notes.append(f"Ignored columns: {names}{more}. A {kind} project reads only {content} and, for the "
                     f"known class, {' or '.join(repr(k) for k in GOLD_KEYS)}.")
    known = f"{job.known} of {job.total} items came with a known class."
    if not job.known and format_suffix(job.filename) in COLUMN_FORMATS:
        gold = " or ".join(repr(k) for k in GOLD_KEYS)
        known += (f" A class is read from a column named {gold}: this file has none, or only empty "
                  "cells. Every item waits for a person or the model.")
    notes.append(known)
    return notes


def _kept(message: str, stored: int) -> str:
    """A failure message that says which items of the file are kept (stored before the failure)."""
    if not stored:
        return f"{message} (nothing was imported)"
    return f"{message} (the {stored} items before it were imported and are kept)"


def _import_chunks(job: ImportJob, project: Project, on_chunk: Callable[[], None] | None) -> bool:
    """Featurize and store the job's records after the ``job.done`` already stored, a chunk per
    transaction with its count; False when this attempt lost the job (cancelled or restarted)."""
    featurizer = project.featurizer()
    for part in record_chunks(islice(_records(project, job), job.done, None)):
        vectors = encode_rows(featurize_part(featurizer, part))
        with jobs.finishing(job) as held:
            if not held:
                return False
            insert_items(project, part, vectors)
            hold_point("IMPORT")
            job.done += len(part)
            ImportJob.objects.filter(pk=job.pk).update(done=job.done, heartbeat=timezone.now())
        if on_chunk is not None:
            on_chunk()
    return True


def run_job(job_id: int, on_chunk: Callable[[], None] | None = None) -> ImportJob | None:
    """Import an :class:`ImportJob`'s stored file, recording progress and the outcome.

    Two passes over the file as a stream (memory flat in its size): the first parses
    and validates every record and counts them (:func:`survey`), storing nothing, so a malformed
    file is refused whole; the second featurizes and stores the records in chunks
    (:func:`learners.uploads.record_chunks`), each chunk committed with ``done``, its running
    count, and followed by ``on_chunk()`` (the task layer asks for the new items to be decided).
    An item the featurizer refuses in the second pass (e.g. an undecodable image) fails the job
    there: its chunk is not stored, the chunks stored before it are kept, and the message says so
    (:func:`refused_item_note`).

    Returns the job (status DONE or FAILED; RUNNING or WAITING when another attempt took it
    over; CANCELLED), or None when it does not exist or is not waiting (e.g. a task delivered
    twice). Survives a dead worker (:mod:`..jobs`): a chunk and its count are written in one
    transaction, only by the attempt that still holds the job, and a restarted import goes on
    after the ``done`` items, so every item is stored once.
    """
    job = jobs.claim(ImportJob, job_id)
    if job is None:
        return None
    project = job.project
    try:
        counted = survey(_records(project, job))
        total = counted["total"]
        if not total:
            raise IngestError("nothing to import")
        if jobs.beat(job, **counted) and _import_chunks(job, project, on_chunk):
            with jobs.finishing(job) as held:
                if held:
                    _close(job, ImportJob.Status.DONE, total=total)
        elif ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.CANCELLED).exists():
            drop_upload(job)  # its items so far stay; its file is no longer needed
    except IngestError as exc:
        with jobs.finishing(job) as held:
            if held:
                _close(job, ImportJob.Status.FAILED, error=_kept(str(exc), job.done))
    except Exception as exc:  # unexpected: record a truthful outcome, then let Celery log it
        with jobs.finishing(job) as held:
            if held:
                _close(job, ImportJob.Status.FAILED, error=_kept(f"internal error: {exc}", job.done))
        raise
    job = ImportJob.objects.get(pk=job.pk)
    log.info("import %s for project %s: %s %s", job.filename, project.pk, job.status, job.error)
    return job
