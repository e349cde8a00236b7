"""Exports of a group's complete history as JSON Lines, and their verification (pure).

History is never deleted (R16-08): whatever the online log or a future archive holds can be
written out and checked by anyone holding the authority's public key, without a server.

An export is UTF-8 text, one canonical JSON document (RFC 8785, wire.md §1) per line, each
line ending in ``\\n``:

1. a header ``{"kind": "mwp.export/1", "group", "authority": {"authority_id", "public_key"},
   "exported_at", "signature"}``, signed by the authority like a head, so no byte of it can
   change unnoticed;
2. every event of the group in sequence order, each exactly the stored wire.md §6 document
   (the bytes that were hashed);
3. a trailer ``{"kind": "head", "head": <the document of GET /groups/{g}/head>}``: the
   authority-signed head the chain must end at (R16-10/R16-11: a verified chain up to a signed
   position is authentic).

:func:`verify_export` reads lines one by one (constant memory) and names the first bad line.
Given heads the caller verified earlier (``known_heads``), it also fails on any history that
contradicts one of them: a different event at a known head's sequence, an export that ends
before a known head, or a trailer head that cannot follow it (:mod:`.heads`; issue 33 §2).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .canonical import ZERO_HASH, canonical_bytes
from .errors import ProtocolError
from .events import EVENT_FIELDS, chains, event_hash
from .heads import event_contradiction, head_contradiction
from .signing import document_signature_holds, parse_public_key
from .strictjson import parse

EXPORT_KIND = "mwp.export/1"
HEAD_KIND = "head"
EVENT_KEYS = frozenset((*EVENT_FIELDS, "hash"))


def header_document(
    *, group: str, authority_id: str, public_key: str, exported_at: str
) -> dict[str, Any]:
    """The unsigned header; the caller signs it with the authority key (``authority.signed``)."""
    return {
        "kind": EXPORT_KIND,
        "group": group,
        "authority": {"authority_id": authority_id, "public_key": public_key},
        "exported_at": exported_at,
    }


def line_of(document: dict[str, Any]) -> bytes:
    """One export line: the canonical bytes of ``document`` and a newline."""
    return canonical_bytes(document) + b"\n"


def export_lines(
    header: dict[str, Any], event_documents: Iterable[str], head: dict[str, Any]
) -> Iterator[bytes]:
    """The lines of an export, lazily: events pass through as stored, byte for byte."""
    yield line_of(header)
    for document in event_documents:
        yield document.encode("utf-8") + b"\n"
    yield line_of({"kind": HEAD_KIND, "head": head})


@dataclass(frozen=True)
class ExportProblem:
    """The first thing wrong with an export: its 1-based line, the sequence if known, why."""

    line: int
    reason: str
    sequence: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "the known heads"
        if self.sequence is not None:
            where += f", sequence {self.sequence}"
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class ExportCheck:
    """The outcome of :func:`verify_export`; ``problem`` is ``None`` when everything holds."""

    problem: ExportProblem | None
    group: str | None = None
    events: int = 0
    head_sequence: int = 0
    head_hash: str = ZERO_HASH

    @property
    def ok(self) -> bool:
        return self.problem is None

    def summary(self) -> str:
        if self.problem is not None:
            return str(self.problem)
        return (
            f"{self.group}: {self.events} events, chain intact up to the signed head "
            f"{self.head_sequence} ({self.head_hash})"
        )


class _Refused(Exception):
    def __init__(self, problem: ExportProblem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _document(raw: bytes, line: int, sequence: int | None = None) -> dict[str, Any]:
    """The JSON object on ``raw``, which must be terminated and in canonical form exactly."""
    if not raw.endswith(b"\n"):
        raise _Refused(ExportProblem(line, "line is not terminated by a newline", sequence))
    body = raw[:-1]
    try:
        value = parse(body)
    except ProtocolError as exc:
        raise _Refused(ExportProblem(line, f"not strict JSON ({exc.message})", sequence)) from None
    if not isinstance(value, dict):
        raise _Refused(ExportProblem(line, "not a JSON object", sequence))
    # Canonical form byte for byte: an event line must be the bytes that were hashed.
    if canonical_bytes(value) != body:
        raise _Refused(ExportProblem(line, "not in canonical form", sequence))
    return value


def verify_export(
    lines: Iterable[bytes],
    *,
    public_key: str | None = None,
    known_heads: Iterable[dict[str, Any]] = (),
) -> ExportCheck:
    """Check an export line by line; the result names the first bad line (R16-10/R16-11).

    ``public_key``, when given, is the authority key the caller trusts: an export whose
    header names another key is refused before anything else. Without it, the header's key
    is used (which proves integrity, not who signed). ``known_heads`` are signed heads seen
    earlier: each must be signed by that key, be of the export's group, and agree with the
    history the export holds (issue 33 §2).
    """
    try:
        return _verify(iter(lines), public_key, list(known_heads))
    except _Refused as refused:
        return ExportCheck(refused.problem)


def _known_by_sequence(
    known_heads: list[dict[str, Any]], *, key: Any, group: str
) -> dict[int, dict[str, Any]]:
    """The known heads by sequence, each checked to be the authority's and of ``group``."""
    by_sequence: dict[int, dict[str, Any]] = {}
    for number, head in enumerate(known_heads, start=1):
        if not isinstance(head, dict) or not document_signature_holds(key, head):
            raise _Refused(ExportProblem(0, f"known head {number}: signature does not verify"))
        sequence = head.get("sequence")
        if head.get("group") != group or not isinstance(sequence, int):
            raise _Refused(ExportProblem(0, f"known head {number}: not a head of {group}"))
        earlier = by_sequence.get(sequence)
        if earlier is not None and earlier.get("hash") != head.get("hash"):
            raise _Refused(
                ExportProblem(0, f"known heads {number} and another: fork at sequence {sequence}")
            )
        by_sequence[sequence] = head
    return by_sequence


def _verify(
    lines: Iterator[bytes], trusted_key: str | None, known_heads: list[dict[str, Any]]
) -> ExportCheck:
    first = next(lines, None)
    if first is None:
        raise _Refused(ExportProblem(1, "empty file: no header"))
    header = _document(first, 1)
    if header.get("kind") != EXPORT_KIND:
        raise _Refused(ExportProblem(1, f"header kind is not {EXPORT_KIND!r}"))
    group = header.get("group")
    authority = header.get("authority")
    if not isinstance(group, str) or not isinstance(authority, dict):
        raise _Refused(ExportProblem(1, "header lacks group or authority"))
    key_text = authority.get("public_key")
    if not isinstance(key_text, str):
        raise _Refused(ExportProblem(1, "header lacks the authority public key"))
    if trusted_key is not None and key_text != trusted_key:
        raise _Refused(ExportProblem(1, "authority key differs from the given public key"))
    try:
        key = parse_public_key(key_text)
    except ValueError:
        raise _Refused(ExportProblem(1, "authority public key is malformed")) from None
    if not document_signature_holds(key, header):
        raise _Refused(ExportProblem(1, "header signature does not verify"))
    known = _known_by_sequence(known_heads, key=key, group=group)

    previous_hash, previous_sequence, line = ZERO_HASH, 0, 1
    for raw in lines:
        line += 1
        expected = previous_sequence + 1
        document = _document(raw, line, expected)
        if "kind" in document:
            return _trailer(
                document,
                lines,
                line=line,
                group=group,
                key=key,
                last_sequence=previous_sequence,
                last_hash=previous_hash,
                known=known,
            )
        _check_event(document, line, group, previous_hash, previous_sequence)
        if expected in known:
            contradiction = event_contradiction(known[expected], document)
            if contradiction is not None:
                raise _Refused(ExportProblem(line, str(contradiction), expected))
        previous_hash, previous_sequence = document["hash"], expected
    raise _Refused(ExportProblem(line + 1, "missing head line", previous_sequence + 1))


def _check_event(
    event: dict[str, Any], line: int, group: str, previous_hash: str, previous_sequence: int
) -> None:
    """An event must be the next one of this group and chain (wire.md §6); say why not."""
    expected = previous_sequence + 1
    sequence = event.get("sequence")
    if set(event) != EVENT_KEYS:
        raise _Refused(ExportProblem(line, "not an event document", expected))
    if chains(event, previous_hash=previous_hash, previous_sequence=previous_sequence):
        if event.get("group") != group:
            raise _Refused(ExportProblem(line, "event of another group", expected))
        return
    if not isinstance(sequence, int) or isinstance(sequence, bool):
        raise _Refused(ExportProblem(line, "sequence is not an integer", expected))
    if sequence > expected:
        reason = f"gap: sequence {expected} missing, found {sequence}"
    elif sequence != expected:
        reason = f"out of order: found sequence {sequence}"
    elif event.get("hash") != event_hash(event):
        reason = "hash mismatch"
    else:
        reason = "prev_hash does not chain to the previous event"
    raise _Refused(ExportProblem(line, reason, expected))


def _trailer(
    trailer: dict[str, Any],
    rest: Iterator[bytes],
    *,
    line: int,
    group: str,
    key: Any,
    last_sequence: int,
    last_hash: str,
    known: dict[int, dict[str, Any]],
) -> ExportCheck:
    """The signed head must verify, sit exactly at the last event (R16-11) and follow every
    known head (issue 33 §2)."""
    head = trailer.get("head")
    if trailer.get("kind") != HEAD_KIND or set(trailer) != {"kind", "head"}:
        raise _Refused(ExportProblem(line, "expected an event or the head line"))
    if not isinstance(head, dict) or not document_signature_holds(key, head):
        raise _Refused(ExportProblem(line, "head signature does not verify"))
    if head.get("group") != group:
        raise _Refused(ExportProblem(line, "head is of another group"))
    if head.get("sequence") != last_sequence or head.get("hash") != last_hash:
        raise _Refused(
            ExportProblem(
                line,
                f"signed head {head.get('sequence')} does not match the last event {last_sequence}",
            )
        )
    for sequence in sorted(known):
        contradiction = head_contradiction(known[sequence], head)
        if contradiction is not None:
            raise _Refused(ExportProblem(line, str(contradiction)))
    if next(rest, None) is not None:
        raise _Refused(ExportProblem(line + 1, "content after the head line"))
    return ExportCheck(None, group, last_sequence, last_sequence, last_hash)
