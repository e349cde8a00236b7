"""Signed ``mission.create`` envelopes, made before the clock starts.

Signing (canonicalise + Ed25519) costs tens of microseconds of client CPU on the same two
cores the server uses, so each client gets a pool signed in advance. A client that drains
its pool signs further envelopes in its loop, and the report says how many it had to.
"""

from __future__ import annotations

import itertools
import random
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.timefmt import format_timestamp

from .world import BenchAgent

# Pads the goal so the stored mission.created event is about 600 bytes, like the ceilings'.
GOAL = "Summarise the incident reports of November and list the follow-up actions. " * 2
_serial = itertools.count(1)


def mission_create(agent: BenchAgent, group: str) -> dict[str, Any]:
    """A freshly signed ``mission.create`` with a command id and mission id never used before."""
    serial = f"{next(_serial)}-{secrets.token_hex(4)}"
    return signed_envelope(
        agent.key,
        {
            "id": f"cmd-{serial}",
            "type": "mission.create",
            "group": group,
            "actor": agent.principal,
            "session_epoch": agent.session_epoch,
            "membership_epoch": agent.membership_epochs[group],
            "issued_at": format_timestamp(datetime.now(UTC)),
            "body": {
                "mission": f"m-{serial}",
                "goal": GOAL.strip(),
                "budgets": {"money": 5.0, "tokens": 200000},
            },
        },
    )


class EnvelopePool:
    """One client's envelopes: the pre-signed ones first, then signed on demand (counted).

    Groups are drawn at random from ``groups`` (seeded per client), the same spread the
    pgbench ceiling uses with ``random(1, :groups)``.
    """

    def __init__(self, agent: BenchAgent, groups: Sequence[str], *, seed: int) -> None:
        self.agent = agent
        self.groups = tuple(groups)
        self._random = random.Random(seed)
        self._ready: list[dict[str, Any]] = []
        self.signed_in_loop = 0

    def presign(self, count: int) -> None:
        """Sign ``count`` envelopes now; from here on, count what is signed in the loop."""
        fresh = [self._sign() for _ in range(count)]
        fresh.reverse()  # pop() from the end hands them out in signing order
        self._ready = fresh + self._ready
        self.signed_in_loop = 0

    def _sign(self) -> dict[str, Any]:
        return mission_create(self.agent, self._random.choice(self.groups))

    def next(self) -> dict[str, Any]:
        if self._ready:
            return self._ready.pop()
        self.signed_in_loop += 1
        return self._sign()

    def take(self, count: int) -> list[dict[str, Any]]:
        return [self.next() for _ in range(count)]
