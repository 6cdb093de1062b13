"""What user-supplied text and JSON must satisfy before it reaches the database.

One definition, used by the upload parsers (here), and by the app's JSON API and forms:

* text never holds a NUL character (PostgreSQL text cannot store it) nor a lone surrogate
  (not valid Unicode: no database encoding can store it);
* a string bound for a ``CharField`` fits its ``max_length``;
* JSON from users that nests too deeply is refused (Python's parser recurses: a body nested
  100,000 deep ends in a ``RecursionError``);
* a number that looks a row up or is compared with a column (an id, a ``seq``, an ``after``)
  is a whole number within the column's range (:func:`whole_number`): SQLite cannot bind an
  integer beyond 64 bits at all, PostgreSQL refuses one beyond its column, and either would
  end in a 500.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_WHOLE = re.compile(r"[+-]?[0-9]+")
#: the largest value of a 64-bit signed integer column (PostgreSQL ``bigint``, SQLite ``INTEGER``):
#: every id of the app (``BigAutoField``) and every ``seq``
BIGINT_MAX = 2**63 - 1
#: the range of a row's id (ids start at 1)
ID_RANGE = (1, BIGINT_MAX)
#: digits beyond which a number is out of every range without being converted
_MAX_DIGITS = 30


def text_problem(value: str, max_length: int | None = None) -> str | None:
    """Why ``value`` cannot be stored as text (a short phrase), or None when it can."""
    if "\x00" in value:
        return "contains a NUL character"
    if _SURROGATE.search(value):
        return "contains a lone surrogate (not valid Unicode)"
    if max_length is not None and len(value) > max_length:
        return f"is {len(value)} characters long, at most {max_length} allowed"
    return None


def checked_text(value: str, what: str, max_length: int | None = None) -> str:
    """``value`` unchanged; ValueError ``"<what> <problem>"`` when :func:`text_problem` finds one."""
    problem = text_problem(value, max_length)
    if problem:
        raise ValueError(f"{what} {problem}")
    return value


def parse_json(text: str | bytes, what: str = "the body") -> Any:
    """The JSON value of ``text``; ValueError ``"<what>: <problem>"`` when it is not UTF-8 JSON
    or nests too deeply. Strings inside may still hold NUL or lone surrogates (``"\\u0000"``,
    ``"\\ud800"``): check the ones stored with :func:`checked_text`."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{what}: not valid UTF-8") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise ValueError(f"{what}: invalid JSON ({exc.msg} at {where})") from None
    except RecursionError:  # the C parser stops at Python's recursion limit (~1000 levels)
        raise ValueError(f"{what}: JSON nested too deeply") from None
    return value


def whole_number(value: object, what: str, low: int = ID_RANGE[0], high: int = ID_RANGE[1]) -> int:
    """``value`` as an int within ``[low, high]`` (default :data:`ID_RANGE`, an id); ValueError
    ``"<what> must be a whole number from <low> to <high>, not <value>"`` otherwise.

    ``value``: the text of a query string, form field or URL part (ASCII digits with an optional
    sign, spaces around allowed: not ``""``, ``"1e3"``, ``"1.0"``, ``"1_000"`` or other scripts'
    digits), or a JSON number that is an integer (not a bool, not ``1.0``).
    """
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        digits = value.strip().lstrip("+-").lstrip("0")
        number = int(value) if len(digits) <= _MAX_DIGITS else None
    if number is None or not low <= number <= high:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise ValueError(f"{what} must be a whole number from {low} to {high}, not {shown}")
    return number
