"""A small organisation on the live server for the Worker's end-to-end tests: two groups, a
coordinator agent (w1) that authorises and offers work as test code, a worker agent (w2)
whose key and TOML config the runtime under test uses, and the staff admin (alice) who
granted their memberships.

Everything the server should see is committed (``transactional_db``), and every command goes
through the real API signed by its agent (``AgentClient``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from missionweave.client import AgentClient
from missionweave.protocol.examples import example_contract
from missionweave.protocol.signing import b64url_encode, private_key_seed
from tests import factories
from tests.factories import AgentPersona, HumanPersona, mission_body, now_text, unique
from tests.live_server import LiveServer
from tests.work.lifecycle import DEADLINE, selection_basis

GROUPS = ("g-alpha", "g-beta")
REPO = Path(__file__).resolve().parents[2]


@dataclass
class LiveOrg:
    server: LiveServer
    coordinator: AgentPersona
    worker: AgentPersona
    #: the staff admin who granted the memberships (and may revoke them)
    admin: HumanPersona

    def coordinator_client(self) -> AgentClient:
        return AgentClient(self.server.url, self.coordinator.id, self.coordinator.key)

    def offer(
        self,
        client: AgentClient,
        group: str,
        *,
        kind: str = "text.summarise",
        mission_budgets: dict[str, Any] | None = None,
        **contract: Any,
    ) -> str:
        """A mission with one WorkItem of ``kind`` authorised and offered to the worker;
        ``mission_budgets`` replaces the mission's default budgets."""
        mission, work_item = unique("m"), unique("wi")
        budgets = {} if mission_budgets is None else {"budgets": mission_budgets}
        client.submit(group, "mission.create", mission_body(mission, **budgets))
        terms = example_contract(
            deadline=DEADLINE,
            capabilities=[{"id": kind, "version": "1"}],
            acceptance_criteria=example_contract()["acceptance_criteria"][:1],
            **contract,
        )
        client.submit(
            group,
            "work.authorize",
            {"work_item": work_item, "mission": mission, "contract": terms, "depends_on": []},
        )
        client.submit(
            group,
            "work.offer",
            {
                "work_item": work_item,
                "offers": [
                    {
                        "offer": f"{work_item}-o1",
                        "worker": self.worker.principal,
                        "expires_at": now_text(3600),
                    }
                ],
                "mode": "sequential",
                "selection_basis": selection_basis(),
            },
        )
        return work_item

    def write_config(self, folder: Path, *, stream: bool = True, **extra: str) -> Path:
        """The worker's key file and TOML config in ``folder``."""
        key = folder / "w2.key"
        key.write_text(b64url_encode(private_key_seed(self.worker.key)) + "\n")
        stream_url = self.server.ws_url if stream else ""
        lines = [
            f'agent_id = "{self.worker.id}"',
            'key_file = "w2.key"',
            f'authority_url = "{self.server.url}"',
            f'stream_url = "{stream_url}"',
            'state_dir = "state"',
            f'python_path = ["{REPO}"]',
            "tick_s = 0.05",
            "shutdown_timeout_s = 20",
            *(f"{name} = {value}" for name, value in extra.items()),
            "",
            "[agent_card]",
            'version = "1"',
            "max_concurrency = 2",
            'capabilities = [{ id = "text.summarise", version = "1" }, '
            '{ id = "text.digest", version = "1" }]',
            "",
            *(f"[groups.{group}]" for group in GROUPS),
            "",
            "[handlers]",
            '"text.summarise" = "tests.worker.fake_work:summarise"',
            '"text.digest" = "tests.worker.fake_work:digest_slowly"',
            "",
            "[progress]",
            "min_interval_s = 0.2",
            "max_interval_s = 5",
        ]
        path = folder / "worker.toml"
        path.write_text("\n".join(lines) + "\n")
        return path


def build_live_org(server: LiveServer) -> LiveOrg:
    """Two groups of one organisation; w1 coordinates both, w2 works in both."""
    org = factories.organization()
    for group in GROUPS:
        factories.group(group, org)
    alice = factories.human("alice", staff=True)
    coordinator = factories.agent("w1", org)
    worker = factories.agent("w2", org)
    for group in GROUPS:
        factories.grant(alice, group, coordinator, "coordinator")
        factories.grant(alice, group, worker, "worker")
    return LiveOrg(server, coordinator, worker, alice)


def item_of(client: AgentClient, group: str, work_item: str) -> dict[str, Any]:
    return client.get_json(f"/groups/{group}/work-items/{work_item}")


def wait_for(condition: Callable[[], bool], timeout_s: float = 60.0, what: str = "") -> None:
    """Poll ``condition`` every 50 ms until it holds; fail, saying ``what``, after
    ``timeout_s`` (the live tests wait for the real server and worker threads or processes)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"the condition did not hold in time: {what}"
        time.sleep(0.05)
