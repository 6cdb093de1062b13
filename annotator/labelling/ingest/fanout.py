"""An import fanned out over the heavy queue's workers: its featurizing split in chunks that any
worker may take, its items inserted in the file's order.

* :func:`stage` (the job's first task): claims the job (:func:`..engine.jobs.claim`), parses
  and validates the whole file, storing nothing (a malformed file is refused whole, as in
  :func:`..ingest.run_job`), then writes the records, whole (every field: the opinions of a
  Label Studio export, the ignored columns; :func:`_dump`), in :class:`..models.ImportChunk` rows: a
  small first chunk (``IMPORT_FIRST_CHUNK`` records, so the queue fills within seconds), then
  chunks of ``IMPORT_CHUNK``. The first chunk is featurized and inserted by this task at once,
  before the others are staged (the queue fills within seconds even with one worker process);
  the others are handed to ``send`` once all are written.
* :func:`run_chunk` (one task per chunk, on any worker): featurizes the chunk's records and, in
  one transaction with the job's row locked, stores its vectors and *drains*: inserts every
  featurized chunk whose first record is the next one of the file (``start == job.done``), in
  order, deleting each chunk row in the transaction that inserts its items. Items thus get
  ``seq`` in the file's order whichever worker finished first, a chunk is inserted at most once
  (a chunk delivered twice, or redone after its worker died, finds its row gone or still
  waiting), and the stream can decide the first chunk's items while later ones are featurized.
  The drain that inserts the last item closes the job (DONE).

A dead worker: the task messages are acknowledged late (``CELERY_TASK_ACKS_LATE``) and redelivered,
and the job, silent for ``JOB_STALE_SECONDS``, is restarted by the sweep
(:func:`..engine.jobs.restart_stale`): :func:`stage` then sends every chunk still staged again
(staging no record twice). With the filesystem broker and one worker the chunks simply run in turn.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterator
from dataclasses import fields
from itertools import islice
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotator.labelling.engine import jobs
from annotator.labelling.engine.faults import hold_point
from annotator.labelling.engine.stored_vectors import encode_rows
from annotator.labelling.models import ImportChunk, ImportJob, Project
from learners.uploads import CHUNK, IngestError, Record, featurize_part, record_chunks
from learners.uploads.input_rules import text_problem

from . import _close, _kept, _records, insert_items, survey

log = logging.getLogger(__name__)

#: statuses under which a chunk may still be inserted (WAITING: the sweep restarted the job)
_OPEN = (ImportJob.Status.WAITING, ImportJob.Status.RUNNING)


def _chunk_sizes() -> tuple[int, int]:
    """(records in the first chunk, in each later one): ``IMPORT_FIRST_CHUNK`` (small, so that the
    first items are decided within seconds) and ``IMPORT_CHUNK``, read at call time."""
    return int(getattr(settings, "IMPORT_FIRST_CHUNK", 200)), int(getattr(settings, "IMPORT_CHUNK", CHUNK))


def _encoded(value: Any) -> Any:
    """``value`` as JSON that :func:`_decoded` turns back into an equal value, storable in any
    database's JSON column: bytes, tuples, objects and the strings that cannot be stored as text
    (NUL, a lone surrogate: PostgreSQL's ``jsonb`` refuses both; an annotator's name or an
    ignored key may hold them) are tagged (``{"b64": ...}``, ``{"tuple": [...]}``,
    ``{"dict": [[key, value], ...]}``, ``{"str": <base64 of its UTF-8, surrogates passed>}``), so
    no value a record holds is mistaken for another."""
    if isinstance(value, str):
        return {"str": _b64(value.encode("utf-8", "surrogatepass"))} if text_problem(value) else value
    if isinstance(value, bytes):
        return {"b64": _b64(value)}
    if isinstance(value, tuple):
        return {"tuple": [_encoded(v) for v in value]}
    if isinstance(value, list):
        return [_encoded(v) for v in value]
    if isinstance(value, dict):
        return {"dict": [[_encoded(k), _encoded(v)] for k, v in value.items()]}
    return value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _decoded(value: Any) -> Any:
    """Inverse of :func:`_encoded`."""
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if isinstance(value, dict):
        ((tag, inner),) = value.items()
        if tag == "str":
            return base64.b64decode(inner).decode("utf-8", "surrogatepass")
        if tag == "b64":
            return base64.b64decode(inner)
        if tag == "tuple":
            return tuple(_decoded(v) for v in inner)
        return {_decoded(k): _decoded(v) for k, v in inner}
    return value


def _dump(record: Record) -> dict[str, Any]:
    """A record as JSON: every field of :class:`~learners.uploads.Record` (read from the dataclass,
    so a field added there is staged too), each value as :func:`_encoded`."""
    return {f.name: _encoded(getattr(record, f.name)) for f in fields(Record)}


def _load(row: dict[str, Any] | list[Any]) -> Record:
    """Inverse of :func:`_dump`. A list is a row staged before every field was kept
    (``[where, raw, gold, filename]``, an image's bytes as ``{"base64": ...}``): a chunk staged
    by the previous version of the app, read once after an upgrade."""
    if isinstance(row, list):
        where, raw, gold, filename = row
        if isinstance(raw, dict) and set(raw) == {"base64"}:
            raw = base64.b64decode(raw["base64"])
        return Record(where=where, raw=raw, gold=gold, filename=filename)
    return Record(**{name: _decoded(value) for name, value in row.items()})


def pack_rows(rows: list[bytes]) -> bytes:
    """Encoded feature rows as one blob: their lengths (uint32), then the rows."""
    return np.array([len(r) for r in rows], dtype="<u4").tobytes() + b"".join(rows)


def unpack_rows(blob: bytes | memoryview, count: int) -> list[bytes]:
    """Inverse of :func:`pack_rows` for ``count`` rows."""
    data = bytes(blob)
    lengths = np.frombuffer(data, dtype="<u4", count=count)
    out, at = [], 4 * count
    for n in lengths.tolist():
        out.append(data[at:at + n])
        at += n
    return out


def _staged_end(job: ImportJob) -> tuple[int, int]:
    """(records staged so far, the next chunk index): past the last chunk row, or ``job.done``
    when every staged chunk was inserted already."""
    last = (ImportChunk.objects.filter(job=job).order_by("-index")
            .values_list("index", "start", "count").first())
    if last is not None:
        return last[1] + last[2], last[0] + 1
    # no row left: every staged chunk was inserted. Any unused index will do: a late message
    # for an earlier chunk of the same index just runs this one (running a chunk is idempotent)
    return job.done, job.done


def _chunks_from(records: Iterator[Record], start: int) -> Iterator[tuple[int, list[Record]]]:
    """``(start, records)`` of the file's chunks from record ``start`` on: the first chunk of the
    file is :func:`_chunk_sizes`' first size, the others the second."""
    first, size = _chunk_sizes()
    at = start
    if at < first:
        part = list(islice(records, first - at))
        if part:
            yield at, part
            at += len(part)
    for part in record_chunks(records, size):
        yield at, part
        at += len(part)


def stage(job_id: int, send: Callable[[int, list[int]], None],
          on_items: Callable[[int], None] | None = None) -> ImportJob | None:
    """Claim the waiting import ``job_id``, validate its file and stage its records in chunks;
    the first chunk staged is featurized and inserted here at once (:func:`run_chunk`, with
    ``on_items``), then ``send(job_id, indexes)`` is called (after the commit) for all the others.
    A restarted job (its worker died) stages only the records not staged yet and sends every
    chunk staged before again.

    Returns the job, or None when it was not waiting (a duplicate delivery). A malformed file
    fails the job with nothing stored.
    """
    job = jobs.claim(ImportJob, job_id)
    if job is None:
        return None
    project: Project = job.project
    try:
        if not job.total:
            counted = survey(_records(project, job))
            if not counted["total"]:
                raise IngestError("nothing to import")
            if not jobs.beat(job, **counted):
                return job
            job.total = counted["total"]
        staged, index = _staged_end(job)
        pending = list(ImportChunk.objects.filter(job=job).order_by("index").values_list("index", flat=True))
        if pending:  # staged (committed) by an earlier attempt
            send(job.pk, pending)
        later: list[int] = []
        if staged < job.total:
            for start, part in _chunks_from(islice(_records(project, job), staged, None), staged):
                with jobs.finishing(job) as held:
                    if not held:
                        return job
                    ImportChunk.objects.get_or_create(job=job, index=index, defaults={
                        "start": start, "count": len(part), "records": [_dump(r) for r in part]})
                    ImportJob.objects.filter(pk=job.pk).update(heartbeat=timezone.now())
                if start == staged:
                    # the first chunk right here, before the rest is staged: its items reach the
                    # stream within seconds, even when this is the only worker process
                    run_chunk(job.pk, index, on_items, inline=True)
                else:
                    later.append(index)
                index += 1
        if later:
            send(job.pk, later)
    except IngestError as exc:
        with jobs.finishing(job) as held:
            if held:
                _fail(job, str(exc))
    job.refresh_from_db()
    return job


def _fail(job: ImportJob, message: str) -> None:
    """Fail the job (inside :func:`.jobs.finishing` or the drain's lock), keeping the items
    inserted so far and dropping the staged chunks."""
    done = ImportJob.objects.filter(pk=job.pk).values_list("done", flat=True).get()
    _close(job, ImportJob.Status.FAILED, error=_kept(message, done))
    ImportChunk.objects.filter(job=job).delete()


def run_chunk(job_id: int, index: int, on_items: Callable[[int], None] | None = None,
              inline: bool = False) -> int:
    """Featurize chunk ``index`` of import ``job_id`` and insert every chunk now next in the
    file's order (module docstring); ``on_items(project_id)`` is called after a commit that
    inserted items. Returns the number of items this call inserted (0: the chunk was inserted
    already, is waiting for an earlier one, or the job is over)."""
    chunk = ImportChunk.objects.filter(job_id=job_id, index=index).select_related("job__project").first()
    if chunk is None or chunk.job.status not in _OPEN:
        return 0
    job, project = chunk.job, chunk.job.project
    ImportJob.objects.filter(pk=job_id, status__in=_OPEN).update(heartbeat=timezone.now())
    if not inline:
        hold_point("IMPORT_CHUNK")
    vectors = None
    if chunk.vectors is None:
        try:
            vectors = pack_rows(encode_rows(featurize_part(project.featurizer(),
                                                           [_load(r) for r in chunk.records])))
        except IngestError as exc:
            with transaction.atomic():
                if ImportJob.objects.select_for_update().filter(pk=job_id, status__in=_OPEN).exists():
                    _fail(job, str(exc))
            return 0
    inserted = 0
    with transaction.atomic():
        locked = ImportJob.objects.select_for_update().filter(pk=job_id, status__in=_OPEN).first()
        if locked is None:
            return 0
        if vectors is not None:
            ImportChunk.objects.filter(pk=chunk.pk, vectors__isnull=True).update(vectors=vectors)
        inserted = _drain(locked, project)
    if inserted and on_items is not None:
        on_items(project.pk)
    return inserted


def _drain(job: ImportJob, project: Project) -> int:
    """Insert the featurized chunks that come next in the file (``start == job.done``), in order,
    each chunk row deleted as its items are written; close the job once all are in. Call with
    the job's row locked. Returns the items inserted."""
    inserted = 0
    while True:
        chunk = ImportChunk.objects.filter(job=job, start=job.done, vectors__isnull=False).first()
        if chunk is None:
            break
        records = [_load(r) for r in chunk.records]
        insert_items(project, records, unpack_rows(chunk.vectors or b"", chunk.count))
        hold_point("IMPORT")
        chunk.delete()
        job.done += chunk.count
        inserted += chunk.count
        ImportJob.objects.filter(pk=job.pk).update(done=job.done, heartbeat=timezone.now())
    if job.total and job.done >= job.total:
        _close(job, ImportJob.Status.DONE, total=job.total)
        log.info("import %s for project %s: done (%s items)", job.filename, project.pk, job.done)
    return inserted

