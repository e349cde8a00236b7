"""The client's context-package helpers against a live server (R13.3-01..05, R13.3-07; wire.md
§4, §9): publish versions, read them verified, list a mission's packages, read the events a
version cites, forward one to another group — and a package changed on the way is refused.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from missionweave.client import AgentClient, ApiError, ContextPackages
from missionweave.protocol.examples import example_contract
from tests.factories import World, build_world, grant, group, mission_body
from tests.live_server import LiveServer
from tests.work.lifecycle import DEADLINE

pytestmark = pytest.mark.e2e

LAB = "g-lab"


@pytest.fixture
def live_world(transactional_db: None) -> World:
    """``g-research`` and ``g-lab``, committed: ``w1`` coordinates both, ``w2`` works in
    both."""
    world = build_world()
    group(LAB, world.org)
    grant(world.alice, LAB, world.w1, "coordinator")
    grant(world.alice, LAB, world.w2, "worker")
    return world


def _client(server: LiveServer, world: World, agent: str = "w1", **kwargs: Any) -> AgentClient:
    persona = world.w1 if agent == "w1" else world.w2
    return AgentClient(server.url, agent, persona.key, sleep=lambda _s: None, **kwargs)


def _mission_with_items(coordinator: AgentClient, group_id: str) -> None:
    coordinator.submit(group_id, "mission.create", mission_body("m-1"))
    for item in ("wi-1", "wi-2"):
        body = {
            "work_item": item,
            "mission": "m-1",
            "contract": example_contract(deadline=DEADLINE, inputs=[]),
            "depends_on": [],
        }
        coordinator.submit(group_id, "work.authorize", body)


def test_published_versions_read_back_verified_and_chained(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """R13.3-01, R13.3-02, R13.3-04: ``publish`` numbers each version and covers the log so
    far; ``read`` returns every version with its signature, digest and chain checked."""
    with _client(live_asgi_server, live_world) as coordinator:
        _mission_with_items(coordinator, live_world.group)
        packages = ContextPackages(coordinator)
        packages.publish(
            live_world.group, "ctx-1", mission="m-1", work_items=["wi-1"], decisions=["a"]
        )
        head = coordinator.signed_head(live_world.group)["sequence"]
        packages.publish(
            live_world.group,
            "ctx-1",
            mission="m-1",
            work_items=["wi-1", "wi-2"],
            decisions=["a", "b"],
            open_questions=["include October?"],
        )
        package = packages.read(live_world.group, "ctx-1")

    first, second = package.versions
    assert (first.version, second.version) == (1, 2)
    assert first.event_range == (1, head - 1)
    assert second.event_range == (1, head)
    assert second.package["previous"] == first.digest
    assert (second.decisions, second.open_questions) == (("a", "b"), ("include October?",))
    assert second.generator == "agent:w1"
    assert package.latest is second


def test_the_listing_and_the_cited_events_of_a_mission(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """R13.3-02, R13.3-03: a worker of the group lists the packages of its mission (latest
    version verified) and reads the events a version cites, in order."""
    with _client(live_asgi_server, live_world) as coordinator:
        _mission_with_items(coordinator, live_world.group)
        ContextPackages(coordinator).publish(
            live_world.group, "ctx-1", mission="m-1", work_items=["wi-2"], event_range=(2, 3)
        )
    with _client(live_asgi_server, live_world, "w2") as worker:
        packages = ContextPackages(worker)
        (listed,) = packages.listing(live_world.group, mission="m-1")
        assert packages.listing(live_world.group, mission="m-1", work_item="wi-1") == []
        events = list(packages.cited_events(live_world.group, "ctx-1", 1, page_size=1))

    assert (listed.id, listed.latest.work_items, listed.complete) == ("ctx-1", ("wi-2",), False)
    assert [event["sequence"] for event in events] == [2, 3]


def test_a_forwarded_version_is_read_in_the_target_group(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """R13.3-05, R13.3-07: the coordinator of both groups forwards one version; the target
    holds it under its source, signed as the source recorded it, and it enters none of the
    target's mission contexts."""
    with _client(live_asgi_server, live_world) as coordinator:
        _mission_with_items(coordinator, live_world.group)
        packages = ContextPackages(coordinator)
        packages.publish(live_world.group, "ctx-1", mission="m-1", work_items=["wi-1"])
        answer = packages.forward(live_world.group, "ctx-1", 1, to_group=LAB)
        source = packages.read(live_world.group, "ctx-1")
    assert answer.body["result"]["to_group"] == LAB

    with _client(live_asgi_server, live_world, "w2") as worker:
        packages = ContextPackages(worker)
        received = packages.read(LAB, "ctx-1", from_group=live_world.group)
        listed = packages.listing(LAB)
        assert packages.listing(LAB, mission="m-1") == []

    assert (received.received_from, received.forwarded_by) == (live_world.group, "agent:w1")
    assert received.latest.digest == source.latest.digest
    assert [package.id for package in listed] == ["ctx-1"]
    assert source.forwarded[0]["to_group"] == LAB


class Tampering(httpx.BaseTransport):
    """The real transport, with every package's decisions rewritten on the way in."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if "/contexts/" not in request.url.path or response.status_code != 200:
            return response
        document = json.loads(response.read())
        for entry in document.get("versions", []):
            entry["package"]["decisions"] = ["something the coordinator never wrote"]
        return httpx.Response(200, json=document, headers={"Content-Type": "application/json"})

    def close(self) -> None:
        self.inner.close()


def test_a_package_changed_on_the_way_is_refused(
    live_asgi_server: LiveServer, live_world: World
) -> None:
    """R13.3-01: a summary whose signature does not verify is never handed back."""
    with _client(live_asgi_server, live_world) as coordinator:
        _mission_with_items(coordinator, live_world.group)
        ContextPackages(coordinator).publish(live_world.group, "ctx-1", mission="m-1")
    with _client(live_asgi_server, live_world, "w2", transport=Tampering()) as worker:
        with pytest.raises(ApiError) as refused:
            ContextPackages(worker).read(live_world.group, "ctx-1")
        unchecked = ContextPackages(worker, verify=False).read(live_world.group, "ctx-1")
    assert (refused.value.code, refused.value.details) == ("CONTEXT_NOT_SIGNED", {"version": 1})
    assert unchecked.latest.decisions == ("something the coordinator never wrote",)
