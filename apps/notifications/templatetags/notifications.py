"""``{% notification_bell %}``: the bell in every dashboard page's header (issue 36 §2), with
the unread count rendered on the server, so that without scripts it is a plain link to the
notifications page that still says how many wait."""

from __future__ import annotations

from typing import Any

from django import template

from apps.notifications import bell

register = template.Library()


@register.inclusion_tag("notifications/bell.html", takes_context=True)
def notification_bell(context: dict[str, Any]) -> dict[str, Any]:
    user = context["user"]
    count = bell.unread_count(user.pk)
    request = context.get("request")
    match = getattr(request, "resolver_match", None)
    return {
        "count": count,
        "shown": bell.shown(count),
        "label": bell.label(count),
        "here": bool(match and match.namespace == "notifications" and match.url_name == "list"),
    }
