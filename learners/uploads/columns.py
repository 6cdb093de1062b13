"""Which columns (CSV, Parquet) or keys (JSONL) of an upload a project reads: one definition
for the parsers, the upload page's help and the import's report (docs/uploads.md).

By the project's item kind, the content is the first of :data:`CONTENT_COLUMNS` present; the
known class (optional) the first of :data:`GOLD_KEYS`; an image's name :data:`FILENAME_COLUMN`
(Parquet). Names match in any case. Every other column is ignored, and :func:`pick` says which,
so that the import can tell the admin (a class column named ``category`` is not read).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: the content column of each item kind, in order of preference
CONTENT_COLUMNS = {"text": ("text",), "url": ("url", "text"), "image": ("image",), "vectors": ("vector",)}
#: the column giving the known class (an empty cell or null: unknown)
GOLD_KEYS = ("label", "gold")
#: an image's file name (Parquet uploads of images)
FILENAME_COLUMN = "filename"


@dataclass(frozen=True)
class Columns:
    """The columns of a file (as it names them) that a project reads, and the ones it ignores.

    content: None when the file has none of the kind's content columns (the parser refuses it).
    """

    content: str | None
    gold: str | None
    filename: str | None
    ignored: tuple[str, ...]


def pick(kind: str, names: Iterable[str]) -> Columns:
    """The columns of ``names`` (a header, a JSON object's keys, a Parquet schema) that a project
    of item ``kind`` reads, matched in any case, and the others, in file order."""
    names = list(names)
    lower: dict[str, str] = {}
    for name in names:  # a name already in lower case wins over its other spellings
        if name == name.lower():
            lower[name] = name
        else:
            lower.setdefault(name.lower(), name)

    def first(keys: Iterable[str]) -> str | None:
        return next((lower[k] for k in keys if k in lower), None)

    content = first(CONTENT_COLUMNS.get(kind, ()))
    gold = first(GOLD_KEYS)
    filename = lower.get(FILENAME_COLUMN) if kind == "image" else None
    used = {content, gold, filename}
    return Columns(content, gold, filename, tuple(n for n in names if n not in used))
