"""Ingestion: parse and validate a whole upload, featurize it, then insert it in one transaction.

All-or-nothing: every record is parsed and featurized before the first row is written, and
the rows are written in one transaction, so a malformed row (the error names it) leaves
the project unchanged. The formats are parsed by :mod:`learners.uploads` (Django-free, shared
with the replay CLI), which picks the parser from the file name.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from learners.uploads import IngestError, Record, featurize_chunks, parse_upload

from .. import jobs
from ..faults import hold_point
from ..models import ImportJob, Item, Project
from ..vectors import encode_rows

__all__ = ["IngestError", "Record", "import_records", "insert_items", "parse_upload", "run_job"]

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


def _close(job: ImportJob, status: str, **fields: Any) -> None:
    """Write the outcome (inside :func:`.jobs.finishing`); the stored upload is dropped."""
    ImportJob.objects.filter(pk=job.pk).update(status=status, finished=timezone.now(), data=None, **fields)


def run_job(job_id: int) -> ImportJob | None:
    """Import an :class:`ImportJob`'s stored file, recording progress and the outcome.

    Returns the job (status DONE or FAILED; RUNNING or WAITING when another attempt took it
    over), or None when it does not exist or is not waiting (e.g. a task delivered twice).
    Survives a dead worker (:mod:`..jobs`): the items and the DONE status are written in one
    transaction, only by the attempt that still holds the job, so a restarted import stores
    every item once.
    """
    job = jobs.claim(ImportJob, job_id)
    if job is None:
        return None
    project = job.project
    try:
        records = parse_upload(project, job.filename, bytes(job.data or b""))
        if not records:
            raise IngestError("nothing to import")
        jobs.beat(job, total=len(records), done=0)
        def progress(done: int) -> None:
            jobs.beat(job, done=done)

        vectors = featurize(project, records, progress)
        with jobs.finishing(job) as held:
            if held:
                items = insert_items(project, records, vectors)
                hold_point("IMPORT")
                _close(job, ImportJob.Status.DONE, done=len(items), total=len(records))
    except IngestError as exc:
        with jobs.finishing(job) as held:
            if held:
                _close(job, ImportJob.Status.FAILED, error=str(exc))
    except Exception as exc:  # unexpected: record a truthful outcome, then let Celery log it
        with jobs.finishing(job) as held:
            if held:
                _close(job, ImportJob.Status.FAILED, error=f"internal error: {exc}")
        raise
    job = ImportJob.objects.defer("data").get(pk=job.pk)
    log.info("import %s for project %s: %s %s", job.filename, project.pk, job.status, job.error)
    return job
