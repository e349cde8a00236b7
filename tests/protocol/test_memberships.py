"""Membership grant/revoke and the membership epoch (wire.md §2, §4), as given/when/then."""

from __future__ import annotations

import pytest

from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.memberships import GRANT, REVOKE, Membership, membership_key

from .deciders import Scenario

W2 = "agent:w2"


def test_first_grant_is_granted_at_epoch_1_with_status_201() -> None:
    """wire§2: the membership epoch is 1 when first granted."""
    decision = Scenario().when(GRANT, {"principal": W2, "roles": ["worker"]})
    assert decision.status == 201
    assert [(e.type, e.payload) for e in decision.events] == [
        ("membership.granted", {"principal": W2, "roles": ["worker"], "epoch": 1})
    ]
    assert decision.result == {"principal": W2, "roles": ["worker"], "epoch": 1}


def test_grant_revoke_grant_walks_the_epoch_1_2_3_4() -> None:
    """wire§2/§4: +1 on every change (roles changed, revoked, granted again)."""
    group = Scenario()
    assert group.then(group.when(GRANT, {"principal": W2, "roles": ["worker"]})) == [
        ("membership.granted", {"principal": W2, "roles": ["worker"], "epoch": 1})
    ]

    changed = group.when(GRANT, {"principal": W2, "roles": ["worker", "reviewer"]})
    assert changed.status == 200
    assert group.then(changed) == [
        ("membership.changed", {"principal": W2, "roles": ["reviewer", "worker"], "epoch": 2})
    ]

    revoked = group.when(REVOKE, {"principal": W2})
    assert revoked.status == 200
    assert revoked.result == {"principal": W2, "epoch": 3}
    assert group.then(revoked) == [("membership.revoked", {"principal": W2, "epoch": 3})]
    assert group.state[membership_key(W2)] == Membership(W2, ("reviewer", "worker"), 3, False)

    again = group.when(GRANT, {"principal": W2, "roles": ["observer"]})
    assert again.status == 201
    assert group.then(again) == [
        ("membership.granted", {"principal": W2, "roles": ["observer"], "epoch": 4})
    ]
    assert group.state[membership_key(W2)] == Membership(W2, ("observer",), 4, True)


def test_revoking_a_principal_never_granted_is_not_found() -> None:
    """wire§4: DELETE of a non-member's membership is 404 NOT_FOUND."""
    error = Scenario().refused(REVOKE, {"principal": W2})
    assert error.code is ErrorCode.NOT_FOUND
    assert error.status == 404


def test_revoking_twice_is_not_found_the_second_time() -> None:
    """wire§4: a revoked principal is no longer a member."""
    group = Scenario().given(
        ("membership.granted", {"principal": W2, "roles": ["worker"], "epoch": 1}),
        ("membership.revoked", {"principal": W2, "epoch": 2}),
    )
    assert group.refused(REVOKE, {"principal": W2}).code is ErrorCode.NOT_FOUND


def test_grants_of_other_principals_do_not_share_an_epoch() -> None:
    """wire§2: the epoch is per (group, principal)."""
    group = Scenario().given(
        ("membership.granted", {"principal": W2, "roles": ["worker"], "epoch": 1}),
        ("membership.changed", {"principal": W2, "roles": ["observer"], "epoch": 2}),
    )
    decision = group.when(GRANT, {"principal": "user:olga", "roles": ["mission_owner"]})
    assert decision.result["epoch"] == 1


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"principal": W2}, "$.roles"),
        ({"roles": ["worker"]}, "$.principal"),
        ({"principal": "w2", "roles": ["worker"]}, "$.principal"),
        ({"principal": W2, "roles": []}, "$.roles"),
        ({"principal": W2, "roles": "worker"}, "$.roles"),
        ({"principal": W2, "roles": ["boss"]}, "$.roles[0]"),
        ({"principal": W2, "roles": ["worker", "worker"]}, "$.roles"),
        ({"principal": W2, "roles": ["worker"], "epoch": 3}, "$.epoch"),
    ],
)
def test_malformed_grant_bodies_name_the_field(body: dict, path: str) -> None:
    """wire§3 step 9: a bad body is MALFORMED with details.path."""
    error = Scenario().refused(GRANT, body)
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"] == path
