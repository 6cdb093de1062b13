"""The project's documentation inside the app: ``GET help/<path>`` shows ``docs/<path>.md`` (a file
of the repository's docs/ folder, or of docs/algorithms/) as text, so that the pages' help links
open for a browser user. Any logged-in user; a name outside docs/ is a 404."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .request import AppRequest

DOCS = Path(settings.BASE_DIR) / "docs"


def doc_names() -> list[str]:
    """The documents that can be shown: ``docs/**/*.md`` relative to docs/, without ``.md``."""
    return sorted(str(p.relative_to(DOCS).with_suffix("")) for p in DOCS.rglob("*.md"))


@login_required
@require_GET
def help_page(request: AppRequest, name: str) -> HttpResponse:
    """``docs/<name>.md`` as a page (its text, preformatted); 404 for any other name."""
    if name not in doc_names():
        raise Http404("no such document")
    text = (DOCS / f"{name}.md").read_text(encoding="utf-8")
    return render(request, "labelling/help.html", {"name": name, "text": text, "names": doc_names()})
