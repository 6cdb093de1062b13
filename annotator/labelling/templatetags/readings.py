"""Template filters that say figures the way people read them (the dashboard; agreement: docs/teams.md):
``percent`` (0.672 -> "67.2%") and ``agreement_band`` (Landis-Koch: 0.35 -> "fair"); and
``doc_links``, which turns the names of the project's documents in a text ("docs/teams.md") into
links to the app's help pages, so that a browser user can open them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django import template
from django.conf import settings
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

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


#: a document's name in a text: ``docs/<name>.md``
DOC_MENTION = re.compile(r"docs/([A-Za-z_]+(?:/[A-Za-z_]+)?)\.md")


@register.filter
def doc_links(text: Any) -> SafeString:
    """``text`` escaped, each ``docs/<name>.md`` of an existing document a link to its help page."""
    def link(match: re.Match[str]) -> str:
        if not (Path(settings.BASE_DIR) / "docs" / f"{match.group(1)}.md").is_file():
            return match.group(0)
        return str(format_html('<a href="{}">{}</a>', reverse("help", args=[match.group(1)]), match.group(0)))
    return mark_safe(DOC_MENTION.sub(link, str(conditional_escape(text))))  # escaped above
