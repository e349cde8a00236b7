"""What a person reads on a page, and the protocol words that must not be in it (issue 34 §6).

The visible text of a page is its text nodes and the attributes people are shown (a hover
``title``, an ``aria-label`` read aloud, a ``placeholder``, an image's ``alt``, a button's
``value``), without scripts, styles, templates and ``hidden`` elements, without the
collapsed ``<details class="technical-details">`` blocks where codes and R-IDs belong, and
without what a ``<textarea>`` holds (the person's own text, or a contract they edit).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
#: elements whose content nobody reads on the page
UNREAD = frozenset({"script", "style", "template", "noscript", "head"})
#: attributes a person is shown or told
SPOKEN = ("title", "aria-label", "placeholder", "alt")

#: what a person must not read: an R-ID, a wire.md section, an UPPER_CASE error code, the
#: protocol's ``epoch``, a raw principal, a wire token with its underscore
JARGON = {
    "requirement id": re.compile(r"\bR\d+(\.\d+)?-\d\d\b"),
    "wire section": re.compile(r"wire\s*§"),
    "error code": re.compile(r"(?<![\w-])[A-Z]{3,}(?:_[A-Z]+)+(?![\w-])"),
    "protocol term": re.compile(r"\bepochs?\b", re.IGNORECASE),
    "raw principal": re.compile(r"(?<![\w-])(?:user|agent):[\w.@+-]"),
    # a role, a budget dimension or a verdict as the wire spells it ("mission owner", "wall
    # clock" on screen)
    "protocol token": re.compile(
        r"\b(?:mission_owner|wall_clock|tool_calls|side_effects|needs_changes|"
        r"execution_approval|result_accepted|fail_parent|block_parent|retries_exhausted|"
        r"changes_requested)\b"
    ),
}


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, hides its content)
        self.pieces: list[str] = []

    @property
    def hidden(self) -> bool:
        return any(hides for _tag, hides in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        hides = (
            tag in UNREAD
            or "hidden" in values
            or (tag == "details" and "technical-details" in classes)
            or (tag == "input" and values.get("type") == "hidden")
        )
        if not self.hidden and not hides:
            self.pieces.extend(str(values[name]) for name in SPOKEN if values.get(name))
            if (
                tag == "input"
                and values.get("type") in {"submit", "button"}
                and values.get("value")
            ):
                self.pieces.append(str(values["value"]))
        if tag not in VOID:
            # a field's text is what the person typed or edits (a contract's JSON), not the
            # page's words; its placeholder and label are read above
            self.stack.append((tag, hides or tag == "textarea"))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        # close up to the matching open tag (HTML lets some end tags be left out)
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] == tag:
                del self.stack[index:]
                return

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.pieces.append(data)


def visible_text(html: str) -> str:
    """The text a person reads on ``html``, whitespace collapsed."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return re.sub(r"\s+", " ", " ".join(reader.pieces)).strip()


def jargon_in(html: str) -> list[tuple[str, str]]:
    """Each protocol word a person would read on ``html``: (what it is, the words around it)."""
    text = visible_text(html)
    found = []
    for kind, pattern in JARGON.items():
        for match in pattern.finditer(text):
            start, end = max(0, match.start() - 50), match.end() + 50
            found.append((kind, text[start:end]))
    return found
