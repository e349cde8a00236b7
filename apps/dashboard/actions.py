"""What every dashboard form shares on its way to a command: the command id the page mints,
the submission as the signed-in person through the one write path, the ``next`` page to go
back to, and the refusal shown as people read it.

Every decision (membership, role, idempotency, the command's own rules) is the write
path's; the form only shapes what the person typed. A refusal is shown as a sentence
(``refusal_words``), with the wire.md §8 code, the rule's R-ID and the protocol's message in
the page's collapsed technical details, and nothing is appended. ``refused`` redirects back
(post/redirect/get), so it serves forms with nothing typed in them (roles, memberships);
a form holding a person's text goes through ``decision_forms.decide``, which answers with the
page and the text kept.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme

from apps.ledger.write_path import Caller, Outcome, submit_as_human
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.identifiers import is_id

from .refusal_words import plain_refusal

#: joins a flash message's technical parts in its ``extra_tags``: code, requirement, message
#: (``templatetags.dashboard.flash_details`` splits them again)
TECHNICAL_SEPARATOR = "\x1f"


def new_command_id() -> str:
    """A fresh command id. Forms carry one from the page that showed them, so a resubmitted
    form (a double click, the back button) is an idempotent replay, not a second command."""
    return f"dash-{secrets.token_hex(12)}"


def refused(
    request: HttpRequest, error: ProtocolError, back_url: str, *, words: str = ""
) -> HttpResponse:
    """A refused form, answered as the refusal's own status class says.

    404 (an id this group does not have) is the site's 404, as for every page of the group.
    403 (the person's role, self-approval, an approval still missing: wire.md §8) is a page
    of its own with status 403 — the screen never offered this person that form, so nothing
    they typed is lost. Anything else (a stale page, a decision someone else made first)
    goes back to the page with the reason shown, where the form is filled in again."""
    if error.status == 404:
        # another group's id, or one never written: the page a missing thing gets (wire§4)
        raise Http404(error.message)
    if error.status == 403:
        return render(
            request,
            "dashboard/refused.html",
            {"error": error, "words": words or plain_refusal(error), "back": back_url},
            status=403,
        )
    show_refusal(request, error, words=words)
    return HttpResponseRedirect(back_url)


def show_refusal(request: HttpRequest, error: ProtocolError, *, words: str = "") -> None:
    """A refusal as people read it: ``words`` (or the sentence ``refusal_words`` has for
    it), its code, rule and protocol message kept for the collapsed technical details."""
    technical = TECHNICAL_SEPARATOR.join((error.code.value, error.requirement, error.message))
    messages.error(request, words or plain_refusal(error), extra_tags=technical)


def submit_form_command(
    request: HttpRequest, group: str, type_: str, submitted: dict[str, Any], cleaned: dict[str, Any]
) -> Outcome:
    """Submit a form's command as the signed-in person, under the form's own command id when
    it carries one (a resubmitted page replays, never repeats), else a fresh one."""
    command_id = cleaned.get("command_id")
    return submit_as_human(
        caller=Caller.for_user(request.user),
        group_id=group,
        type_=type_,
        body=submitted,
        command_id=command_id if is_id(command_id) else new_command_id(),
    )


def return_to(request: HttpRequest, default: str) -> str:
    """The form's ``next`` if it is a page of this site, else ``default`` (no open redirect)."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
