"""HTML checked by parsing, not by substrings: a small element tree on the standard library's
``html.parser``, so that page assertions do not depend on template whitespace or attribute order.

``parse(text)`` returns the root :class:`Element`; ``root.find_all("button", **{"data-key": "s"})``
finds elements by tag and attribute values (``class_`` matches one class among several);
``element.text`` is the element's text with runs of whitespace collapsed to one space.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

#: Elements that never have an end tag.
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
                  "track", "wbr"})


@dataclass
class Element:
    """One element: tag, attributes (a valueless attribute maps to ""), children in order."""

    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Element | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text inside, whitespace runs collapsed to one space, stripped."""
        return " ".join("".join(self._texts()).split())

    @property
    def raw_text(self) -> str:
        """The text inside as written (whitespace kept, e.g. a ``<pre>``)."""
        return "".join(self._texts())

    def _texts(self) -> Iterator[str]:
        for child in self.children:
            if isinstance(child, str):
                yield child
            else:
                yield " " if child.tag in VOID else ""
                yield from child._texts()

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self) -> Iterator[Element]:
        """This element and every element below it, in document order."""
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag: str | None = None, *, class_: str | None = None, has: str | None = None,
                 **attrs: str) -> list[Element]:
        """Elements below (and including) this one with ``tag``, the class ``class_``, an attribute
        named ``has`` and the values ``attrs`` (names with ``-`` as ``**{"data-key": "s"}``)."""
        return [e for e in self.iter()
                if (tag is None or e.tag == tag) and (class_ is None or class_ in e.classes)
                and (has is None or has in e.attrs) and all(e.attrs.get(k) == v for k, v in attrs.items())]

    def find(self, tag: str | None = None, *, class_: str | None = None, has: str | None = None,
             **attrs: str) -> Element:
        """The one element that :meth:`find_all` returns (AssertionError for none or several)."""
        found = self.find_all(tag, class_=class_, has=has, **attrs)
        assert len(found) == 1, f"expected one <{tag or '*'} {class_ or ''} {attrs}>, found {len(found)}"
        return found[0]

    def by_id(self, id_: str) -> Element:
        return self.find(id=id_)

    def top_elements(self) -> list[Element]:
        """The element children of this one."""
        return [c for c in self.children if isinstance(c, Element)]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:  # close it and anything left open inside it
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def error_text(text: str | bytes) -> str:
    """The text of the page's error messages (elements of class ``error``), "" when none."""
    return " ".join(e.text for e in parse(text).find_all(class_="error"))


def parse(text: str | bytes) -> Element:
    """The element tree of an HTML page or fragment (root tag ``#document``)."""
    builder = _Builder()
    builder.feed(text.decode() if isinstance(text, bytes) else text)
    builder.close()
    return builder.root
