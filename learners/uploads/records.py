"""What every format parser returns, the error they raise, and where the items go."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .input_rules import text_problem

#: longest image file name kept with an item (the app's ``Item.filename`` column)
MAX_FILENAME_LENGTH = 255


class IngestError(ValueError):
    """An upload is refused; the message names the row (or archive entry) and the reason."""


class Target(Protocol):
    """What a parser needs to know about the items' destination.

    In the app it is the ``Project``; in the replay it is an :class:`OpenTarget`.
    item_kind: ``"text"``, ``"url"``, ``"image"`` or ``"vectors"``.
    classes: the declared class values, or None when any label is a class (replay).
    featurizer_config: the ``learners.features`` config (LIBSVM files read ``n_features``).
    parse_class: a label cell as a class value; ValueError naming the problem otherwise.
    """

    @property
    def item_kind(self) -> str: ...

    @property
    def featurizer_config(self) -> dict[str, Any]: ...

    @property
    def classes(self) -> Sequence[Any] | None: ...

    def parse_class(self, value: Any) -> Any: ...


@dataclass(frozen=True)
class OpenTarget:
    """A destination whose classes are whatever labels the file holds (the replay CLI).

    Labels are kept as stripped strings (``3`` in JSON becomes ``"3"``), as a CSV cell reads.
    """

    item_kind: str
    featurizer_config: dict[str, Any] = field(default_factory=dict)
    classes: None = None

    def parse_class(self, value: Any) -> str:
        return str(value).strip()


@dataclass(frozen=True)
class Record:
    """One parsed item, not yet featurized.

    where: the location for messages, e.g. ``line 7`` or ``digits/3/a.png``.
    raw: what the target's featurizer takes (str for text/URL, bytes for an image,
        ``[[index, value], ...]`` for vectors).
    gold: a class value of the target, or None.
    filename: the image's name inside the archive (images only).
    opinions: labels people already gave the item elsewhere, ``(class value, who)`` pairs
        (a Label Studio export's annotations); the app stores them as labels, the first one
        primary, with ``who`` kept as their provenance.
    ignored: the columns (or JSON keys) of the item's row that no rule reads
        (:mod:`.columns`), as the file names them; the import reports them.
    """

    where: str
    raw: Any
    gold: Any = None
    filename: str = ""
    opinions: tuple[tuple[Any, str], ...] = ()
    ignored: tuple[str, ...] = ()


def gold_of(target: Target, value: Any, where: str) -> Any:
    """``value`` as a class of ``target`` (None/empty -> None); IngestError naming ``where``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return target.parse_class(value.strip() if isinstance(value, str) else value)
    except ValueError as exc:
        raise IngestError(f"{where}: label {exc}") from None



def checked_filename(value: Any, where: str) -> str:
    """An image's file name as stored with its item; IngestError naming ``where`` when it is not
    a string, holds NUL or a lone surrogate, or is longer than :data:`MAX_FILENAME_LENGTH`."""
    if not isinstance(value, str):
        raise IngestError(f"{where}: the file name must be a string, got {type(value).__name__}")
    problem = text_problem(value, MAX_FILENAME_LENGTH)
    if problem:
        raise IngestError(f"{where}: the file name {problem}")
    return value


def record_text(value: Any, key: str, where: str) -> str:
    """``value`` (a text or URL under the field or column ``key``) when it is a non-empty string
    that can be stored as text; IngestError naming ``where`` and ``key`` otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise IngestError(f"{where}: {key!r} must be a non-empty string")
    problem = text_problem(value)
    if problem:
        raise IngestError(f"{where}: {key!r} {problem}")
    return value
