"""A checkpoint's state stored with the authority (issue 35 §2; R11.5-01, R10.2-08; wire.md
§4, §9), over HTTP on the real write path: ``work.checkpoint`` names the stored state in
``checkpoint.state_artifact``; the authority refuses a digest its sender may not name, like any
other; once cited, the state is readable by the group's other workers — the next owner after a
reassignment — and the item's ``last_checkpoint`` names it."""

from __future__ import annotations

import pytest

from apps.artifacts.access import readable
from missionweave.protocol.canonical import sha256_digest

from .work_http import Wire, WorkWorld, checkpoint_body, started

pytestmark = pytest.mark.django_db

STATE = b'{"format":"mwp-worker-checkpoint-v1","state":{"next":3}}'


def with_state(body: dict[str, object], state_artifact: str) -> dict[str, object]:
    checkpoint = dict(body["checkpoint"])  # type: ignore[call-overload]
    return {**body, "checkpoint": {**checkpoint, "state_artifact": state_artifact}}


def test_a_stored_state_is_cited_recorded_and_readable_by_the_next_owner(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-01, wire.md §4: w2 uploads the state and cites it; the checkpoint is recorded
    with it, and w3 — another worker of the group, who never had the bytes — may read it."""
    lease = started(wire, ww, "wi-s")
    state = wire.upload(ww.w2, STATE)
    assert not readable(ww.w3.principal, state)

    wire.ok(ww.w2, "work.checkpoint", with_state(checkpoint_body("wi-s", lease), state))

    assert wire.item("wi-s")["last_checkpoint"]["state_artifact"] == state
    assert readable(ww.w3.principal, state)


def test_a_state_the_sender_never_uploaded_is_not_found_and_nothing_is_recorded(
    wire: Wire, ww: WorkWorld
) -> None:
    """wire.md §9, R13.1-01: a digest that is neither uploaded by the sender nor cited in the
    group is 404 NOT_FOUND at ``$.checkpoint.state_artifact``; the item keeps its lease."""
    lease = started(wire, ww, "wi-n")
    never = sha256_digest(b"a state nobody uploaded")
    body = with_state(checkpoint_body("wi-n", lease), never)

    error = wire.refused(ww.w2, "work.checkpoint", body, 404, "NOT_FOUND", "R13.1-01")

    assert error["details"] == {"path": "$.checkpoint.state_artifact", "digest": never}
    item = wire.item("wi-n")
    assert (item["state"], item["lease"]["lease_id"], item["last_checkpoint"]) == (
        "active",
        lease,
        None,
    )
