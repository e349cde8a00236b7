"""People-facing words on every screen (issue 34 §6): names instead of principals, times in
the viewer's own zone. Shared by every dashboard screen: ``{% load people %}``.

- ``{{ principal|display_name }}``: ``user:ada`` -> "Ada Lovelace" (or "ada"),
  ``agent:coordinator`` -> its Agent Card's name, ``authority`` -> "the authority".
  Looked up once per request (``apps.dashboard.names``).
- ``{% local_time value %}``: a ``<time>`` whose text ``static/dashboard/local-time.js`` turns
  into the viewer's local time; the UTC time stays on hover (``title``) and is the text when
  scripts are off. ``value`` is an aware ``datetime`` or a wire.md timestamp.
  ``{% local_time value "date" %}`` shows the day only.

Codes, R-IDs and raw principals go in ``dashboard/partials/technical-details.html``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html

from apps.dashboard import names
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp

register = template.Library()

#: how much of the moment each style shows (the server's text, before local-time.js)
_STYLES = {"datetime": "%Y-%m-%d %H:%M UTC", "date": "%Y-%m-%d", "seconds": "%Y-%m-%d %H:%M:%S UTC"}


@register.filter
def display_name(principal: object) -> str:
    """A principal as a person reads it: a name, never the ``user:``/``agent:`` prefix."""
    return names.display_name(principal)


@register.filter
def principal_kind(principal: object) -> str:
    """What a principal is, in a word: ``person``, ``agent`` (or nothing)."""
    text = str(principal or "")
    if text.startswith("user:"):
        return "person"
    if text.startswith("agent:"):
        return "agent"
    return ""


def _moment(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else None
    try:
        return parse_timestamp(value)
    except (TypeError, ValueError):
        return None


@register.simple_tag
def local_time(value: object, style: str = "datetime") -> str:
    """``<time datetime="…Z" title="… UTC" data-local-time="datetime">… UTC</time>``; a value
    that is not a time is shown as it is (nothing for ``None``)."""
    moment = _moment(value)
    if moment is None:
        return "" if value is None else str(value)
    pattern = _STYLES.get(style, _STYLES["datetime"])
    return format_html(
        '<time datetime="{}" title="{}" data-local-time="{}">{}</time>',
        format_timestamp(moment),
        moment.strftime(_STYLES["seconds"]),
        style if style in _STYLES else "datetime",
        moment.strftime(pattern),
    )
