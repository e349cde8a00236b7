"""Many WorkItems with execution leases that run out, built through the real write path.

The sweep tests need hundreds of items in ``active`` whose leases expire within a second or
two. Each item takes four commands (``work.authorize`` and ``work.offer`` by the coordinator,
``work.accept_offer`` and ``work.start`` with ``lease_ttl_s`` by its worker), sent with
``submit_batch`` a hundred items at a time, so 1,000 items cost 40 batches rather than 4,000
requests. Nothing is written around the write path: the logs, the projections and a rebuild
agree from the start.

Two workers share the items: the owner of item ``n`` is ``workers[n % 2]``. Every item is
offered (urgently) to both, so the other one is the *next eligible worker* the reassignment
offers it to (R11.5-01); every ``lonely_every``-th item is offered to its owner alone, so its
reassignment finds nobody and leaves it ``open``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from apps.ledger.write_path import Outcome, submit_batch
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.timefmt import parse_timestamp
from tests import factories
from tests.factories import AgentPersona, mission_body
from tests.work.lifecycle import contract, offer_body, offer_entry, submit

MISSION = "m-sweep"
ITEMS_PER_BATCH = 100  # each item is two commands of a batch


@dataclass
class LeaseCast:
    """One coordinator and two workers, members of every group."""

    groups: list[str]
    coordinator: AgentPersona
    workers: list[AgentPersona]


@dataclass(frozen=True)
class Leased:
    """An item started with a short lease, and what its reassignment should do."""

    group: str
    item: str
    owner: str  # principal holding the lease
    next_worker: str | None  # whom the reassignment must offer it to (None: nobody)
    lease_id: str
    expires_at: str


def lease_cast(prefix: str, groups: int) -> LeaseCast:
    """An organisation, ``groups`` groups with a mission each, a coordinator and two workers,
    all through the services and the write path, with sessions open."""
    org = factories.organization(f"org-{prefix}")
    alice = factories.human(f"alice-{prefix}", staff=True)
    group_ids = [factories.group(f"g-{prefix}-{n}", org) for n in range(groups)]
    coordinator = factories.agent(f"{prefix}-coord", org)
    workers = [factories.agent(f"{prefix}-w{n}", org) for n in range(2)]
    for group in group_ids:
        factories.grant(alice, group, coordinator, "coordinator")
        for worker in workers:
            factories.grant(alice, group, worker, "worker")
    for persona in (coordinator, *workers):
        persona.open_session()
    for group in group_ids:
        submit(coordinator, group, "mission.create", mission_body(MISSION))
    return LeaseCast(group_ids, coordinator, workers)


def _send(
    persona: AgentPersona, group: str, commands: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """``commands`` as ``persona`` in batches; every one must be accepted. Their results."""
    results: list[dict[str, Any]] = []
    step = 2 * ITEMS_PER_BATCH
    for start in range(0, len(commands), step):
        documents = [persona.command(group, t, body) for t, body in commands[start : start + step]]
        answers = submit_batch(group_id=group, documents=documents, caller=persona.caller)
        refused = [answer for answer in answers if isinstance(answer, ProtocolError)]
        assert not refused, refused[:3]
        results += [answer.body["result"] for answer in answers if isinstance(answer, Outcome)]
    return results


def start_expiring_leases(
    cast: LeaseCast, count: int, *, lease_ttl_s: int = 1, lonely_every: int = 10
) -> list[Leased]:
    """``count`` items spread round-robin over the groups, each ``active`` under a lease of
    ``lease_ttl_s`` seconds (R11.3-03) held by its owner."""
    plans: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for n in range(count):
        plans[cast.groups[n % len(cast.groups)]].append((f"wi-{n:05d}", n))
    leased: list[Leased] = []
    for group, items in plans.items():
        coordinating: list[tuple[str, dict[str, Any]]] = []
        by_owner: dict[int, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        expected: dict[str, tuple[int, str | None]] = {}
        for item, n in items:
            owner, other = cast.workers[n % 2], cast.workers[(n + 1) % 2]
            lonely = n % lonely_every == 0
            authorize = {"work_item": item, "mission": MISSION, "contract": contract()}
            coordinating.append(("work.authorize", {**authorize, "depends_on": []}))
            offers = [offer_entry(f"o-{item}-own", owner)]
            if not lonely:
                offers.append(offer_entry(f"o-{item}-next", other))
            coordinating.append(("work.offer", offer_body(item, offers, mode="urgent")))
            accept = {"work_item": item, "offer": f"o-{item}-own", "contract_revision": 1}
            start = {"work_item": item, "ownership_epoch": 1, "lease_ttl_s": lease_ttl_s}
            by_owner[n % 2] += [("work.accept_offer", accept), ("work.start", start)]
            expected[item] = (n % 2, None if lonely else other.principal)
        _send(cast.coordinator, group, coordinating)
        for index, commands in by_owner.items():
            results = _send(cast.workers[index], group, commands)
            starts = [body for t, body in commands if t == "work.start"]
            for body, result in zip(starts, results[1::2], strict=True):  # starts' results
                owner_index, next_worker = expected[body["work_item"]]
                leased.append(
                    Leased(
                        group=group,
                        item=body["work_item"],
                        owner=cast.workers[owner_index].principal,
                        next_worker=next_worker,
                        lease_id=result["lease"]["lease_id"],
                        expires_at=result["lease"]["expires_at"],
                    )
                )
    return leased


def database_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def wait_until_expired(leased: list[Leased], *, timeout_s: float = 30.0) -> None:
    """Wait until the database clock (the authority's, R11.3-09) is past every lease."""
    last = max(parse_timestamp(entry.expires_at) for entry in leased)
    deadline = time.monotonic() + timeout_s
    while database_now() <= last:
        assert time.monotonic() < deadline, f"the leases did not expire by {last}"
        time.sleep(0.05)
