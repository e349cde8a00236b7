"""``POST /inbox/snooze/``: hide an inbox entry from the signed-in person for a while, or
show it again (issue 37 §5).

The button carries ``<group>|<kind>|<subject>|<choice>`` (``wake`` to end a snooze); the
page posts its own address as ``next`` and the browser's time zone as ``zone``, so the
person lands back where they were and "tomorrow 09:00" is their morning. Only the signed-in
person's snoozes are written, and only for a group they are a member of: there is no field
that names anyone else.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from .actions import return_to
from .snooze import EntryKey, SnoozeFor, may_snooze, snooze_entry, wake_entry, zone_of

WAKE = "wake"


@login_required
@require_POST
def inbox_snooze(request: HttpRequest) -> HttpResponse:
    entry, _, choice = request.POST.get("snooze", "").rpartition("|")
    key = EntryKey.parse(entry)
    if key is None or (choice != WAKE and choice not in SnoozeFor.values):
        return HttpResponseBadRequest("This snooze button is out of date: reload the inbox.")
    if not may_snooze(request.user, key):
        # another group's entry, or one of a group the person has left: as every page of a
        # group they may not see (wire.md §4)
        raise Http404("not a member of this group")
    back = return_to(request, reverse("dashboard:inbox"))
    if "#" not in back:  # the person's place: the section the entry was in
        back += f"#inbox-{key.kind}"
    if choice == WAKE:
        wake_entry(user=request.user, key=key)
        messages.success(request, "The entry is back in your inbox.")
        return HttpResponseRedirect(back)
    zone = zone_of(request.POST.get("zone", ""), timezone.get_current_timezone())
    until = snooze_entry(
        user=request.user, key=key, choice=SnoozeFor(choice), now=timezone.now(), zone=zone
    )
    local = until.astimezone(zone)
    messages.success(
        request,
        f"Snoozed until {local:%a %d %b %H:%M} ({local.tzname()}): it comes back by itself then.",
    )
    return HttpResponseRedirect(back)
