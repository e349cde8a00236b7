"""A proposal: work anyone may suggest, until a coordinator authorizes it as a WorkItem
(R10.2-02, R10.2-03). The aggregate, its state key and how events change it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evolvers import REGISTRY, evolves
from ..facts import Fact, StateKey
from ..frozen import replace


@dataclass(frozen=True, slots=True)
class Proposal:
    id: str
    title: str
    contract: dict[str, Any] | None
    proposed_by: str
    state: str = "open"  # open, authorized
    work_item: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "contract": self.contract,
            "proposed_by": self.proposed_by,
            "state": self.state,
            "work_item": self.work_item,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        return cls(**data)


def proposal_key(proposal: str) -> StateKey:
    return ("proposal", proposal)


PROPOSAL = REGISTRY.aggregate("proposal")


@evolves(
    "work.proposed",
    aggregate=PROPOSAL,
    keys=lambda fact: [proposal_key(fact.payload["proposal"])],
    creates=True,
)
def _proposed(current: None, fact: Fact, key: StateKey) -> Proposal:
    p = fact.payload
    return Proposal(
        id=p["proposal"], title=p["title"], contract=p.get("contract"), proposed_by=fact.actor
    )


def _authorized_proposal(fact: Fact) -> list[StateKey]:
    """Only a WorkItem authorized from a proposal changes one."""
    proposal = fact.payload.get("proposal")
    return [proposal_key(proposal)] if proposal else []


@evolves("work.authorized", aggregate=PROPOSAL, keys=_authorized_proposal)
def _authorized(proposal: Proposal, fact: Fact, key: StateKey) -> Proposal:
    return replace(proposal, state="authorized", work_item=fact.payload["work_item"])
