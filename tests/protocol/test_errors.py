"""Every error code of wire.md §8 with its status, and the error document's shape."""

from __future__ import annotations

import pytest

from missionweave.protocol.errors import SERVER_FAULTS, ErrorCode, ProtocolError, http_status

# Transcribed from wire.md §8 "Codes by status".
WIRE_8: dict[str, int] = {
    **dict.fromkeys(
        ("MALFORMED", "UNKNOWN_COMMAND", "CONTRACT_INVALID", "UNSUPPORTED_EXTENSION"), 400
    ),
    **dict.fromkeys(
        ("UNAUTHENTICATED", "INVALID_SIGNATURE", "CLOCK_SKEW", "STALE_SESSION", "REPLAYED_NONCE"),
        401,
    ),
    **dict.fromkeys(
        ("NOT_A_MEMBER", "FORBIDDEN", "STALE_MEMBERSHIP", "APPROVAL_REQUIRED", "SELF_APPROVAL"), 403
    ),
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    **dict.fromkeys(
        (
            "ILLEGAL_TRANSITION",
            "STALE_LEASE",
            "STALE_OWNERSHIP",
            "STALE_REVISION",
            "OFFER_EXPIRED",
            "OFFER_WITHDRAWN",
            "DUPLICATE_COMMAND_ID",
            "DEPENDENCY_CYCLE",
            "DEPENDENCY_UNMET",
            "OUTSIDE_GRACE_WINDOW",
            "BUDGET_EXCEEDED",
            "EVIDENCE_MISSING",
            "ARTIFACT_CORRUPTED",
            "ACK_BEYOND_HEAD",
            "DUPLICATE_APPROVAL",
            "SNAPSHOT_REQUIRED",
        ),
        409,
    ),
    "CURSOR_TOO_OLD": 410,
    "TOO_LARGE": 413,
    "ARTIFACT_HASH_MISMATCH": 422,
    "RATE_LIMITED": 429,
}


def test_wire_8_table_has_every_code_it_lists() -> None:
    """wire§8: the transcription holds all 37 codes of the page."""
    assert len(WIRE_8) == 37


@pytest.mark.parametrize(("code", "status"), sorted(WIRE_8.items()))
def test_every_wire_8_code_exists_with_its_status(code: str, status: int) -> None:
    """wire§8: the codes are fixed, and so is the status of each."""
    assert ErrorCode(code).value == code
    assert http_status(ErrorCode(code)) == status
    assert ProtocolError(ErrorCode(code), "m").status == status


def test_additional_codes_never_reuse_a_client_error_status_for_a_server_fault() -> None:
    """wire§8: additions are allowed; only the server faults may be a 5xx (never from input):
    a bug (INTERNAL, 500), the database or storage away (UNAVAILABLE, 503), the artifact
    store full (STORAGE_FULL, 507)."""
    extra = {code for code in ErrorCode if code.value not in WIRE_8}
    for code in extra:
        assert (400 <= http_status(code) < 500) != (code in SERVER_FAULTS), code
    assert {code: http_status(code) for code in SERVER_FAULTS} == {
        ErrorCode.INTERNAL: 500,
        ErrorCode.UNAVAILABLE: 503,
        ErrorCode.STORAGE_FULL: 507,
    }


@pytest.mark.parametrize("code", list(ErrorCode))
def test_as_body_has_exactly_code_message_requirement_details(code: ErrorCode) -> None:
    """wire§8: {"error": {"code", "message", "requirement", "details"}}, requirement never empty."""
    body = ProtocolError(code, "why").as_body()
    assert list(body) == ["error"]
    assert set(body["error"]) == {"code", "message", "requirement", "details"}
    assert body["error"]["code"] == code.value
    assert body["error"]["message"] == "why"
    assert body["error"]["details"] == {}
    requirement = body["error"]["requirement"]
    assert requirement.startswith(("R", "wire§")), requirement


def test_explicit_requirement_and_details_are_kept() -> None:
    """wire§8: the raiser's R-ID and details travel unchanged."""
    error = ProtocolError(
        ErrorCode.STALE_LEASE, "old lease", requirement="R11.3-05", details={"lease": "l1"}
    )
    assert error.as_body() == {
        "error": {
            "code": "STALE_LEASE",
            "message": "old lease",
            "requirement": "R11.3-05",
            "details": {"lease": "l1"},
        }
    }
