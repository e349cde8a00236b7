"""Offline stories for the pure tests of bounded offline execution (R11.5-04..R11.5-13).

A worker starts its WorkItem at ``NOW`` (lease of ``LEASE_TTL``), loses the authority, buffers
commands with the binding of R11.5-08 and later reconnects: a new session epoch, whose opening
revokes the old lease (R11.3-10, decided here as the authority's ``lease.revoke``), then the
buffered commands re-signed with that epoch (R11.5-09). Built on ``work_scenarios``' real,
decided commands; the clock of the :class:`PureDriver` is moved explicitly.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from missionweave.protocol import states as S
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.offline import EXTENSION
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp

from .deciders import GROUP, NOW
from .work_scenarios import (
    SESSION_EPOCH,
    Call,
    PureDriver,
    Ran,
    WorkStory,
    checkpoint,
    story_in,
)

MINUTE = timedelta(minutes=1)


def active_story(**story: Any) -> WorkStory:
    """``WORKER`` owns the item and started it at ``NOW`` (session epoch 1, epoch 1)."""
    return story_in(S.ACTIVE, PureDriver(), **story)


def driver_of(story: WorkStory) -> PureDriver:
    assert isinstance(story.driver, PureDriver)
    return story.driver


def lease_of(story: WorkStory) -> dict[str, Any]:
    """The story's latest lease as the authority recorded it (current or historical)."""
    view = story.view()
    assert view is not None
    leases = [*view["lease_history"], *([view["lease"]] if view["lease"] else [])]
    return next(lease for lease in reversed(leases) if lease["lease_id"] == story.lease_id)


def binding(
    story: WorkStory,
    *,
    disconnected_at: datetime = NOW + MINUTE,
    buffered_at: datetime = NOW + 2 * MINUTE,
    grace_deadline: datetime | None = None,
    usage: dict[str, Any] | None = None,
    **over: Any,
) -> dict[str, Any]:
    """The binding of R11.5-08 for the story's owner and latest lease; ``grace_deadline``
    defaults to five minutes after the lease's recorded expiry."""
    lease = lease_of(story)
    expires = parse_timestamp(lease["expires_at"])
    value: dict[str, Any] = {
        "agent": lease["agent"],
        "group": GROUP,
        "work_item": story.item,
        "session_epoch": lease["session_epoch"],
        "ownership_epoch": lease["ownership_epoch"],
        "lease_id": lease["lease_id"],
        "disconnected_at": format_timestamp(disconnected_at),
        "buffered_at": format_timestamp(buffered_at),
        "grace_deadline": format_timestamp(grace_deadline or expires + 5 * MINUTE),
        "lease_expires_at": lease["expires_at"],
        "usage": {"tokens": 1500, "compute": 12.5} if usage is None else usage,
    }
    value.update(over)
    return value


def buffered(
    story: WorkStory,
    type_: str,
    bound: dict[str, Any],
    *,
    actor: str | None = None,
    **body: Any,
) -> Call:
    """``type_`` (``work.progress``, ``work.checkpoint``, ``work.message``...) carrying the
    binding; the body under the binding's lease."""
    options = {"actor": actor} if type_ == "work.message" and actor else {}
    lease_id = bound.get("lease_id")
    if not isinstance(lease_id, str) or not lease_id:  # a malformed binding: any body lease
        lease_id = story.lease_id
    call = story.call(type_, lease_id=lease_id, **options)
    if type_ == "work.checkpoint":
        call = replace(call, body={**call.body, "checkpoint": checkpoint("offline-ckpt")})
    call = replace(call, body={**call.body, **body}, extensions={EXTENSION: bound})
    return replace(call, actor=actor) if actor else call


def reconnect(story: WorkStory, at: datetime, *, agent: str | None = None) -> Ran | None:
    """The owner opens a new session at ``at``: its epoch rises and, if its lease is still
    active, the authority revokes it (R11.3-10). The clock stays at ``at``."""
    driver = driver_of(story)
    agent = agent or story.owner_actor
    epoch = driver.sessions.get(agent, SESSION_EPOCH) + 1
    driver.sessions[agent] = epoch
    driver.at = at
    view = story.view()
    assert view is not None
    lease = view["lease"]
    if lease is None or lease["status"] != "active" or lease["agent"] != agent:
        return None
    body = {"work_item": story.item, "lease_id": lease["lease_id"], "session_epoch": epoch}
    return story.run(Call("lease.revoke", AUTHORITY, body))
