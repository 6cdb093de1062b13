"""The app's upload formats, parsed into :class:`Record` s: one definition, no Django.

The app's ingest (``annotator.labelling.ingest``) and the replay CLI
(``python -m learners.replay --kind``) both read files through :func:`parse_upload`, so a file
gives the same items, in the same order, with the same labels, wherever it is read, and
:func:`featurize_chunks` turns them into the same feature rows:

* ``.csv`` / ``.jsonl`` / ``.ndjson``: text or URL items (:mod:`.tabular`);
* ``.zip``: images, labelled by ``labels.csv`` or class folders (:mod:`.image_zip`);
* ``.svm`` / ``.svmlight`` / ``.libsvm`` / ``.txt``: vectors (:mod:`.svmlight`);
* any of these followed by ``.gz``: gzip-compressed, at most ``MAX_GUNZIP_BYTES`` once
  decompressed (a gzip bomb is refused after reading that many bytes, never held whole).
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import scipy.sparse as sp

from ..features import FeatureError
from .image_zip import parse_zip
from .records import IngestError, OpenTarget, Record, Target, gold_of
from .svmlight import parse_svmlight
from .tabular import parse_csv, parse_jsonl

__all__ = ["FORMATS", "PARSERS", "IngestError", "OpenTarget", "Record", "Target", "accepts",
           "featurize_chunks", "gold_of", "parse_upload"]

PARSERS: dict[str, Callable[[Target, bytes], list[Record]]] = {
    ".csv": parse_csv, ".jsonl": parse_jsonl, ".ndjson": parse_jsonl, ".zip": parse_zip,
    ".svm": parse_svmlight, ".svmlight": parse_svmlight, ".libsvm": parse_svmlight,
    ".txt": parse_svmlight,
}
GZIP = ".gz"
#: the accepted file types, as told to users
FORMATS = ", ".join(sorted(PARSERS)) + f" (each also gzipped, e.g. .csv{GZIP})"
#: records featurized per call (bounds memory and gives progress steps)
CHUNK = 2000
#: largest decompressed size of a ``.gz`` upload
MAX_GUNZIP_BYTES = 1024 * 1024 * 1024


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


def gunzip(data: bytes, limit: int | None = None) -> bytes:
    """The decompressed content of gzip ``data`` (every member); IngestError if it is not
    gzip, is damaged, or decompresses to more than ``limit`` (default ``MAX_GUNZIP_BYTES``)."""
    limit = MAX_GUNZIP_BYTES if limit is None else limit
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise IngestError(f"not a readable gzip file ({exc})") from None
    if len(out) > limit:
        raise IngestError(f"the file decompresses to more than {limit} bytes")
    return out


def parse_upload(target: Target, filename: str, data: bytes) -> list[Record]:
    """Records of the file ``filename`` with content ``data``, parsed by its suffix (module
    docstring); IngestError naming the problem (and the line or entry) otherwise."""
    parser = PARSERS.get(format_suffix(filename))
    if parser is None:
        raise IngestError(f"unsupported file type {_suffix(filename) or filename!r}; use one of "
                          f"{FORMATS}")
    if filename.lower().endswith(GZIP):
        data = gunzip(data)
    return parser(target, data)


def featurize_chunks(featurizer: Any, records: Sequence[Record],
                     chunk: int = CHUNK) -> Iterator[sp.csr_matrix]:
    """CSR rows of ``records`` by ``featurizer`` (``learners.features``), ``chunk`` records at a
    time, in order; IngestError naming the record whose raw item the featurizer refused."""
    for start in range(0, len(records), chunk):
        part = records[start:start + chunk]
        try:
            yield featurizer.transform([r.raw for r in part])
        except FeatureError as exc:
            where = part[exc.position].where if exc.position is not None else "an item"
            raise IngestError(f"{where}: {exc.reason}") from None
