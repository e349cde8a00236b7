"""The people and the work the notification tests share, through the real write path: the
world of ``tests.factories`` (alice admin, olga mission owner, w1 coordinator, w2 worker),
plus omar, a second mission owner, and rita, a reviewer — each with an email address."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model

from tests import factories
from tests.factories import HumanPersona, World, mission_body
from tests.work.lifecycle import contract, offer_body, offer_entry, submit


@dataclass
class Cast:
    world: World
    omar: HumanPersona
    rita: HumanPersona

    @property
    def group(self) -> str:
        return self.world.group


def email_of(persona: HumanPersona) -> str:
    return f"{persona.username}@example.test"


def cast(group_id: str = "g-notify") -> Cast:
    world = factories.build_world(group_id)
    omar = factories.human("omar")
    rita = factories.human("rita")
    factories.grant(world.alice, group_id, omar, "mission_owner")
    factories.grant(world.alice, group_id, rita, "reviewer")
    users = get_user_model().objects
    for persona in (world.alice, world.olga, omar, rita):
        users.filter(username=persona.username).update(
            email=email_of(persona), first_name=persona.username.title()
        )
    submit(world.w1, group_id, "mission.create", mission_body("m-1"))
    return Cast(world, omar, rita)


def gated_item_accepted(
    story: Cast, work_item: str, *, approvals: int = 2, start_within_s: int = 3600
) -> None:
    """A WorkItem whose start needs ``approvals`` mission owners' approval (R10.2-06),
    authorised by the coordinator agent, offered to w2 and accepted: it waits for them."""
    world = story.world
    body = {
        "work_item": work_item,
        "mission": "m-1",
        "contract": contract(approvals=approvals, goal=f"Summarise {work_item}"),
        "depends_on": [],
    }
    submit(world.w1, story.group, "work.authorize", body)
    offer = offer_body(
        work_item, [offer_entry(f"{work_item}-o", world.w2)], start_within_s=start_within_s
    )
    submit(world.w1, story.group, "work.offer", offer)
    accept = {"work_item": work_item, "offer": f"{work_item}-o", "contract_revision": 1}
    submit(world.w2, story.group, "work.accept_offer", accept)
