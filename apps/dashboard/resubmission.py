"""What changed between a WorkItem's previous submission and the one under review (issue 37
§6): output by output, in words a reviewer reads — the way a code review shows "changes since
your last review".

A reviewer who sent a result back wants to see whether the worker did what was asked, not
judge the whole result again from nothing (R13.2-03: the new submission is reviewed afresh,
so every criterion is judged again; this only says where to look). Pure functions from the
two submissions' outputs — name, digest, media type and the bytes read (``resubmission_reads``
reads them, verified, R13.1-05) — to a :class:`OutputChange` per output:

- unchanged (same digest), changed, new, removed;
- a changed text output: a line diff (``preview_formats.unified_diff``, bounded by its
  :data:`~apps.dashboard.preview_formats.DIFF_LINES`/``DIFF_SHOWN``);
- a changed JSON output: the values added, removed and changed, by path (``$.findings[2]``),
  at most :data:`JSON_CHANGES` of them;
- anything else: only that the bytes differ (the digests in the technical details).

A side larger than the comparison limit, not stored, or corrupted is not compared, and the
card says why. Nothing here reads storage or the database.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from . import preview_formats as formats
from .preview_formats import Diff

UNCHANGED = "unchanged"
CHANGED = "changed"
NEW = "new"
REMOVED = "removed"

TEXT = "text"
JSON = "json"
BINARY = "binary"

#: a JSON comparison lists at most this many changed paths
JSON_CHANGES = 200
#: a value shown in a JSON change is cut after this many characters
JSON_VALUE_CHARS = 160
#: nesting deeper than this is compared as one value
JSON_DEPTH = 64
#: lists longer than this are compared index by index, not aligned (difflib is quadratic)
JSON_ALIGN_ITEMS = 2000

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --- what is compared ------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One submission's artifact for an output, as read (or why it was not read)."""

    digest: str
    media_type: str = ""
    size: int | None = None
    #: the verified bytes, ``None`` when they were not read (``why_not`` says why)
    data: bytes | None = None
    why_not: str = ""


@dataclass(frozen=True)
class JsonChange:
    """One value added, removed or changed, at its path in the document."""

    path: str
    kind: str  # added, removed, changed
    before: str = ""  # compact JSON, cut at JSON_VALUE_CHARS
    after: str = ""


@dataclass(frozen=True)
class JsonDiff:
    changes: tuple[JsonChange, ...]
    #: changed paths beyond the ones listed
    more: int = 0

    @property
    def total(self) -> int:
        return len(self.changes) + self.more


@dataclass(frozen=True)
class OutputChange:
    """One output of the two submissions and what happened to it."""

    name: str
    status: str  # unchanged, changed, new, removed
    before: Side | None = None
    after: Side | None = None
    #: how it was compared: text, json or binary ("" when it was not)
    compared_as: str = ""
    text_diff: Diff | None = None
    json_diff: JsonDiff | None = None
    #: why a changed output shows no diff, in words ("" when it shows one)
    not_compared: str = ""

    @property
    def changed(self) -> bool:
        return self.status != UNCHANGED

    @property
    def digests(self) -> list[tuple[str, str]]:
        """For the technical details: (label, digest) of each side."""
        shown = []
        if self.before is not None:
            shown.append(("Digest before", self.before.digest))
        if self.after is not None:
            shown.append(("Digest now", self.after.digest))
        return shown


@dataclass(frozen=True)
class Verdict:
    criterion: str
    verdict: str  # pass, fail, needs_changes
    note: str = ""


@dataclass(frozen=True)
class PreviousDecision:
    """How the previous submission left review: who sent it back, when, and why."""

    outcome: str  # "sent back", "failed", "replaced by a new submission", …
    by: str = ""
    at: datetime | None = None
    sequence: int = 0
    verdicts: tuple[Verdict, ...] = ()


@dataclass(frozen=True)
class Resubmission:
    """The card: the previous submission, its decision and each output's change."""

    previous_sequence: int
    previous_at: datetime | None
    previous_by: str
    decision: PreviousDecision | None
    outputs: tuple[OutputChange, ...] = field(default_factory=tuple)

    @property
    def changed(self) -> tuple[OutputChange, ...]:
        return tuple(o for o in self.outputs if o.changed)

    @property
    def unchanged(self) -> tuple[OutputChange, ...]:
        return tuple(o for o in self.outputs if not o.changed)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outputs if o.status == status)


# --- pairing the outputs of the two submissions ----------------------------------------------


def named_outputs(
    outputs: Mapping[str, str], artifacts: Sequence[str], declared: Sequence[str]
) -> dict[str, str]:
    """A submission's artifacts by what they stand for: its ``outputs`` map (name → digest),
    plus the artifacts it leaves unnamed. One unnamed artifact stands for the one declared
    output left unmapped (the way ``check_outputs`` counts it, R13.2-02); any other unnamed
    artifact is known by its digest alone."""
    named = {str(name): str(digest) for name, digest in outputs.items()}
    mapped = set(named.values())
    unnamed = [d for d in dict.fromkeys(artifacts) if d not in mapped]
    unmapped = [name for name in declared if name not in named]
    if len(unnamed) == 1 and len(unmapped) == 1:
        named[unmapped[0]] = unnamed[0]
        return named
    for digest in unnamed:
        named[f"unnamed artifact {digest[7:19]}"] = digest
    return named


def pair(
    previous: Mapping[str, str], current: Mapping[str, str], declared: Sequence[str] = ()
) -> list[tuple[str, str | None, str | None]]:
    """(name, previous digest, current digest) for every output of either submission: the
    contract's outputs in its order, then any other artifact of the current submission,
    then those only the previous one had."""
    either = [*current, *(n for n in previous if n not in current)]
    names = [*(n for n in declared if n in either), *(n for n in either if n not in declared)]
    return [(name, previous.get(name), current.get(name)) for name in names]


# --- comparing one output ----------------------------------------------------------------------


def _base_type(media_type: str) -> str:
    return media_type.split(";", 1)[0].strip().lower()


def content_kind(media_type: str, text: str | None) -> str:
    """How a side is compared: ``json`` for a JSON type (or an unnamed type whose text is a
    JSON object or array), ``text`` for a text type (or unnamed UTF-8), else ``binary`` — as
    the preview shows it (``previews``)."""
    if text is None:
        return BINARY
    base = _base_type(media_type)
    if base in formats.UNNAMED_TYPES:
        return JSON if formats.looks_like_json(text) else TEXT
    if formats.is_json_type(base):
        return JSON
    if formats.is_text_type(base):
        return TEXT
    return BINARY


def _text_of(side: Side) -> str | None:
    return None if side.data is None else formats.decode_text(side.data, complete=True)


def compare(name: str, before: Side | None, after: Side | None) -> OutputChange:
    """One output across the two submissions (R13.2-03: what the reviewer looks at again)."""
    if before is None:
        return OutputChange(name, NEW, after=after)
    if after is None:
        return OutputChange(name, REMOVED, before=before)
    if before.digest == after.digest:
        return OutputChange(name, UNCHANGED, before=before, after=after)
    changed = OutputChange(name, CHANGED, before=before, after=after)
    why = before.why_not or after.why_not
    if why:
        return _with(changed, not_compared=why)
    old, new = _text_of(before), _text_of(after)
    kinds = {content_kind(before.media_type, old), content_kind(after.media_type, new)}
    if BINARY in kinds or old is None or new is None:
        return _with(changed, compared_as=BINARY)
    if kinds == {JSON}:
        try:
            diff = json_diff(formats.parse_json(old), formats.parse_json(new))
        except ValueError:
            pass  # not valid JSON on a side: compared as text
        else:
            return _with(changed, compared_as=JSON, json_diff=diff)
    text = formats.unified_diff(old, new)
    if text is None:
        return _with(
            changed,
            not_compared=f"over {formats.DIFF_LINES:,} lines: too long to compare here",
        )
    return _with(changed, compared_as=TEXT, text_diff=text)


def _with(change: OutputChange, **fields: Any) -> OutputChange:
    return replace(change, **fields)


# --- JSON by path --------------------------------------------------------------------------------


def _key_path(path: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if len(text) > JSON_VALUE_CHARS:
        return text[: JSON_VALUE_CHARS - 1] + "…"
    return text


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _walk(old: Any, new: Any, path: str, depth: int) -> Iterator[JsonChange]:
    if old == new and type(old) is type(new):
        return
    if depth < JSON_DEPTH and isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                yield JsonChange(_key_path(path, key), "removed", before=_shown(old[key]))
        for key in new:
            where = _key_path(path, key)
            if key not in old:
                yield JsonChange(where, "added", after=_shown(new[key]))
            else:
                yield from _walk(old[key], new[key], where, depth + 1)
        return
    if depth < JSON_DEPTH and isinstance(old, list) and isinstance(new, list):
        yield from _walk_list(old, new, path, depth)
        return
    yield JsonChange(path, "changed", before=_shown(old), after=_shown(new))


def _walk_list(old: list[Any], new: list[Any], path: str, depth: int) -> Iterator[JsonChange]:
    """Items aligned as difflib aligns lines, so one inserted finding is one addition rather
    than every later index changed; a long list index by index (bounded time)."""
    if max(len(old), len(new)) > JSON_ALIGN_ITEMS:
        opcodes = [("replace", 0, len(old), 0, len(new))]
    else:
        matcher = difflib.SequenceMatcher(
            None, [_canonical(v) for v in old], [_canonical(v) for v in new], autojunk=False
        )
        opcodes = matcher.get_opcodes()
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            yield from _walk(old[i1 + k], new[j1 + k], f"{path}[{j1 + k}]", depth + 1)
        for i in range(i1 + paired, i2):
            yield JsonChange(f"{path}[{i}]", "removed", before=_shown(old[i]))
        for j in range(j1 + paired, j2):
            yield JsonChange(f"{path}[{j}]", "added", after=_shown(new[j]))


def json_diff(old: Any, new: Any, *, limit: int = JSON_CHANGES) -> JsonDiff:
    """Every value added, removed or changed from ``old`` to ``new``, by path: an added or
    removed key or list item is listed once, not each value under it. A removed item's path
    is its index in the previous document, an added one's in the current document."""
    listed: list[JsonChange] = []
    more = 0
    for change in _walk(old, new, "$", 0):
        if len(listed) < limit:
            listed.append(change)
        else:
            more += 1
    return JsonDiff(tuple(listed), more)
