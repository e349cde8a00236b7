"""The world of the revocation browser test (issue 13 §2): a person, ``user:mia``, who works
in a group — she holds a WorkItem's active lease and the capability token its start minted —
beside an item waiting for an execution approval that someone else asked for.

Mia's own commands go over REST to the live server with her API token (unsigned, wire.md §3),
as a person's client would send them; the coordinator agent's go through the one write path
in this process. Every check made afterwards is an HTTP request to the same server, so the
test's thread, where Playwright runs its event loop, never touches the ORM.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.factories import HumanPersona, World, build_world, grant, human, now_text, unique
from tests.live_server import LiveServer

API = "/api/v1"
#: the contract's ``allowed`` lists, which the start's capability token carries (R11.3-06)
WIDE = {"tools": ["search"], "data": ["incidents"], "operations": ["read"]}


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any


def call(
    server: LiveServer, method: str, path: str, token: str, body: object | None = None
) -> Answer:
    """One REST request to ``/api/v1{path}`` with a bearer token; the status and JSON body
    (a 4xx is an answer here, not an exception)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.url}{API}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return Answer(response.status, json.loads(response.read() or b"null"))
    except urllib.error.HTTPError as error:
        return Answer(error.code, json.loads(error.read() or b"null"))


def ok(answer: Answer, status: int = 201) -> Any:
    assert answer.status == status, answer
    return answer.body


def command(
    server: LiveServer, persona: HumanPersona, group: str, type_: str, body: dict[str, Any]
) -> Answer:
    """``POST /groups/{group}/commands`` as the person, with her API token."""
    return call(
        server,
        "POST",
        f"/groups/{group}/commands",
        persona.token,
        persona.command(group, type_, body),
    )


def capability_check(server: LiveServer, asker: HumanPersona, token: str) -> dict[str, Any]:
    """``POST /capabilities:check`` (R11.5-05): always 200, ``valid`` says which."""
    return ok(call(server, "POST", "/capabilities:check", asker.token, {"token": token}), 200)


def work_item(server: LiveServer, reader: HumanPersona, group: str, item: str) -> dict[str, Any]:
    return ok(call(server, "GET", f"/groups/{group}/work-items/{item}", reader.token), 200)


def events(server: LiveServer, reader: HumanPersona, group: str) -> list[dict[str, Any]]:
    """The whole log of a small group (one page of at most 1000 events)."""
    page = ok(call(server, "GET", f"/groups/{group}/events?after=0&limit=1000", reader.token), 200)
    assert page["next_after"] >= page["head"], "the test group outgrew one page"
    return page["events"]


@dataclass(frozen=True)
class RevocationWorld:
    world: World
    mia: HumanPersona  # a person with the worker role only, at first
    mission: str
    held: str  # active, mia's lease
    lease: str
    capability_token: str
    gated: str  # queued for w2, waiting for one mission owner's execution approval


def build_revocation_world(server: LiveServer) -> RevocationWorld:
    """Committed before any browser starts, so the server process sees it all.

    Mia accepts an offer and starts the item over REST: a person may hold the worker role, and
    ``work.start`` answers her with the lease and a capability token for the contract's
    ``allowed`` scope (R11.3-06), which ``capabilities:check`` accepts until the lease ends.
    """
    world = build_world()
    mia = human("mia")
    grant(world.alice, world.group, mia, "worker")
    mission = wf.mission(world)
    # Deadlines two days ahead: the example contract's own has passed, and an item whose
    # start-by is missed would show so on every screenshot.
    deadline = now_text(2 * 86400)
    gated = wf.queued(world, mission, contract=wf.gated_contract(1, deadline=deadline))

    held = wf.authorize(world, mission, contract=example_contract(deadline=deadline, allowed=WIDE))
    offer = unique("o")
    wf.submit(
        world.w1,
        world.group,
        "work.offer",
        {
            "work_item": held,
            "offers": [{"offer": offer, "worker": mia.principal, "expires_at": now_text(600)}],
            "mode": "urgent",
            "selection_basis": wf.SELECTION_BASIS,
        },
    )
    accepted = ok(
        command(
            server,
            mia,
            world.group,
            "work.accept_offer",
            {"work_item": held, "offer": offer, "contract_revision": 1},
        )
    )
    epoch = accepted["result"]["ownership_epoch"]
    started = ok(
        command(
            server,
            mia,
            world.group,
            "work.start",
            {"work_item": held, "ownership_epoch": epoch},
        )
    )
    [token] = started["result"]["capability_tokens"]
    return RevocationWorld(
        world=world,
        mia=mia,
        mission=mission,
        held=held,
        lease=started["result"]["lease"]["lease_id"],
        capability_token=token["token"],
        gated=gated,
    )
