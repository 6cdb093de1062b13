"""The project's documentation inside the app: ``GET help/<path>`` shows ``docs/<path>.md`` (a file
of the repository's docs/ folder, or of docs/algorithms/) rendered from Markdown to HTML, so that
the pages' help links open for a browser user. Any logged-in user; a name outside docs/ is a 404.

Only the repository's own files are rendered (never user input), and with raw HTML off: a ``<tag>``
in a document shows as text. Links between documents lead to their help pages; a link to a file
outside docs/ (a benchmark report, the README) shows its path as text, since the app serves no
such file. Tables scroll sideways in a focusable region on a narrow screen."""

from __future__ import annotations

import posixpath
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET
from markdown_it import MarkdownIt
from markdown_it.token import Token

from .request import AppRequest

DOCS = Path(settings.BASE_DIR) / "docs"


def doc_names() -> list[str]:
    """The documents that can be shown: ``docs/**/*.md`` relative to docs/, without ``.md``."""
    return sorted(str(p.relative_to(DOCS).with_suffix("")) for p in DOCS.rglob("*.md"))


def _relink(tokens: list[Token], name: str, names: set[str]) -> None:
    """Point the relative ``.md`` links of document ``name`` at their help pages; turn a relative
    link to a file the app does not serve into its text and path (in place)."""
    folder = posixpath.dirname(name)
    for token in tokens:
        for child in token.children or []:
            href = str(child.attrGet("href") or "")
            if child.type != "link_open" or not href or "://" in href or href.startswith(("#", "mailto:")):
                continue
            path, _, anchor = href.partition("#")
            target = posixpath.normpath(posixpath.join(folder, path))
            if path.endswith(".md") and target[:-3] in names:
                child.attrSet("href", reverse("help", args=[target[:-3]]) + (f"#{anchor}" if anchor else ""))
            else:  # outside docs/: the text, then the repository path it names
                children = token.children or []
                close = next(c for c in children[children.index(child):] if c.type == "link_close")
                child.type, child.tag, child.attrs = "html_inline", "", {}
                child.content = '<span class="doc-path">'
                close.type, close.tag = "html_inline", ""
                close.content = f' <code>{escape(target)}</code></span>'


def _scroll_tables(tokens: list[Token]) -> list[Token]:
    """``tokens`` with each table wrapped in a region that scrolls sideways on a narrow screen
    (focusable, so that a keyboard can scroll it)."""
    out: list[Token] = []
    for token in tokens:
        if token.type == "table_open":
            out.append(Token("html_block", "", 0, content='<div class="doc-table" tabindex="0" role="region" '
                                                          'aria-label="table (scrolls sideways)">\n'))
        out.append(token)
        if token.type == "table_close":
            out.append(Token("html_block", "", 0, content="</div>\n"))
    return out


@lru_cache(maxsize=64)
def _render(name: str, mtime: float) -> SafeString:
    """``docs/<name>.md`` as HTML (cached per file version: ``mtime``)."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse((DOCS / f"{name}.md").read_text(encoding="utf-8"))
    _relink(tokens, name, set(doc_names()))
    # raw HTML is off: the only tags are the renderer's and those above
    return mark_safe(md.renderer.render(_scroll_tables(tokens), md.options, {}))


@login_required
@require_GET
def help_page(request: AppRequest, name: str) -> HttpResponse:
    """``docs/<name>.md`` rendered as a page; 404 for any other name."""
    if name not in doc_names():
        raise Http404("no such document")
    html = _render(name, (DOCS / f"{name}.md").stat().st_mtime)
    return render(request, "labelling/help.html", {"name": name, "html": html, "names": doc_names()})
