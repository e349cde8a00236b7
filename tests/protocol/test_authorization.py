"""wire.md §3 steps 7–8: member, then role, then membership epoch — in that order."""

from __future__ import annotations

import pytest

from missionweave.protocol.authorization import authorize
from missionweave.protocol.commands import COMMANDS, CommandSpec
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import Membership

CREATE = COMMANDS["mission.create"]
W1 = "agent:w1"


def _refusal(spec: CommandSpec, membership: Membership | None, **kwargs: object) -> ErrorCode:
    kwargs.setdefault("actor", W1)
    kwargs.setdefault("membership_epoch", 2)
    with pytest.raises(ProtocolError) as caught:
        authorize(spec, membership, **kwargs)  # type: ignore[arg-type]
    return caught.value.code


def test_a_member_with_an_allowed_role_and_current_epoch_is_authorized() -> None:
    """wire§9: mission.create is issued by mission_owner or coordinator."""
    authorize(CREATE, Membership(W1, ("coordinator",), 2, True), actor=W1, membership_epoch=2)


def test_non_member_is_not_a_member_even_with_a_wrong_epoch() -> None:
    """wire§3 step 7: membership first."""
    assert _refusal(CREATE, None, membership_epoch=99) is ErrorCode.NOT_A_MEMBER


def test_revoked_member_is_not_a_member() -> None:
    """wire§2: a revoked membership grants nothing."""
    revoked = Membership(W1, ("coordinator",), 3, False)
    assert _refusal(CREATE, revoked, membership_epoch=3) is ErrorCode.NOT_A_MEMBER


def test_wrong_role_is_forbidden_before_a_stale_epoch() -> None:
    """wire§3 step 7 before step 8: a worker may not create missions, whatever its epoch."""
    worker = Membership(W1, ("worker",), 2, True)
    assert _refusal(CREATE, worker, membership_epoch=1) is ErrorCode.FORBIDDEN
    assert _refusal(CREATE, worker, membership_epoch=2) is ErrorCode.FORBIDDEN


@pytest.mark.parametrize("epoch", [1, 3, 0])
def test_stale_membership_epoch_is_refused(epoch: int) -> None:
    """wire§3 step 8: the envelope's membership epoch equals the current one."""
    member = Membership(W1, ("mission_owner", "worker"), 2, True)
    assert _refusal(CREATE, member, membership_epoch=epoch) is ErrorCode.STALE_MEMBERSHIP


def test_human_only_command_from_an_agent_is_forbidden() -> None:
    """wire§9: "human only" commands refuse agents even with the right role."""
    human_only = CommandSpec(
        type="mission.approve",
        roles=frozenset({"mission_owner"}),
        validate=lambda body: None,
        keys=lambda body: set(),
        decide=CREATE.decide,
        humans_only=True,
    )
    owner = Membership(W1, ("mission_owner",), 1, True)
    assert _refusal(human_only, owner, membership_epoch=1) is ErrorCode.FORBIDDEN
    olga = Membership("user:olga", ("mission_owner",), 1, True)
    authorize(human_only, olga, actor="user:olga", membership_epoch=1)
