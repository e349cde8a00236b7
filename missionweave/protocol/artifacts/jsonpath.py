"""A tiny, strict JSONPath subset: where a deterministic check looks inside an output (R13.2-03).

Grammar: ``$`` followed by any number of steps, with no whitespace anywhere:

- ``.name``, where the name matches ``[A-Za-z_][A-Za-z0-9_]*``;
- ``["key"]``, a JSON string (its escapes are JSON's), for any other key;
- ``['key']``, the same with single quotes, where only ``\\\\`` and ``\\'`` are escapes;
- ``[index]``, a non-negative decimal integer without leading zeros, into a list.

No wildcards, slices, filters or recursive descent: a check names one value, and a path it
cannot name is refused when the contract is validated rather than matching nothing later.

``format_path`` writes the form the contract validator uses for its own error paths
(``$.a["odd key"][0]``), so a path in a refusal can be pasted back into a check.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..strictjson import MAX_DEPTH, MAX_SAFE_INTEGER

#: a step into an object (``str``) or a list (``int``)
Step = str | int
Location = tuple[Step, ...]

MAX_PATH_LENGTH = 1000
#: deeper than any document the strict parser lets through, so no valid path is refused for depth
MAX_STEPS = MAX_DEPTH

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INDEX = re.compile(r"0|[1-9][0-9]*")


class JsonPathError(ValueError):
    """The text is not a path of the subset; the message says where and why."""


def child_path(path: str, step: Step) -> str:
    """``path`` extended by one step: ``.name`` for plain keys, ``["odd key"]`` otherwise."""
    if isinstance(step, int):
        return f"{path}[{step}]"
    if _PLAIN_KEY.match(step):
        return f"{path}.{step}"
    return f"{path}[{json.dumps(step, ensure_ascii=False)}]"


def format_path(location: Location, root: str = "$") -> str:
    """The canonical text of ``location``; ``parse_path`` reads it back unchanged."""
    path = root
    for step in location:
        path = child_path(path, step)
    return path


def parse_path(text: object) -> Location:
    """The steps of ``text`` or :class:`JsonPathError`; ``$`` alone is the whole document."""
    if not isinstance(text, str):
        raise JsonPathError("a path is a string starting with $")
    if len(text) > MAX_PATH_LENGTH:
        raise JsonPathError(f"a path is at most {MAX_PATH_LENGTH} characters")
    if not text.startswith("$"):
        raise JsonPathError("a path starts with $")
    steps: list[Step] = []
    position = 1
    while position < len(text):
        if len(steps) == MAX_STEPS:
            raise JsonPathError(f"a path has at most {MAX_STEPS} steps")
        step, position = _step(text, position)
        steps.append(step)
    return tuple(steps)


def _step(text: str, position: int) -> tuple[Step, int]:
    """The step starting at ``position`` and where the next one starts."""
    opener = text[position]
    if opener == ".":
        match = _PLAIN_NAME.match(text, position + 1)
        if match is None:
            raise JsonPathError(f"at {position}: .name needs a name of [A-Za-z_][A-Za-z0-9_]*")
        return match.group(), match.end()
    if opener != "[":
        raise JsonPathError(f"at {position}: expected . or [")
    inner = position + 1
    if inner < len(text) and text[inner] == '"':
        key, end = _double_quoted(text, inner)
    elif inner < len(text) and text[inner] == "'":
        key, end = _single_quoted(text, inner)
    else:
        match = _INDEX.match(text, inner)
        if match is None:
            raise JsonPathError(f"at {inner}: expected an index, a quoted key or ]")
        if len(match.group()) > 16 or int(match.group()) > MAX_SAFE_INTEGER:
            raise JsonPathError(f"at {inner}: index beyond 2**53-1")
        index_end = match.end()
        if text[index_end : index_end + 1] != "]":
            raise JsonPathError(f"at {index_end}: expected ]")
        return int(match.group()), index_end + 1
    if text[end : end + 1] != "]":
        raise JsonPathError(f"at {end}: expected ] after the key")
    return key, end + 1


def _closing_quote(text: str, start: int, quote: str) -> int:
    """The index of the quote that closes the string opened at ``start``."""
    position = start + 1
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
        elif char == quote:
            return position
        else:
            position += 1
    raise JsonPathError(f"at {start}: unterminated string")


def _double_quoted(text: str, start: int) -> tuple[str, int]:
    close = _closing_quote(text, start, '"')
    try:
        key = json.loads(text[start : close + 1])
    except ValueError:  # bad escape, raw control character
        raise JsonPathError(f"at {start}: not a JSON string") from None
    return key, close + 1


def _single_quoted(text: str, start: int) -> tuple[str, int]:
    close = _closing_quote(text, start, "'")
    raw = text[start + 1 : close]
    key: list[str] = []
    position = 0
    while position < len(raw):
        char = raw[position]
        if char == "\\":
            escaped = raw[position + 1 : position + 2]
            if escaped not in ("\\", "'"):
                raise JsonPathError(f"at {start + 1 + position}: only \\\\ and \\' are escapes")
            key.append(escaped)
            position += 2
        else:
            key.append(char)
            position += 1
    return "".join(key), close + 1


def resolve(document: Any, location: Location) -> tuple[bool, Any]:
    """``(True, value)`` at ``location`` in ``document``, or ``(False, None)`` when absent.

    A name only steps into an object and an index only into a list: ``[0]`` never reads the
    key ``"0"``, so a path means one thing whatever the document looks like.
    """
    node = document
    for step in location:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return False, None
            node = node[step]
        else:
            if not isinstance(node, dict) or step not in node:
                return False, None
            node = node[step]
    return True, node
