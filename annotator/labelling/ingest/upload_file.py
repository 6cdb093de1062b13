"""An import's uploaded file, kept in the database in parts (:class:`..models.UploadPart`).

Written from the request's chunks (:func:`store_upload`) and read back as a seekable binary
file (:func:`open_upload`) with one part in memory at a time, so neither the web process nor
the worker holds a file whole, whatever its size; a ZIP's random access seeks across
parts. In the database rather than on a disk so that a worker on another host can read it.
"""

from __future__ import annotations

import bisect
import io
from collections.abc import Iterable
from itertools import accumulate
from typing import Any, BinaryIO

from django.db.models.functions import Length

from annotator.labelling.models import ImportJob, UploadPart

#: bytes per stored part (the last part of a file may be shorter)
PART_BYTES = 8 * 1024 * 1024
#: read-ahead of the buffered reader over the parts
READ_BUFFER = 1024 * 1024


def store_upload(job: ImportJob, chunks: Iterable[bytes]) -> int:
    """Store the file whose content ``chunks`` gives, in order, as ``job``'s parts of
    :data:`PART_BYTES`; record and return its size. Call inside the transaction that creates
    the job, so a job never exists with half its file."""
    buffer = bytearray()
    index = size = 0
    for chunk in chunks:
        buffer += chunk
        size += len(chunk)
        while len(buffer) >= PART_BYTES:
            UploadPart.objects.create(job=job, index=index, data=bytes(buffer[:PART_BYTES]))
            del buffer[:PART_BYTES]
            index += 1
    if buffer or index == 0:
        UploadPart.objects.create(job=job, index=index, data=bytes(buffer))
    ImportJob.objects.filter(pk=job.pk).update(size=size)
    job.size = size
    return size


def drop_upload(job: ImportJob) -> None:
    """Delete the job's stored file (once the import is over)."""
    UploadPart.objects.filter(job=job).delete()


class _Parts(io.RawIOBase):
    """The parts of one job's file as one seekable stream; one part is fetched at a time."""

    def __init__(self, job_id: int) -> None:
        lengths = list(UploadPart.objects.filter(job_id=job_id).order_by("index")
                       .values_list("index", Length("data")))
        if [i for i, _ in lengths] != list(range(len(lengths))):
            raise ValueError(f"import {job_id}: its file's parts are not 0..{len(lengths) - 1}")
        self._job = job_id
        self._starts = [0, *accumulate(n or 0 for _, n in lengths)]  # offset of each part, then the size
        self._pos = 0
        self._index, self._data = -1, memoryview(b"")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._starts[-1]}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def _part(self, index: int) -> memoryview:
        if index != self._index:
            self._data = memoryview(b"")  # drop the previous part before fetching the next
            part = UploadPart.objects.filter(job_id=self._job, index=index)
            data = part.values_list("data", flat=True).get()
            self._index, self._data = index, memoryview(bytes(data))
        return self._data

    def readinto(self, buffer: Any) -> int:
        if self._pos >= self._starts[-1]:
            return 0
        index = bisect.bisect_right(self._starts, self._pos) - 1
        data = self._part(index)
        offset = self._pos - self._starts[index]
        n = min(len(buffer), len(data) - offset)
        buffer[:n] = data[offset:offset + n]
        self._pos += n
        return n


def open_upload(job: ImportJob) -> BinaryIO:
    """The job's stored file as a buffered, seekable binary file (close it when done)."""
    return io.BufferedReader(_Parts(job.pk), READ_BUFFER)
