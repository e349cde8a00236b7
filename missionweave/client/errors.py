"""The client's typed errors: a refusal carries the wire.md §8 error document, a broken chain
names the first sequence that does not verify (R16-03, MWP-WRK-029)."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base of everything the agent client raises on purpose."""


class ApiError(ClientError):
    """A 4xx answer of the authority (wire.md §8): never retried, because resending the same
    command cannot change a refusal; the caller decides from ``code`` and ``requirement``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str = "",
        requirement: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {code} ({requirement}): {message}")
        self.status = status
        self.code = code
        self.message = message
        self.requirement = requirement
        self.details: dict[str, Any] = details or {}

    @classmethod
    def from_response(cls, status: int, document: object) -> ApiError:
        """Read the §8 error document; an answer without one still becomes a typed error."""
        error = document.get("error") if isinstance(document, dict) else None
        if not isinstance(error, dict):
            return cls(status, "UNEXPECTED_RESPONSE", "the answer carries no error document")
        details = error.get("details")
        return cls(
            status,
            str(error.get("code", "")),
            str(error.get("message", "")),
            str(error.get("requirement", "")),
            details if isinstance(details, dict) else {},
        )


class Unavailable(ClientError):
    """The authority could not be reached (network errors or 5xx) after every retry."""


class ChainBroken(ClientError):
    """An event does not chain onto what this client already verified (wire.md §6): wrong
    sequence, wrong ``prev_hash``, a ``hash`` that is not the digest of its content, another
    group, or a different event id at an already processed sequence. Nothing from
    ``sequence`` on is handed to the handler or advances the cursor."""

    def __init__(self, group: str | None, sequence: int, reason: str) -> None:
        where = f"group {group!r}" if group is not None else "a socket of several groups"
        super().__init__(f"{where}: event {sequence} refused: {reason}")
        self.group = group
        self.sequence = sequence
        self.reason = reason


class HistoryForked(ChainBroken):
    """What the authority serves contradicts a head this client verified earlier (issue 33
    §2): a different event or head at that head's sequence, a head behind it, or a head that
    does not follow it. Proof that the history was rewritten after this client saw it.
    ``known`` is the signed head kept; ``offered`` the signed head or event contradicting it.
    Nothing of the group is processed past it."""

    def __init__(
        self,
        group: str,
        sequence: int,
        reason: str,
        *,
        known: dict[str, Any],
        offered: dict[str, Any],
    ) -> None:
        super().__init__(group, sequence, reason)
        self.known = known
        self.offered = offered


class SnapshotRejected(ChainBroken):
    """A snapshot offered after ``CURSOR_TOO_OLD`` that fails a check (R16-11): not canonical,
    not the authority's signature, another digest, group or sequence. ``sequence`` is the
    snapshot's, the first position this client could not verify; ``what`` names the check."""

    def __init__(self, group: str, sequence: int, what: str, reason: str) -> None:
        super().__init__(group, sequence, f"snapshot refused ({what}): {reason}")
        self.what = what


class ArtifactMismatch(ClientError):
    """The bytes received for an artifact do not hash to its digest (R13.1-05): changed in
    transit, since the authority verifies them before it sends them. Nothing of them was
    returned or left on disk; ``actual`` is what they hashed to, ``size`` how many arrived."""

    def __init__(self, digest: str, actual: str, size: int) -> None:
        super().__init__(
            f"artifact {digest}: the {size} bytes received hash to {actual}; discarded"
        )
        self.digest = digest
        self.actual = actual
        self.size = size
