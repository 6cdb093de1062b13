"""One declared parameter of a learner or a featurizer: type, default, range and help.

The console's forms, the replay CLI's ``--param`` / ``--grid`` and :func:`learners.make` all
validate through :meth:`Param.validate`, so a bound is written once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    """One learner parameter.

    kind: ``float``, ``int``, ``str`` or ``bool``.
    low / high: numeric bounds (None = unbounded); ``low_open`` / ``high_open`` say whether
        the bound itself is excluded. ``choices``: allowed values for ``str`` parameters.
    log: the parameter is naturally searched on a log scale (grids, sliders).
    """

    name: str
    default: Any
    kind: type
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    log: bool = False

    def range_text(self) -> str:
        """Human-readable valid range, e.g. ``> 0`` or ``one of 'full', 'diagonal'``."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind is bool:
            return "true or false"
        def number(v: float) -> str:  # an integer bound in full (2147483647, not 2.14748e+09)
            return str(int(v)) if self.kind is int else f"{v:g}"

        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {number(self.low)}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {number(self.high)}")
        kind = "an integer" if self.kind is int else "a number"
        return f"{kind} " + " and ".join(parts) if parts else kind

    def validate(self, value: Any) -> Any:
        """Return ``value`` converted to ``kind``; ValueError naming the parameter and range."""
        bad = ValueError(f"{self.name} must be {self.range_text()} (got {value!r})")
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
                return value.lower() in ("true", "1", "yes")
            raise bad
        if self.kind is str:
            if not isinstance(value, str) or (self.choices is not None and value not in self.choices):
                raise bad
            return value
        if isinstance(value, bool):
            raise bad
        try:
            num = float(value)
        except (TypeError, ValueError):
            raise bad from None
        if not math.isfinite(num):
            raise bad
        if self.kind is int:
            if num != int(num):
                raise bad
            num = int(num)
        if self.low is not None and (num < self.low or (self.low_open and num == self.low)):
            raise bad
        if self.high is not None and (num > self.high or (self.high_open and num == self.high)):
            raise bad
        return num

    def describe(self) -> dict[str, Any]:
        """JSON-able description for forms and ``--help`` output."""
        return {
            "name": self.name, "default": self.default, "type": self.kind.__name__,
            "help": self.help, "range": self.range_text(), "low": self.low, "high": self.high,
            "choices": list(self.choices) if self.choices else None, "log": self.log,
        }
