"""How an artifact's bytes are shown: pure functions from bytes or text to what a template
renders, safe for content anyone wrote.

Nothing here reads storage or the database (``previews`` reads, verifies and decides which of
these applies). Only :func:`render_markdown` produces markup, and it is safe by construction:
raw HTML is off (so ``<script>`` or ``<img onerror>`` in the source stay text), a link is kept
only for http(s), mailto or a relative URL, and an image is never fetched (it becomes a link
to its address). Tables, JSON and diffs come back as data, which the template escapes.

Every function has a size limit of its own, measured on this kind of machine: a Markdown
source built to be slow (200k ``[``) costs markdown-it ~11 µs a character, so rendering stops
at :data:`MARKDOWN_BYTES`; difflib on 3,000 lines with a change every seventh line ~0.25 s,
so a diff stops at :data:`DIFF_LINES`.
"""

from __future__ import annotations

import codecs
import csv
import difflib
import io
import json
import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from missionweave.protocol.artifacts.manifests import DEFAULT_MEDIA_TYPE

#: Markdown longer than this is shown as text (worst case ~0.7 s of rendering at this size)
MARKDOWN_BYTES = 64 * 1024
#: a CSV preview shows its header and this many rows
CSV_ROWS = 200
#: …and this many columns
CSV_COLUMNS = 50
#: a cell longer than this is cut (the whole file is one download away)
CELL_CHARS = 500
#: a diff compares at most this many lines a side…
DIFF_LINES = 2000
#: …and shows at most this many lines of its result
DIFF_SHOWN = 1000

#: (magic bytes at offset 0, media type): the only images a page shows inline. SVG is not one:
#: it can carry script, so it is shown as text.
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

#: what a spreadsheet would read as the start of a formula (CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


# --- sniffing -----------------------------------------------------------------------------


#: application types that are text (``text/*`` and ``+xml`` are as well); SVG among them:
#: it is shown as its source, never drawn, because it can carry script
TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/xml",
        "application/javascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "image/svg+xml",
    }
)
#: types that say nothing: the bytes are sniffed instead
UNNAMED_TYPES = frozenset({"", DEFAULT_MEDIA_TYPE})


def is_json_type(media_type: str) -> bool:
    return media_type == "application/json" or media_type.endswith("+json")


def is_text_type(media_type: str) -> bool:
    """A type shown as text: ``text/*``, ``+xml``, or one of ``TEXT_APPLICATION_TYPES``."""
    return (
        media_type.startswith("text/")
        or media_type.endswith("+xml")
        or media_type in TEXT_APPLICATION_TYPES
    )


def image_type(head: bytes) -> str | None:
    """The media type of a PNG, JPEG, GIF or WebP by its magic bytes, else ``None``."""
    for magic, media_type in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def decode_text(data: bytes, *, complete: bool) -> str | None:
    """``data`` as UTF-8 text, or ``None`` when it is not (or holds a NUL: a binary format).

    A prefix of a longer object (``complete`` false) may end inside a character: that tail is
    left out rather than counted against it."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    return text.removeprefix("\ufeff")


def parse_json(text: str) -> Any:
    """The JSON document ``text``; ``ValueError`` when it is not one (or too deep to show)."""
    try:
        return json.loads(text)
    except RecursionError as too_deep:
        raise ValueError("nested too deeply") from too_deep


def pretty_json(text: str) -> str | None:
    """``text`` re-indented by two, keys in their order; ``None`` when it is not JSON."""
    try:
        return json.dumps(parse_json(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return None


def looks_like_json(text: str) -> bool:
    """Conservative sniffing: an object or an array that parses, nothing looser."""
    start = text.lstrip()[:1]
    if start not in {"{", "["}:
        return False
    try:
        parse_json(text)
    except ValueError:
        return False
    return True


# --- Markdown -----------------------------------------------------------------------------


def safe_link(url: str) -> bool:
    """Whether a Markdown link may point at ``url``: http(s), mailto or relative only.

    markdown-it has already normalised it (entities decoded, unsafe characters
    percent-encoded), so ``java&#x09;script:`` arrives as ``java%09script:``, which has no
    scheme and is harmless as a relative path."""
    scheme = _SCHEME.match(url.strip())
    return scheme is None or scheme.group(1).lower() in _SAFE_SCHEMES


def _link_open(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """Links from an artifact never pass on who followed them, nor control the opener."""
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return renderer.renderToken(tokens, idx, options, env)


def _image(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image is never fetched: reviewers' browsers do not call out to addresses an
    artifact chose. It becomes a link to its (already validated) address."""
    token = tokens[idx]
    alt = renderer.renderInlineAsText(token.children or [], options, env) or "image"
    escape = _escape_html
    src = token.attrGet("src") or ""
    label = f"image: {escape(alt)}"
    if not src:
        return f'<span class="preview-md__image">[{label}]</span>'
    return (
        f'<a class="preview-md__image" href="{escape(str(src))}" '
        f'rel="nofollow noopener noreferrer">[{label}]</a>'
    )


def _escape_html(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def _demote_headings_and_scope_headers(state: Any) -> None:
    """An artifact's ``#`` heading sits under the page's own ``h1``/``h2``: shift its levels
    by two (at most ``h6``) so the page outline stays right; table headers get a scope."""
    for token in state.tokens:
        if token.type in {"heading_open", "heading_close"}:
            level = min(6, int(token.tag[1]) + 2)
            token.tag = f"h{level}"
        elif token.type == "th_open":
            token.attrSet("scope", "col")


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = safe_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    md.core.ruler.push("mw_demote_headings", _demote_headings_and_scope_headers)
    return md


_MD = _markdown()


def render_markdown(text: str) -> str:
    """HTML for the Markdown ``text``; see the module's docstring for why it is safe."""
    return _MD.render(text)


# --- CSV ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    #: it starts like a spreadsheet formula: shown as text (which it is here), flagged
    formula: bool = False
    #: cut at :data:`CELL_CHARS`
    cut: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    header: tuple[Cell, ...]
    rows: tuple[tuple[Cell, ...], ...]
    #: rows after the ones shown (counted in what was read)
    more_rows: int
    #: columns after the ones shown
    more_columns: int
    #: the preview read only part of the file: there may be more rows than ``more_rows``
    partial: bool


def _cell(value: str) -> Cell:
    formula = value.startswith(_FORMULA_START) and _NUMBER.fullmatch(value.strip()) is None
    if len(value) > CELL_CHARS:
        return Cell(value[:CELL_CHARS], formula, cut=True)
    return Cell(value, formula)


def csv_table(text: str, *, complete: bool, delimiter: str = ",") -> Table | None:
    """The first rows of the CSV ``text`` as a table; ``None`` when it does not parse.

    From a prefix of the file (``complete`` false) the last line may be cut short, so it is
    dropped rather than shown wrong."""
    if not complete:
        text = text[: text.rfind("\n") + 1]
    try:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        header_row = next(reader, None)
        if header_row is None:
            return None
        width = len(header_row)
        rows: list[tuple[Cell, ...]] = []
        more_rows = 0
        for row in reader:
            width = max(width, len(row))
            if len(rows) < CSV_ROWS:
                rows.append(tuple(_cell(v) for v in row[:CSV_COLUMNS]))
            else:
                more_rows += 1
    except csv.Error:
        return None
    shown = min(width, CSV_COLUMNS)
    header = tuple(_cell(v) for v in header_row[:shown])
    header += tuple(Cell("") for _ in range(shown - len(header)))
    padded = tuple(row + tuple(Cell("") for _ in range(shown - len(row))) for row in rows)
    return Table(header, padded, more_rows, width - shown, partial=not complete)


# --- diff ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiffLine:
    #: ``added``, ``removed``, ``context`` or ``hunk`` (an ``@@`` separator)
    kind: str
    old: int | None
    new: int | None
    text: str

    @property
    def sign(self) -> str:
        return {"added": "+", "removed": "-", "context": " "}.get(self.kind, "")


@dataclass(frozen=True, slots=True)
class Diff:
    lines: tuple[DiffLine, ...]
    added: int
    removed: int
    #: lines of the diff after the ones shown
    more_lines: int

    @property
    def identical(self) -> bool:
        return not self.added and not self.removed


def unified_diff(old: str, new: str, *, context: int = 3) -> Diff | None:
    """``old`` → ``new`` line by line as difflib's unified diff, with line numbers; ``None``
    when either side is longer than :data:`DIFF_LINES` (too slow to compare on a page)."""
    before, after = old.splitlines(), new.splitlines()
    if len(before) > DIFF_LINES or len(after) > DIFF_LINES:
        return None
    lines: list[DiffLine] = []
    added = removed = total = 0
    old_no = new_no = 0
    for raw in difflib.unified_diff(before, after, lineterm="", n=context):
        if raw.startswith(("---", "+++")) and not lines and total == 0:
            continue  # the two file headers
        total += 1
        hunk = _HUNK.match(raw)
        if hunk:
            old_no, new_no = int(hunk.group(1)), int(hunk.group(2))
            line = DiffLine("hunk", None, None, raw)
        elif raw.startswith("+"):
            added += 1
            line = DiffLine("added", None, new_no, raw[1:])
            new_no += 1
        elif raw.startswith("-"):
            removed += 1
            line = DiffLine("removed", old_no, None, raw[1:])
            old_no += 1
        else:
            line = DiffLine("context", old_no, new_no, raw[1:])
            old_no += 1
            new_no += 1
        if len(lines) < DIFF_SHOWN:
            lines.append(line)
    return Diff(tuple(lines), added, removed, max(0, total - len(lines)))
