"""The projection state a notification's recipients are chosen from (``recipients``): read
from the registry's memberships and the work app's rows, never written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model

from apps.registry.models import AgentCard, Group, Membership
from apps.work.models import Mission, WorkItem
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .recipients import Facts, People, is_person


def people(group_id: str) -> People:
    """The group's active human members and their roles, and the roles its agents hold."""
    rows = list(
        Membership.objects.filter(group_id=group_id, active=True).values_list("principal", "roles")
    )  # read once, then split into people and agents
    agents = frozenset(role for p, roles in rows if not is_person(p) for role in roles or ())
    return People({p: frozenset(roles) for p, roles in rows if is_person(p)}, agent_roles=agents)


def group_name(group_id: str) -> str:
    return Group.objects.filter(pk=group_id).values_list("name", flat=True).first() or group_id


@dataclass
class GroupsRead:
    """Each group's name and people, read once per run of a beat task (``deadlines``,
    ``blocks``) rather than once per WorkItem it looks at."""

    read: dict[str, tuple[str, People]] = field(default_factory=dict)

    def facts(self, group_id: str, item: WorkItemState) -> Facts:
        if group_id not in self.read:
            self.read[group_id] = (group_name(group_id), people(group_id))
        name, members = self.read[group_id]
        return Facts(group=group_id, group_name=name, people=members, item=item)


def item_row(group_id: str, work_item: str) -> WorkItem | None:
    return WorkItem.objects.filter(group_id=group_id, work_item_id=work_item).first()


def facts_for(event: dict[str, Any], group_id: str, *, members: People, name: str) -> Facts:
    """The state ``event``'s drafts read: its WorkItem (``payload.work_item``), the mission
    (the item's, or ``payload.mission``) and the states of that mission's WorkItems."""
    payload = event.get("payload") or {}
    row = item_row(group_id, payload["work_item"]) if "work_item" in payload else None
    item = row.to_state() if row is not None else None
    mission_id = item.mission if item is not None else payload.get("mission")
    mission = None
    states: tuple[str, ...] = ()
    if isinstance(mission_id, str):
        found = Mission.objects.filter(group_id=group_id, mission_id=mission_id).first()
        mission = found.to_state() if found is not None else None
        states = tuple(
            WorkItem.objects.filter(group_id=group_id, mission=mission_id).values_list(
                "state", flat=True
            )
        )
    return Facts(
        group=group_id,
        group_name=name,
        people=members,
        item=item,
        mission=mission,
        mission_item_states=states,
    )


def display_name(principal: str) -> str:
    """What a person reads for a principal: a person's full name (or username), an agent's
    card name (or id); never ``user:…`` (the dashboard's name book does the same per page)."""
    kind, _, ident = principal.partition(":")
    if kind == "user":
        user = get_user_model().objects.filter(username=ident).first()
        return (user.get_full_name().strip() or user.username) if user else ident
    if kind == "agent":
        card = (
            AgentCard.objects.filter(agent_id=ident)
            .order_by("-recorded_at", "-pk")
            .values_list("card", flat=True)
            .first()
        )
        named = card.get("name") if isinstance(card, dict) else None
        return named.strip() if isinstance(named, str) and named.strip() else ident
    return "the authority" if principal == "authority" else (principal or "someone")
