"""A checkpoint's state stored as an artifact (issue 35 §2; R11.5-01, R10.2-08, R11.3-13):
``work.checkpoint`` (and ``work.block``) may name, in ``checkpoint.state_artifact``, the
artifact a new owner restores the state from. The authority checks it like every digest a
command names (wire.md §9) and the log cites it, so the next owner may read it."""

from __future__ import annotations

import pytest

from missionweave.protocol.artifacts.citations import cited_by, named_by
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.work.execution import validate_block, validate_checkpoint
from missionweave.protocol.work.items import LEASE_EXPIRED

from .lease_stories import active, at_time, clock, driver_of, item, reassign, refused, with_body
from .work_scenarios import OTHER_WORKER, WORKER, checkpoint

STATE = sha256_digest(b'{"format":"mwp-worker-checkpoint-v1"}')


def stored_checkpoint(ref: str = "ckpt-1") -> dict[str, object]:
    return {**checkpoint(ref), "state_artifact": STATE}


def test_the_state_artifact_is_recorded_and_a_reassignment_resumes_from_it() -> None:
    """R11.5-01, R10.2-08: the checkpoint, with its ``state_artifact``, becomes the item's
    ``last_checkpoint``; a reassignment after the next lease expires names it in
    ``resume_from``, so the next owner knows where the state is."""
    story = active((WORKER, OTHER_WORKER))
    story.run(with_body(story.call("work.checkpoint"), checkpoint=stored_checkpoint()))
    assert item(story)["last_checkpoint"]["state_artifact"] == STATE
    story.do("work.start")
    clock(story, at_time(item(story)["lease"]["expires_at"]))
    ran = story.run(reassign(story, LEASE_EXPIRED))
    (resume,) = [p["resume_from"] for t, p in ran.events if t == "work.reassigned"]
    assert (resume["ref"], resume["state_artifact"]) == ("ckpt-1", STATE)


def test_the_log_cites_the_state_artifact_of_a_checkpoint_and_of_a_block() -> None:
    """wire.md §4, §9 (issue 35 §2): the digest is named by the command (so it must be
    nameable) and cited by its event (so every member may read it), for ``work.checkpoint``
    and ``work.block`` alike."""
    body = {"work_item": "wi-1", "lease_id": "lease-1", "checkpoint": stored_checkpoint()}
    where = ("$.checkpoint.state_artifact", STATE)
    for command, event in (
        ("work.checkpoint", "work.checkpointed"),
        ("work.block", "work.blocked"),
    ):
        assert where in named_by(command, body)
        assert where in cited_by(event, {**body, "required_resolution": "x"})


def test_a_checkpoint_without_a_state_artifact_is_still_accepted() -> None:
    """Additive (wire.md §9, issue 35 §2): the field is optional; a checkpoint without it is
    recorded as before, and names no artifact beyond its ``artifacts``."""
    body = {"work_item": "wi-1", "lease_id": "lease-1", "checkpoint": checkpoint()}
    validate_checkpoint(body)
    assert named_by("work.checkpoint", body) == []


@pytest.mark.parametrize("value", ["sha256:nothex", 7, None, "ckpt-1"])
def test_a_state_artifact_that_is_no_digest_is_malformed(value: object) -> None:
    """wire.md §1: a digest is ``sha256:<64 lowercase hex>``; anything else is MALFORMED at
    the field, for a checkpoint and for a block's checkpoint."""
    for validate, extra in (
        (validate_checkpoint, {}),
        (validate_block, {"required_resolution": "x"}),
    ):
        body = {
            "work_item": "wi-1",
            "lease_id": "lease-1",
            "checkpoint": {**checkpoint(), "state_artifact": value},
            **extra,
        }
        with pytest.raises(ProtocolError) as caught:
            validate(body)
        assert caught.value.code is ErrorCode.MALFORMED
        assert caught.value.details["path"] == "$.checkpoint.state_artifact"


def test_a_state_artifact_the_sender_may_not_name_is_refused_like_one_never_stored() -> None:
    """wire.md §9, R13.1-01: a digest the sender neither uploaded nor finds cited in the
    group is 404 NOT_FOUND naming the field, and nothing is decided."""
    story = active((WORKER, OTHER_WORKER))
    driver_of(story).scenario.stored = {}  # the store holds nothing this sender may name
    call = with_body(story.call("work.checkpoint"), checkpoint=stored_checkpoint())
    error = refused(story, call, ErrorCode.NOT_FOUND, "R13.1-01")
    assert error.details == {"path": "$.checkpoint.state_artifact", "digest": STATE}
