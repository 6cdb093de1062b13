"""The HTML parser the page tests use (tests/support/html.py) on a fragment made by hand."""

from __future__ import annotations

import pytest

from tests.support.html import parse

FRAGMENT = """<section id="s" class="a b" hx-get="/x">
  <p>one
     <b>two</b><br>three</p><img src="i.png" alt=x>
  <ul><li>first</li><li>second</ul>
  <button type="submit" data-key="s"><kbd>s</kbd> Skip</button>
</section>"""


def test_tree_text_and_lookups():
    root = parse(FRAGMENT)
    section = root.by_id("s")
    assert [e.tag for e in root.top_elements()] == ["section"] and section.classes == {"a", "b"}
    assert section.find("p").text == "one two three"  # whitespace collapsed, <br> is a space
    assert section.find("img").attrs == {"src": "i.png", "alt": "x"}  # void: no children
    assert section.find("button", **{"data-key": "s"}).text == "s Skip"
    assert [li.text for li in section.find_all("li")] == ["first", "second"]  # </ul> closes the open <li>
    assert len(section.find_all(has="hx-get")) == 1 and not section.find_all("a")


def test_find_insists_on_exactly_one():
    root = parse(FRAGMENT)
    with pytest.raises(AssertionError, match="found 0"):
        root.find("table")
