"""Presence: what an agent reports of its current capacity (R11.1-11), checked in the core."""

from __future__ import annotations

import pytest

from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.presence import validate_presence


def test_a_presence_report_gives_slots_free_of_slots_and_resources() -> None:
    """R11.1-11: current capacity as a whole (never by group, R11.2-02)."""
    body = {"slots": 3, "slots_free": 2, "resources": {"gpu": {"total": 1, "free": 0}}}
    assert validate_presence(body) == body
    assert validate_presence({"slots": 1, "slots_free": 0}) == {
        "slots": 1,
        "slots_free": 0,
        "resources": {},
    }


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ([], "$"),
        ({"slots_free": 1}, "$.slots"),
        ({"slots": 0, "slots_free": 0}, "$.slots"),
        ({"slots": 2, "slots_free": 3}, "$.slots_free"),
        ({"slots": 2, "slots_free": -1}, "$.slots_free"),
        ({"slots": True, "slots_free": 0}, "$.slots"),
        ({"slots": 2, "slots_free": 1, "group": "g"}, "$.group"),
        ({"slots": 2, "slots_free": 1, "resources": []}, "$.resources"),
        ({"slots": 2, "slots_free": 1, "resources": {"gpu": {"total": 1}}}, "$.resources.gpu.free"),
        (
            {"slots": 2, "slots_free": 1, "resources": {"gpu": {"total": 1, "free": 2}}},
            "$.resources.gpu.free",
        ),
        ({"slots": 2, "slots_free": 1, "resources": {"": {"total": 1, "free": 1}}}, "$.resources"),
    ],
)
def test_a_bad_report_is_malformed_naming_the_field(body: object, path: str) -> None:
    """wire.md §8: the path of the first bad field; nothing by group can be said (R11.2-02)."""
    with pytest.raises(ProtocolError) as caught:
        validate_presence(body)
    assert caught.value.code == ErrorCode.MALFORMED
    assert caught.value.details["path"] == path
