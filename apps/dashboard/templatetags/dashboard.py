"""Template helpers of the dashboard pages."""

from __future__ import annotations

from datetime import timedelta

from django import template

from apps.dashboard.actions import new_command_id
from apps.dashboard.attempts import LEASE_ENDINGS
from apps.dashboard.timeline import event_family
from missionweave.protocol.timefmt import parse_timestamp

register = template.Library()


@register.simple_tag
def fresh_command_id() -> str:
    """A new command id for a form: resubmitting that same form is an idempotent replay."""
    return new_command_id()


@register.filter
def wire_time(value: object) -> str:
    """A wire.md timestamp as people read it (``2026-11-30 12:16:28 UTC``); anything that is
    not one is shown as it is."""
    try:
        moment = parse_timestamp(value)
    except (TypeError, ValueError):
        return "" if value is None else str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


@register.filter
def minutes(value: object) -> str:
    """A ``timedelta`` in whole minutes for a sentence (``15 minutes``, ``1 minute``);
    anything else as it is."""
    if not isinstance(value, timedelta):
        return "" if value is None else str(value)
    count = max(1, round(value.total_seconds() / 60))
    return f"{count} minute{'' if count == 1 else 's'}"


@register.filter(name="event_family")
def event_family_of(event_type: object) -> str:
    """The badge family of an event type (``lease.expired`` -> ``lease``), as in the log."""
    return event_family(event_type)


@register.filter
def lookup(mapping: object, key: object) -> object:
    """``mapping[key]`` in a template, or ``None`` (templates cannot index by a variable)."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def short_digest(digest: object) -> str:
    """``sha256:3f2a…9c41``: enough of a digest to tell artifacts apart at a glance."""
    text = str(digest)
    prefix, _, hexes = text.partition(":")
    return f"{prefix}:{hexes[:8]}…{hexes[-4:]}" if len(hexes) > 16 else text


@register.filter
def spaced(value: object) -> str:
    """A protocol token as words: ``needs_changes`` -> ``needs changes``."""
    return str(value).replace("_", " ")


@register.filter
def lease_details(lease: object) -> list[tuple[str, str]]:
    """A lease's protocol facts (its id, holder, session and ownership epochs) for the
    collapsed technical details: a person reads the holder's name and the times."""
    if lease is None:
        return []
    return [
        ("lease", str(getattr(lease, "lease_id", ""))),
        ("holder", str(getattr(lease, "agent", ""))),
        ("session epoch", str(getattr(lease, "session_epoch", None) or "—")),
        ("ownership epoch", str(getattr(lease, "ownership_epoch", ""))),
        *([("ended by", str(lease.closed_by))] if getattr(lease, "closed_by", None) else []),
    ]


@register.filter
def lease_ending(closed_by: object) -> str:
    """How a lease ended, in words (``work.checkpointed`` -> "released at a checkpoint"):
    the event's name stays in the lease's technical details. The part before a colon is
    what the status chip beside it already says ("completed", "revoked"), so only the
    reason after it is shown."""
    if not closed_by:
        return "—"
    _, words = LEASE_ENDINGS.get(str(closed_by), ("", "ended"))
    return words.partition(": ")[2] or words


@register.filter
def flash_details(tags: object) -> dict[str, str]:
    """A flash message's ``extra_tags`` split into its technical parts (``actions.show_refusal``
    joins the code, the requirement and the protocol's message); empty for a plain message."""
    parts = str(tags or "").split("\x1f")
    keys = ("code", "requirement", "message")
    return {key: part for key, part in zip(keys, parts, strict=False) if part}
