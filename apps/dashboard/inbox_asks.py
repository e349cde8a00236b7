"""The inbox's first section, "Asked of you": what someone asked of the person by name
(``work.ask``: an execution approval or a review, R10.2-06, R13.2-03; issue 36 §4).

An ask is listed while it still waits on the person (``asks.asked_of``: not answered, and
what it asked for still waits) and while the protocol core would let them act on it now
(``asks.refusal_of``, against their membership): an ask they can no longer answer — their
role taken away, someone else's refusal — is not a task. One entry per WorkItem and kind,
the latest ask; the other sections are unchanged, so an item asked of the person may also
be in "Execution approvals" or "Reviews".

Reads: the asks of the group's queued and submitted WorkItems (only that key of each row),
then the whole row of the few that name the person.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from apps.work.models import WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.work import asks
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .inbox_entries import Entry, GroupRef

#: the states an ask can still wait in: an approval is given while queued, a review while
#: submitted
ASKING_STATES = (S.QUEUED, S.SUBMITTED)
#: what an entry's chip says each ask wants of the person
WANTS = {asks.EXECUTION_APPROVAL: "asks your approval", asks.REVIEW: "asks your review"}


@dataclass
class AskedEntry(Entry):
    """Something a person was asked by name: who asked, when, with their note."""

    work_item: str = ""
    wanted: str = ""
    asked_by: str = ""
    note: str = ""

    @property
    def wants(self) -> str:
        return WANTS.get(self.wanted, "asks you")

    @property
    def url(self) -> str:
        name = (
            "dashboard:approval" if self.wanted == asks.EXECUTION_APPROVAL else "dashboard:review"
        )
        return reverse(name, args=[self.group.id, self.work_item])


def _names(principal: str, value: Any) -> bool:
    return isinstance(value, list) and any(
        isinstance(ask, dict) and principal in (ask.get("asked") or ()) for ask in value
    )


def asked_entries(principal: str, group: GroupRef, membership: MembershipState) -> list[AskedEntry]:
    """What was asked of ``principal`` in ``group`` and still waits on them."""
    rows = WorkItem.objects.filter(group_id=group.id, state__in=ASKING_STATES)
    named = [
        wi for wi, kept in rows.values_list("work_item_id", "data__asks") if _names(principal, kept)
    ]
    if not named:
        return []
    entries = []
    datas = rows.filter(work_item_id__in=named).order_by("id").values_list("data", flat=True)
    for data in datas:
        item = WorkItemState.from_dict(data)
        latest: dict[str, dict[str, Any]] = {}
        for ask in asks.asked_of(item, principal):
            if asks.refusal_of(ask["for"], item, principal, membership) is None:
                latest[ask["for"]] = ask
        entries += [_entry(group, item, ask) for ask in latest.values()]
    return entries


def _entry(group: GroupRef, item: WorkItemState, ask: dict[str, Any]) -> AskedEntry:
    contract = item.contract
    return AskedEntry(
        group=group,
        mission=item.mission,
        title=str(contract.get("goal", "")),
        urgency=contract.get("urgency"),
        deadline=contract.get("deadline"),
        since_sequence=ask["sequence"],
        work_item=item.id,
        wanted=ask["for"],
        asked_by=str(ask["by"]),
        note=str(ask.get("note") or ""),
    )
