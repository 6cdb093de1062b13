"""Template filters that say figures the way people read them (the dashboard; agreement: docs/teams.md):
``percent`` (0.672 -> "67.2%") and ``agreement_band`` (Landis-Koch: 0.35 -> "fair")."""

from __future__ import annotations

from typing import Any

from django import template

from annotator.labelling.teams.agreement import agreement_band as _band

register = template.Library()


@register.filter
def percent(value: Any, digits: int = 1) -> str:
    """A ratio in [0, 1] (or any number) as a percentage with ``digits`` decimals; "–" for None
    or a value that is not a number."""
    try:
        return f"{float(value) * 100:.{int(digits)}f}%"
    except (TypeError, ValueError):
        return "–"


@register.filter
def agreement_band(value: Any) -> str:
    """:func:`.agreement.agreement_band` of a kappa or alpha ("" when undefined)."""
    try:
        return _band(None if value is None else float(value))
    except (TypeError, ValueError):
        return ""
