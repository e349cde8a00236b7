"""wire.md §3 steps 7 and 8: membership, role and membership epoch — pure, given the membership."""

from __future__ import annotations

from .commands import CommandSpec
from .errors import ErrorCode, ProtocolError
from .identifiers import is_human
from .memberships import Membership


def authorize(
    spec: CommandSpec, membership: Membership | None, *, actor: str, membership_epoch: int
) -> None:
    """Refuse unless ``actor`` is an active member whose roles may issue ``spec`` now."""
    if membership is None or not membership.active:
        raise ProtocolError(
            ErrorCode.NOT_A_MEMBER,
            f"{actor} is not a member of this group",
            requirement="wire§2",
        )
    if spec.humans_only and not is_human(actor):
        raise ProtocolError(
            ErrorCode.FORBIDDEN, f"{spec.type} is issued by a human only", requirement="wire§9"
        )
    if not spec.roles.intersection(membership.roles):
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"roles {list(membership.roles)} may not issue {spec.type}",
            requirement="wire§9",
            details={"allowed_roles": sorted(spec.roles)},
        )
    if membership_epoch != membership.epoch:
        raise ProtocolError(
            ErrorCode.STALE_MEMBERSHIP,
            f"membership epoch {membership_epoch} is not the current {membership.epoch}",
            requirement="wire§2",
            details={"current_epoch": membership.epoch},
        )
