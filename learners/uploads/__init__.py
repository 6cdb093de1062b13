"""The app's upload formats, parsed into :class:`Record` s: one definition, no Django.

The app's ingest (``annotator.labelling.ingest``) and the replay CLI
(``python -m learners.replay --kind``) both read files through :func:`iter_upload` (or
:func:`parse_upload` for bytes in memory), so a file gives the same items, in the same order,
with the same labels, wherever it is read, and :func:`featurize_chunks` turns them into the
same feature rows:

* ``.csv`` / ``.tsv`` / ``.jsonl`` / ``.ndjson``: text or URL items (:mod:`.tabular`; CSV cells
  separated by commas, tabs or semicolons; a JSONL line may be a Prodigy task, :mod:`.prodigy`);
* ``.zip``: images, labelled by ``labels.csv`` or class folders (:mod:`.image_zip`);
* ``.parquet``: any kind, a column per field, read a batch of rows at a time (:mod:`.parquet`);
* ``.svm`` / ``.svmlight`` / ``.libsvm`` / ``.txt``: vectors (:mod:`.svmlight`);
* ``.json``: a Label Studio export of text, URL or image tasks with their Choices annotations
  (:mod:`.label_studio`);
* any of these followed by ``.gz``: gzip-compressed, at most ``MAX_GUNZIP_BYTES`` once
  decompressed and at most ``MAX_GUNZIP_RATIO`` decompressed bytes per compressed byte (beyond
  the first ``GUNZIP_RATIO_FREE_BYTES``); a gzip bomb is refused as soon as it passes either,
  never held whole.

Every format is read as a stream: records come one at a time from a binary file, and
:func:`record_chunks` groups them in bounded chunks, so memory does not grow with the file.
A ZIP or a Parquet file needs random access: a compressed or unseekable one is first spooled to a
temporary file.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO

import scipy.sparse as sp

from ..features import FeatureError
from .image_zip import iter_zip
from .label_studio import iter_label_studio
from .parquet import iter_parquet
from .records import IngestError, OpenTarget, Record, Target, gold_of
from .svmlight import iter_svmlight
from .tabular import iter_csv, iter_jsonl

__all__ = [
    "FORMATS",
    "KIND_PARSERS",
    "PARSERS",
    "IngestError",
    "OpenTarget",
    "Record",
    "Target",
    "accepts",
    "check_start",
    "featurize_chunks",
    "featurize_part",
    "format_suffix",
    "formats_for",
    "gold_of",
    "iter_upload",
    "parse_upload",
    "record_chunks",
    "suffixes_for",
]

PARSERS: dict[str, Callable[[Target, BinaryIO], Iterator[Record]]] = {
    ".zip": iter_zip, ".csv": iter_csv, ".tsv": iter_csv, ".jsonl": iter_jsonl, ".ndjson": iter_jsonl,
    ".svm": iter_svmlight, ".svmlight": iter_svmlight, ".libsvm": iter_svmlight,
    ".txt": iter_svmlight, ".parquet": iter_parquet, ".json": iter_label_studio,
}
GZIP = ".gz"
#: the accepted file types, as told to users
FORMATS = ", ".join(sorted(PARSERS)) + f" (each also gzipped, e.g. .csv{GZIP})"
#: the parsers of each item kind's files (text and URL items: the tabular ones)
KIND_PARSERS: dict[str, tuple[Callable[[Target, BinaryIO], Iterator[Record]], ...]] = {
    "image": (iter_zip, iter_jsonl, iter_label_studio, iter_parquet),
    "vectors": (iter_svmlight, iter_parquet),
    "text": (iter_csv, iter_jsonl, iter_label_studio, iter_parquet),
    "url": (iter_csv, iter_jsonl, iter_label_studio, iter_parquet)}
#: formats read with random access (spooled to a temporary file when compressed)
RANDOM_ACCESS = (".zip", ".parquet")
#: records an upload form reads to check a file before it is stored (:func:`check_start`)
CHECKED_RECORDS = 20
#: records featurized per call (bounds memory and gives progress steps) ...
CHUNK = 2000
#: ... or fewer, once their raw content reaches this many bytes (a chunk of large images)
CHUNK_BYTES = 64 * 1024 * 1024
#: largest decompressed size of a ``.gz`` upload
MAX_GUNZIP_BYTES = 1024 * 1024 * 1024
#: largest ratio of decompressed to compressed bytes of a ``.gz`` upload, checked once more than
#: :data:`GUNZIP_RATIO_FREE_BYTES` came out (text and CSV compress 3-20x; 2.9 KB that expand to
#: a million items are a bomb, not data)
MAX_GUNZIP_RATIO = 200
GUNZIP_RATIO_FREE_BYTES = 1024 * 1024


def _suffix(name: str) -> str:
    name = name.lower()
    return "." + name.rsplit(".", 1)[-1] if "." in name else ""


def format_suffix(filename: str) -> str:
    """The suffix that picks the parser (``.csv`` for ``a.CSV.gz``); ``""`` if none."""
    name = filename[:-len(GZIP)] if filename.lower().endswith(GZIP) else filename
    return _suffix(name)


def accepts(filename: str) -> bool:
    """True if :func:`parse_upload` has a parser for ``filename``'s suffix."""
    return format_suffix(filename) in PARSERS


def suffixes_for(kind: str) -> list[str]:
    """The file suffixes a project of item ``kind`` takes (each also gzipped), in PARSERS order."""
    parsers = KIND_PARSERS.get(kind, ())
    return [s for s, parse in PARSERS.items() if parse in parsers]


def formats_for(kind: str) -> str:
    """:func:`suffixes_for` as told to users."""
    suffixes = suffixes_for(kind)
    return ", ".join(suffixes) + f" (each also gzipped, e.g. {suffixes[0]}{GZIP})" if suffixes else "none"


def check_start(target: Target, filename: str, fh: BinaryIO, n: int | None = None) -> int:
    """Parse the first ``n`` records (default :data:`CHECKED_RECORDS`) of the file ``filename``
    that ``fh`` reads, for a project of ``target.item_kind``, and seek ``fh`` back to its start:
    the number of records read. IngestError for a suffix that kind does not take, a bad header
    or a bad record among them (the rest of the file is checked when it is imported)."""
    if format_suffix(filename) not in suffixes_for(target.item_kind):
        article = "an" if target.item_kind[:1] in "aeiou" else "a"
        raise IngestError(f"{article} {target.item_kind} project takes {formats_for(target.item_kind)}, "
                          f"not {_suffix(filename) or filename!r}")
    n = CHECKED_RECORDS if n is None else n
    count = 0
    try:
        for _ in iter_upload(target, filename, fh):
            count += 1
            if count >= n:
                break
    finally:
        fh.seek(0)
    return count


class _Gunzipped(io.RawIOBase):
    """The decompressed stream of a gzip file: IngestError when it is not gzip, is damaged, or
    decompresses to more than ``limit`` bytes (read lazily, so a bomb is never held whole)."""

    def __init__(self, fh: BinaryIO, limit: int) -> None:
        self._fh = fh
        self._start = fh.tell() if fh.seekable() else 0
        self._gz = gzip.GzipFile(fileobj=fh, mode="rb")
        self._limit, self._read = limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            n = self._gz.readinto(buffer)
        except (OSError, EOFError, zlib.error) as exc:
            raise IngestError(f"not a readable gzip file ({exc})") from None
        self._read += n
        if self._read > self._limit:
            raise IngestError(f"the file decompresses to more than {self._limit} bytes")
        if self._read > GUNZIP_RATIO_FREE_BYTES and self._fh.seekable():
            packed = max(1, self._fh.tell() - self._start)
            if self._read > MAX_GUNZIP_RATIO * packed:
                raise IngestError(f"the file decompresses more than {MAX_GUNZIP_RATIO} times its "
                                  f"compressed size ({packed} bytes gave {self._read}): refused as a "
                                  "compression bomb")
        return n


def gunzipped(fh: BinaryIO, limit: int | None = None) -> BinaryIO:
    """A buffered binary stream of the decompressed content of the gzip file ``fh`` (every
    member), at most ``limit`` bytes (default ``MAX_GUNZIP_BYTES``), see :class:`_Gunzipped`."""
    return io.BufferedReader(_Gunzipped(fh, MAX_GUNZIP_BYTES if limit is None else limit))


@contextmanager
def _seekable(fh: BinaryIO) -> Iterator[BinaryIO]:
    """``fh`` itself when it can seek, else a temporary file holding its content (random access)."""
    if fh.seekable():
        yield fh
        return
    with tempfile.TemporaryFile() as spool:
        shutil.copyfileobj(fh, spool, 1024 * 1024)
        spool.seek(0)
        yield spool


def iter_upload(target: Target, filename: str, fh: BinaryIO) -> Iterator[Record]:
    """Records of the file ``filename`` whose content ``fh`` reads, parsed by its suffix (module
    docstring), one at a time; IngestError naming the problem (and the line or entry) otherwise."""
    suffix = format_suffix(filename)
    parser = PARSERS.get(suffix)
    if parser is None:
        raise IngestError(f"unsupported file type {_suffix(filename) or filename!r}; use one of "
                          f"{FORMATS}")
    if filename.lower().endswith(GZIP):
        fh = gunzipped(fh)
    if suffix not in RANDOM_ACCESS:
        yield from parser(target, fh)
        return
    with _seekable(fh) as seekable:
        yield from parser(target, seekable)


def parse_upload(target: Target, filename: str, data: bytes) -> list[Record]:
    """Every record of a file held in memory (:func:`iter_upload`)."""
    return list(iter_upload(target, filename, io.BytesIO(data)))


def _weight(record: Record) -> int:
    """Bytes a record's raw content takes in memory, roughly (a vector's ``[index, value]``
    pair is three Python objects, about 128 bytes)."""
    raw = record.raw
    return len(raw) if isinstance(raw, str | bytes) else 128 * len(raw)


def record_chunks(records: Iterable[Record], chunk: int | None = None,
                  max_bytes: int | None = None) -> Iterator[list[Record]]:
    """``records`` in consecutive lists of at most ``chunk`` records (default :data:`CHUNK`)
    and about ``max_bytes`` of raw content (default :data:`CHUNK_BYTES`; a list ends at the
    record that reaches it), in order."""
    chunk = CHUNK if chunk is None else chunk
    max_bytes = CHUNK_BYTES if max_bytes is None else max_bytes
    part: list[Record] = []
    size = 0
    for record in records:
        part.append(record)
        size += _weight(record)
        if len(part) >= chunk or size >= max_bytes:
            yield part
            part, size = [], 0
    if part:
        yield part


def featurize_part(featurizer: Any, part: Sequence[Record]) -> sp.csr_matrix:
    """CSR rows of ``part`` by ``featurizer`` (``learners.features``), in order; IngestError
    naming the record whose raw item the featurizer refused."""
    try:
        return featurizer.transform([r.raw for r in part])
    except FeatureError as exc:
        where = part[exc.position].where if exc.position is not None else "an item"
        raise IngestError(f"{where}: {exc.reason}") from None


def featurize_chunks(featurizer: Any, records: Iterable[Record],
                     chunk: int | None = None) -> Iterator[sp.csr_matrix]:
    """:func:`featurize_part` of ``records`` a chunk (:func:`record_chunks`) at a time, in order."""
    for part in record_chunks(records, chunk):
        yield featurize_part(featurizer, part)
