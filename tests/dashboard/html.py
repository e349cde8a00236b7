"""Just enough HTML reading for page tests: one element by attribute, and its visible text.

The standard library's parser, so the tests need no extra package; pages are our own
well-formed templates.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"})


class _Finder(HTMLParser):
    def __init__(self, html: str, attr: str, value: str) -> None:
        super().__init__(convert_charrefs=False)
        self.attr, self.value = attr, value
        self.line_starts = [0]
        for line in html.split("\n"):  # the parser counts lines by "\n" only
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)
        self.start: int | None = None
        self.depth = 0
        self.end: int | None = None

    def _offset(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.end is not None or tag in VOID:
            return
        if self.start is None:
            if dict(attrs).get(self.attr) == self.value:
                self.start, self.depth = self._offset(), 1
        else:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.start is None or self.end is not None or tag in VOID:
            return
        self.depth -= 1
        if self.depth == 0:
            self.end = self._offset() + len(f"</{tag}>")


def element(html: str, attr: str, value: str) -> str:
    """The outer HTML of the first element whose ``attr`` is ``value``; AssertionError if none."""
    finder = _Finder(html, attr, value)
    finder.feed(html)
    assert finder.start is not None, f'no element with {attr}="{value}"'
    assert finder.end is not None, f'the element with {attr}="{value}" is not closed'
    return html[finder.start : finder.end]


def text(html: str) -> str:
    """Visible text, whitespace collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def without_details(html: str) -> str:
    """``html`` without its collapsed technical details (codes and R-IDs live there)."""
    return re.sub(r'<details class="technical-details">.*?</details>', " ", html, flags=re.S)


def not_sent(html: str) -> str:
    """Why a form was not acted on, in words: the page's not-sent box, its technical details
    left out."""
    return text(without_details(element(html, "id", "not-sent")))
