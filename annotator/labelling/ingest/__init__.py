"""Ingestion: records in, pending items out, at the database's speed (COPY on PostgreSQL).

* :func:`import_records` (the JSON API, the demo, the command line): records already in
  memory, all-or-nothing: every record is featurized before the first row is written, in one
  transaction, so a malformed one (the error names it) leaves the project unchanged.
* :func:`run_job` (an uploaded file, :class:`..models.ImportJob`): streamed, two passes over
  the stored file (:mod:`.upload_file`), memory flat in its size (issue 18).

The formats are parsed by :mod:`learners.uploads` (Django-free, shared with the replay CLI),
which picks the parser from the file name.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from learners.uploads import (
    IngestError,
    Record,
    featurize_chunks,
    featurize_part,
    iter_upload,
    parse_upload,
    record_chunks,
)

from .. import jobs
from ..faults import hold_point
from ..models import ImportJob, Item, Project
from ..vectors import encode_rows
from .upload_file import drop_upload, open_upload, store_upload

__all__ = ["IngestError", "Record", "import_records", "insert_items", "new_job", "parse_upload", "run_job"]

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


def _item(project: Project, seq: int, record: Record, vector: bytes) -> Item:
    item = Item(project=project, seq=seq, vector=vector, gold=record.gold)
    if project.item_kind == Project.Kind.IMAGE:
        item.data, item.filename = record.raw, record.filename
    elif project.item_kind == Project.Kind.VECTORS:
        item.vector_pairs = record.raw
    else:
        item.text = record.raw
    return item


def import_records(project: Project, records: Sequence[Record],
                   progress: Callable[[int], None] | None = None) -> list[Item]:
    """Featurize ``records`` and insert them as pending items after the project's last one.

    Returns the new items (with ids) in order. IngestError before anything is written.
    """
    if not records:
        raise IngestError("nothing to import")
    return insert_items(project, records, featurize(project, records, progress))


#: the columns an import writes (the others keep their defaults: pending, no decision, no lease)
COPY_COLUMNS = ("project_id", "seq", "text", "data", "filename", "vector_pairs", "vector", "gold", "status",
                "created")


def _copy(items: Sequence[Item]) -> None:
    """PostgreSQL: insert new ``items`` by one ``COPY`` (no per-row SQL, no placeholders to bind)."""
    now = timezone.now()
    table = connection.ops.quote_name(Item._meta.db_table)

    def dumped(value: Any) -> str | None:
        return None if value is None else json.dumps(value)

    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {table} ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
        for it in items:
            copy.write_row((it.project_id, it.seq, it.text, it.data, it.filename, dumped(it.vector_pairs),
                            it.vector, dumped(it.gold), Item.Status.PENDING, now))


def insert_items(project: Project, records: Sequence[Record], vectors: Sequence[bytes]) -> list[Item]:
    """Insert featurized ``records`` (``vectors`` from :func:`featurize`) as pending items after
    the project's last one, in one transaction; the new items (with ids) in order."""
    with transaction.atomic():
        # lock the project row so concurrent imports get consecutive, distinct seq ranges
        Project.objects.select_for_update().filter(pk=project.pk).first()
        last = Item.objects.filter(project=project).aggregate(m=Max("seq"))["m"]
        first = 0 if last is None else last + 1
        items = [_item(project, first + i, r, v)
                 for i, (r, v) in enumerate(zip(records, vectors, strict=True))]
        if connection.vendor == "postgresql":
            _copy(items)  # issue 18: at the database's speed
        else:
            Item.objects.bulk_create(items, batch_size=500)
    if items[0].pk is None:  # inserted without RETURNING
        ids = dict(Item.objects.filter(project=project, seq__gte=first).values_list("seq", "pk"))
        for item in items:
            item.pk = ids[item.seq]
    return items


def new_job(project: Project, filename: str, chunks: Iterable[bytes], user: Any = None) -> ImportJob:
    """A waiting import of the file ``filename`` whose content ``chunks`` gives (stored in parts,
    :func:`.upload_file.store_upload`), in one transaction; the caller sends it to a worker."""
    with transaction.atomic():
        job = ImportJob.objects.create(project=project, created_by=user, filename=filename)
        store_upload(job, chunks)
    return job


def _close(job: ImportJob, status: str, **fields: Any) -> None:
    """Write the outcome (inside :func:`.jobs.finishing`); the stored upload is dropped."""
    ImportJob.objects.filter(pk=job.pk).update(status=status, finished=timezone.now(), **fields)
    drop_upload(job)


def _records(project: Project, job: ImportJob) -> Iterator[Record]:
    with open_upload(job) as fh:
        yield from iter_upload(project, job.filename, fh)


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

    Two passes over the file as a stream (memory flat in its size, issue 18): the first parses
    and validates every record and counts them (``total``), storing nothing, so a malformed
    file is refused whole; the second featurizes and stores the records in chunks
    (:func:`learners.uploads.record_chunks`), each chunk committed with ``done``, its running
    count, and followed by ``on_chunk()`` (the task layer asks for the new items to be decided).
    An item the featurizer refuses in the second pass (e.g. an undecodable image) fails the job
    there: the items stored before it are kept and the message says so.

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
        total = sum(1 for _ in _records(project, job))
        if not total:
            raise IngestError("nothing to import")
        if jobs.beat(job, total=total) and _import_chunks(job, project, on_chunk):
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
