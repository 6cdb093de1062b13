"""ZIP archives of images.

Every file with an image extension becomes an item, in archive order. The known class
(optional) comes from ``labels.csv`` at the archive root when present (columns ``filename``
and ``label``; ``filename`` is the path inside the archive; an empty label = unknown; every
image must be listed), otherwise from the name of the image's folder when that name is one
of the classes (``3/img01.png`` -> class 3; any folder name when the target declares no
classes); images elsewhere have no known class.

Refused: unreadable archives, absolute or ``..`` entry names, encrypted entries, and
archives whose declared sizes exceed the limits (zip bombs): one image above
``MAX_IMAGE_BYTES`` or a declared total above ``MAX_TOTAL_BYTES``. The declared sizes are
binding: Python's zipfile stops at the declared size and checks the CRC.

A ZIP is read by random access from a seekable file (the central directory is at its end),
then one image at a time (:func:`iter_zip`): memory holds one image, the archive's directory
and the manifest's labels, never the archive.
"""

from __future__ import annotations

import csv
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from .lines import text_lines
from .records import IngestError, Record, Target, checked_filename, gold_of

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff")
MANIFEST = "labels.csv"
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_TOTAL_BYTES = 1024 * 1024 * 1024


def _check_name(name: str) -> None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise IngestError(f"{name}: unsafe path in archive")


def _manifest(target: Target, zf: zipfile.ZipFile) -> dict[str, Any] | None:
    if MANIFEST not in zf.namelist():
        return None
    with zf.open(MANIFEST) as fh:
        reader = csv.DictReader(line for _, line in text_lines(fh))
        try:
            return _labels(target, reader)
        except csv.Error as exc:
            raise IngestError(f"{MANIFEST} line {reader.line_num}: {exc}") from None
        except IngestError as exc:
            message = str(exc)
            raise IngestError(message if message.startswith(MANIFEST) else f"{MANIFEST} {message}") from None


def _labels(target: Target, reader: csv.DictReader[str]) -> dict[str, Any]:
    if not reader.fieldnames or not {"filename", "label"} <= {f.strip().lower() for f in reader.fieldnames}:
        raise IngestError(f"{MANIFEST} line 1: the header must have 'filename' and 'label' columns")
    out = {}
    for row in reader:
        row = {k.strip().lower(): v for k, v in row.items() if k}
        where = f"{MANIFEST} line {reader.line_num}"
        name = (row.get("filename") or "").strip()
        if name in out:
            raise IngestError(f"{where}: {name!r} is listed twice (each image once)")
        out[name] = gold_of(target, row.get("label"), where)
    return out


def _folder_class(target: Target, folder: str, where: str) -> Any:
    """The class named by an image's folder, or None (no folder, or not one of the classes)."""
    if target.classes is None:
        return gold_of(target, folder, where) if folder else None
    return gold_of(target, folder, where) if folder in map(str, target.classes) else None


def _is_image(info: zipfile.ZipInfo) -> bool:
    parts = PurePosixPath(info.filename).parts
    hidden = any(p.startswith(".") or p == "__MACOSX" for p in parts)
    return not info.is_dir() and not hidden and info.filename.lower().endswith(IMAGE_SUFFIXES)


def iter_zip(target: Target, fh: BinaryIO) -> Iterator[Record]:
    """Records of a ZIP of images read from the seekable ``fh`` (module docstring); IngestError
    naming the entry otherwise."""
    if target.item_kind != "image":
        raise IngestError(f"ZIP uploads hold images, not {target.item_kind} items")
    try:
        yield from _archive(target, fh)
    except IngestError:
        raise
    except CORRUPT as exc:  # zipfile raises these (even IndexError) on damaged directories
        raise IngestError(f"not a readable ZIP archive ({type(exc).__name__}: {exc})") from None


#: what Python's zipfile raises on a damaged archive besides BadZipFile (found by fuzzing)
CORRUPT = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, IndexError,
           ValueError, KeyError, NotImplementedError, RuntimeError)


def _archive(target: Target, fh: BinaryIO) -> Iterator[Record]:
    with zipfile.ZipFile(fh) as zf:
        infos = zf.infolist()
        total = 0
        names: set[str] = set()
        for info in infos:
            _check_name(info.filename)
            if info.filename in names:  # zipfile keeps both: they would become two items
                raise IngestError(f"{info.filename}: the archive holds this entry twice")
            names.add(info.filename)
            if info.flag_bits & 0x1:
                raise IngestError(f"{info.filename}: encrypted entries are not supported")
            if info.file_size > MAX_IMAGE_BYTES:
                raise IngestError(f"{info.filename}: declared size {info.file_size} bytes exceeds "
                                  f"{MAX_IMAGE_BYTES}")
            total += info.file_size
        if total > MAX_TOTAL_BYTES:
            raise IngestError(f"archive declares {total} bytes uncompressed, more than {MAX_TOTAL_BYTES}")
        manifest = _manifest(target, zf)
        empty = True
        for info in filter(_is_image, infos):
            name = info.filename
            try:
                raw = zf.read(info)
            except CORRUPT as exc:
                raise IngestError(f"{name}: cannot be read from the archive ({exc})") from None
            if manifest is not None:
                if name not in manifest:
                    raise IngestError(f"{name}: not listed in {MANIFEST}")
                gold = manifest[name]
            else:
                gold = _folder_class(target, PurePosixPath(name).parent.name, name)
            yield Record(name, raw, gold, filename=checked_filename(PurePosixPath(name).name, name))
            empty = False
    if empty:
        raise IngestError("the archive holds no images (" + ", ".join(IMAGE_SUFFIXES) + ")")
