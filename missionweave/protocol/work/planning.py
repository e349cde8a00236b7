"""Creating work: ``work.propose``, ``work.authorize`` (with its dependency DAG) and the
WorkItem conversation ``work.message`` (R10.1-02, R10.2-01, R10.2-02, R10.4)."""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..contracts import validate_contract
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, StateKey, View
from ..missions.model import mission_or_404, require_active_mission
from ..validation import (
    check_fields,
    check_id,
    check_text,
    malformed,
)
from . import questions
from .checks import require_item
from .dependencies import GRAPH_KEY, DependencyGraph
from .items import work_item_key
from .proposals import proposal_key
from .replacements import keys_of_replaces, replaced_events, validate_replaces

# --- work.propose / work.authorize (R10.2-01, R10.2-02, R10.4) ----------------------------


def validate_propose(body: dict[str, Any]) -> None:
    check_fields(body, required=("proposal", "title"), optional=("contract",))
    check_id(body["proposal"], "$.proposal")
    check_text(body["title"], "$.title", max_length=500)
    if body.get("contract") is not None:
        validate_contract(body["contract"])


def keys_of_propose(command: Command, view: View) -> set[StateKey]:
    return {proposal_key(command.body["proposal"])}


def decide_propose(view: View, command: Command) -> Decision:
    if view.get(proposal_key(command.body["proposal"])) is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"proposal {command.body['proposal']!r} already exists",
            requirement="R10.2-01",
        )
    return Decision(
        [NewEvent("work.proposed", dict(command.body))], {"proposal": command.body["proposal"]}
    )


def validate_authorize(body: dict[str, Any]) -> None:
    check_fields(
        body,
        required=("work_item", "mission", "contract", "depends_on"),
        optional=("proposal", "replaces"),
    )
    check_id(body["work_item"], "$.work_item")
    check_id(body["mission"], "$.mission")
    if not isinstance(body["depends_on"], list):
        raise malformed("depends_on is a list of WorkItem ids", "$.depends_on")
    for index, dep in enumerate(body["depends_on"]):
        check_id(dep, f"$.depends_on[{index}]")
    if len(set(body["depends_on"])) != len(body["depends_on"]):
        raise malformed("depends_on lists each WorkItem once", "$.depends_on")
    if body.get("proposal") is not None:
        check_id(body["proposal"], "$.proposal")
    validate_replaces(body)  # R10.2-21
    validate_contract(body["contract"])


def keys_of_authorize(command: Command, view: View) -> set[StateKey]:
    body = command.body
    keys = {work_item_key(body["work_item"]), GRAPH_KEY, ("mission", body["mission"])}
    if body.get("proposal") is not None:
        keys.add(proposal_key(body["proposal"]))
    return keys | keys_of_replaces(body)


def decide_authorize(view: View, command: Command) -> Decision:
    body = command.body
    if view.get(work_item_key(body["work_item"])) is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"WorkItem {body['work_item']!r} already exists",
            requirement="R10.2-02",
            details={"work_item": body["work_item"]},
        )
    mission = mission_or_404(view, body["mission"])
    require_active_mission(mission, "work.authorize")
    proposed_by = None
    if body.get("proposal") is not None:
        proposal = view.get(proposal_key(body["proposal"]))
        if proposal is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"no proposal {body['proposal']!r}",
                requirement="R10.2-02",
                details={"path": "$.proposal"},
            )
        if proposal.state != "open":
            raise ProtocolError(
                ErrorCode.ILLEGAL_TRANSITION,
                f"proposal {proposal.id} was already authorized",
                requirement="R10.2-02",
            )
        proposed_by = proposal.proposed_by
    depends_on = tuple(body["depends_on"])
    graph: DependencyGraph = view.get(GRAPH_KEY) or DependencyGraph()
    # R10.2-21: a replaced item waits on its replacement, so that edge counts too
    cycle = graph.cycle_through(body["work_item"], depends_on, replaces=body.get("replaces"))
    if cycle is not None:
        raise ProtocolError(
            ErrorCode.DEPENDENCY_CYCLE,
            "depends_on would close a cycle: " + " → ".join(cycle),
            requirement="R10.4-04",
            details={"cycle": cycle},
        )
    contract = validate_contract(body["contract"])
    payload = {**body, "contract": contract, "revision": 1}
    if proposed_by is not None:
        payload["proposed_by"] = proposed_by
    replaced = replaced_events(view, body)  # R10.2-21
    return Decision(
        [NewEvent("work.authorized", payload), *replaced],
        {"work_item": body["work_item"], "revision": 1},
    )


# --- work.message (R10.1-02) -------------------------------------------------------------


def validate_message(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "text"), optional=("in_reply_to", "essential"))
    check_id(body["work_item"], "$.work_item")
    check_text(body["text"], "$.text")
    if body.get("in_reply_to") is not None:
        check_id(body["in_reply_to"], "$.in_reply_to")
    if "essential" in body and not isinstance(body["essential"], bool):
        raise malformed("essential is a boolean", "$.essential")


def decide_message(view: View, command: Command) -> Decision:
    """Posted in any state (R10.1-02). A reply to an open essential question records whether
    it settles it (``resolves``): only the coordinator's or a mission owner's, never the
    asker's (R10.1-04, ``questions``); any other reply is kept and settles nothing."""
    item = require_item(view, command.body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    payload = {
        **command.body,
        "message": command.id,
        **questions.verdict(item, command.body, actor=command.actor, roles=command.actor_roles),
    }
    result: dict[str, Any] = {"message": command.id}
    if "resolves" in payload:
        result["resolves"] = payload["resolves"]
    return Decision([NewEvent("work.message_posted", payload)], result)
