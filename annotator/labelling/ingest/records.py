"""What every format parser returns, and the error they raise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..input_rules import text_problem
from ..models import Item


class IngestError(ValueError):
    """An upload is refused; the message names the row (or archive entry) and the reason."""


@dataclass(frozen=True)
class Record:
    """One parsed item, not yet featurized.

    where: the location for messages, e.g. ``line 7`` or ``digits/3/a.png``.
    raw: what the project's featurizer takes (str for text/URL, bytes for an image,
        ``[[index, value], ...]`` for vectors).
    gold: a class value of the project, or None.
    filename: the image's name inside the archive (images only).
    """

    where: str
    raw: Any
    gold: Any = None
    filename: str = ""


def gold_of(project: Any, value: Any, where: str) -> Any:
    """``value`` as a class of ``project`` (None/empty -> None); IngestError naming ``where``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return project.parse_class(value.strip() if isinstance(value, str) else value)
    except ValueError as exc:
        raise IngestError(f"{where}: label {exc}") from None


def checked_filename(value: Any, where: str) -> str:
    """An image's file name as stored on its item; IngestError naming ``where`` when it is not a
    string, holds NUL or a lone surrogate, or is longer than the item's ``filename`` field."""
    if not isinstance(value, str):
        raise IngestError(f"{where}: the file name must be a string, got {type(value).__name__}")
    problem = text_problem(value, Item._meta.get_field("filename").max_length)
    if problem:
        raise IngestError(f"{where}: the file name {problem}")
    return value
