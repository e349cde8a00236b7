"""Error codes of wire.md §8, each with its HTTP status and the rule it usually enforces.

Every refusal anywhere in the product is a :class:`ProtocolError`; the HTTP layer renders it
as ``{"error": {"code", "message", "requirement", "details"}}`` and never as a 5xx.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """The fixed error codes of wire.md §8."""

    MALFORMED = "MALFORMED"
    UNKNOWN_COMMAND = "UNKNOWN_COMMAND"
    CONTRACT_INVALID = "CONTRACT_INVALID"
    UNSUPPORTED_EXTENSION = "UNSUPPORTED_EXTENSION"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    INVALID_SIGNATURE = "INVALID_SIGNATURE"
    CLOCK_SKEW = "CLOCK_SKEW"
    STALE_SESSION = "STALE_SESSION"
    REPLAYED_NONCE = "REPLAYED_NONCE"
    NOT_A_MEMBER = "NOT_A_MEMBER"
    FORBIDDEN = "FORBIDDEN"
    STALE_MEMBERSHIP = "STALE_MEMBERSHIP"
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    SELF_APPROVAL = "SELF_APPROVAL"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    ILLEGAL_TRANSITION = "ILLEGAL_TRANSITION"
    STALE_LEASE = "STALE_LEASE"
    STALE_OWNERSHIP = "STALE_OWNERSHIP"
    STALE_REVISION = "STALE_REVISION"
    OFFER_EXPIRED = "OFFER_EXPIRED"
    OFFER_WITHDRAWN = "OFFER_WITHDRAWN"
    DUPLICATE_COMMAND_ID = "DUPLICATE_COMMAND_ID"
    DEPENDENCY_CYCLE = "DEPENDENCY_CYCLE"
    DEPENDENCY_UNMET = "DEPENDENCY_UNMET"
    OUTSIDE_GRACE_WINDOW = "OUTSIDE_GRACE_WINDOW"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    EVIDENCE_MISSING = "EVIDENCE_MISSING"
    ARTIFACT_CORRUPTED = "ARTIFACT_CORRUPTED"
    ACK_BEYOND_HEAD = "ACK_BEYOND_HEAD"
    DUPLICATE_APPROVAL = "DUPLICATE_APPROVAL"
    SNAPSHOT_REQUIRED = "SNAPSHOT_REQUIRED"
    CURSOR_TOO_OLD = "CURSOR_TOO_OLD"
    TOO_LARGE = "TOO_LARGE"
    ARTIFACT_HASH_MISMATCH = "ARTIFACT_HASH_MISMATCH"
    RATE_LIMITED = "RATE_LIMITED"
    # Additions of this implementation (wire.md allows new codes, never renamed ones).
    ALREADY_EXISTS = "ALREADY_EXISTS"
    INTERNAL = "INTERNAL"
    # Server faults that are not bugs (issue 16 §8): PostgreSQL or the artifact storage is
    # away (503, with Retry-After: send the same request again), or the store is full (507).
    UNAVAILABLE = "UNAVAILABLE"
    STORAGE_FULL = "STORAGE_FULL"
    # Issue 34 (additive): a running review reservation holds the decision; acceptance waits
    # for the authority's own checks and never overrides a check that failed (R13.2-03).
    REVIEW_RESERVED = "REVIEW_RESERVED"
    CHECKS_PENDING = "CHECKS_PENDING"
    CHECKS_FAILED = "CHECKS_FAILED"


# (HTTP status, the requirement cited when the raiser names none).
_CATALOGUE: dict[ErrorCode, tuple[int, str]] = {
    ErrorCode.MALFORMED: (400, "wire§1"),
    ErrorCode.UNKNOWN_COMMAND: (400, "wire§9"),
    ErrorCode.CONTRACT_INVALID: (400, "R10.1-01"),
    ErrorCode.UNSUPPORTED_EXTENSION: (400, "wire§3"),
    ErrorCode.UNAUTHENTICATED: (401, "wire§4"),
    ErrorCode.INVALID_SIGNATURE: (401, "wire§3"),
    ErrorCode.CLOCK_SKEW: (401, "wire§3"),
    ErrorCode.STALE_SESSION: (401, "R11.3-10"),
    ErrorCode.REPLAYED_NONCE: (401, "wire§5"),
    ErrorCode.NOT_A_MEMBER: (403, "wire§2"),
    ErrorCode.FORBIDDEN: (403, "wire§2"),
    ErrorCode.STALE_MEMBERSHIP: (403, "wire§2"),
    ErrorCode.APPROVAL_REQUIRED: (403, "R10.1-01"),
    ErrorCode.SELF_APPROVAL: (403, "R10.2-06"),
    ErrorCode.NOT_FOUND: (404, "wire§4"),
    ErrorCode.METHOD_NOT_ALLOWED: (405, "wire§4"),
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: (415, "wire§1"),
    ErrorCode.ILLEGAL_TRANSITION: (409, "R10.2-22"),
    ErrorCode.STALE_LEASE: (409, "R11.3-05"),
    ErrorCode.STALE_OWNERSHIP: (409, "R11.3-01"),
    ErrorCode.STALE_REVISION: (409, "R10.1-05"),
    ErrorCode.OFFER_EXPIRED: (409, "R10.2-05"),
    ErrorCode.OFFER_WITHDRAWN: (409, "R10.3-06"),
    ErrorCode.DUPLICATE_COMMAND_ID: (409, "wire§3"),
    ErrorCode.DEPENDENCY_CYCLE: (409, "R10.4-04"),
    ErrorCode.DEPENDENCY_UNMET: (409, "R10.4-03"),
    ErrorCode.OUTSIDE_GRACE_WINDOW: (409, "R11.5-10"),
    ErrorCode.BUDGET_EXCEEDED: (409, "R11.5-13"),
    ErrorCode.EVIDENCE_MISSING: (409, "R13.2-02"),
    ErrorCode.ARTIFACT_CORRUPTED: (409, "R13.1-05"),
    ErrorCode.ACK_BEYOND_HEAD: (409, "R16-06"),
    ErrorCode.DUPLICATE_APPROVAL: (409, "R10.2-06"),
    ErrorCode.SNAPSHOT_REQUIRED: (409, "R16-10"),
    ErrorCode.CURSOR_TOO_OLD: (410, "R16-10"),
    ErrorCode.TOO_LARGE: (413, "wire§1"),
    ErrorCode.ARTIFACT_HASH_MISMATCH: (422, "R13.1-05"),
    ErrorCode.RATE_LIMITED: (429, "wire§8"),
    ErrorCode.ALREADY_EXISTS: (409, "wire§4"),
    ErrorCode.INTERNAL: (500, "wire§8"),
    ErrorCode.UNAVAILABLE: (503, "wire§8"),
    ErrorCode.STORAGE_FULL: (507, "wire§8"),
    ErrorCode.REVIEW_RESERVED: (409, "R13.2-03"),
    ErrorCode.CHECKS_PENDING: (409, "R13.2-03"),
    ErrorCode.CHECKS_FAILED: (409, "R13.2-03"),
}

#: the codes of a 5xx answer: none may be the answer to any input (wire.md §8)
SERVER_FAULTS = frozenset({ErrorCode.INTERNAL, ErrorCode.UNAVAILABLE, ErrorCode.STORAGE_FULL})


def http_status(code: ErrorCode) -> int:
    """The HTTP status wire.md §8 fixes for ``code``."""
    return _CATALOGUE[code][0]


def default_requirement(code: ErrorCode) -> str:
    """The rule a code enforces when the raiser has no more precise R-ID to cite."""
    return _CATALOGUE[code][1]


class ProtocolError(Exception):
    """A refusal: an error code, a human message, the rule refused and structured details."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        requirement: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.requirement = requirement or default_requirement(code)
        self.details = details or {}

    @property
    def status(self) -> int:
        return http_status(self.code)

    def as_body(self) -> dict[str, Any]:
        """The wire.md §8 error document."""
        return {
            "error": {
                "code": self.code.value,
                "message": self.message,
                "requirement": self.requirement,
                "details": self.details,
            }
        }

    def __repr__(self) -> str:
        return f"ProtocolError({self.code.value}, {self.message!r}, {self.requirement})"
