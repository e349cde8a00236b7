"""The Worker against the real server (issue 14 §6): a coordinator (this test) authorises and
offers an item in each of two groups; a Worker running in a thread follows both groups on the
websocket stream, accepts, discloses, starts, reports progress and submits a real artifact
with evidence — every command signed by the agent and accepted by the real write path; and a
membership revoked under it stops that group's work only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from apps.registry import services
from missionweave.client import AgentClient, CursorStore
from missionweave.protocol import states as S
from missionweave.worker.config import WorkerConfig, load_config
from missionweave.worker.runtime import Worker
from tests.ledger.rewrites import rewrite_history
from tests.live_server import uvicorn_server
from tests.worker.fake_work import QUICK_STEPS, render
from tests.worker.live_org import GROUPS, LiveOrg, item_of, wait_for

__all__ = ["uvicorn_server"]

pytestmark = pytest.mark.e2e


def test_a_worker_serves_two_groups_end_to_end(live_org: LiveOrg, tmp_path: Path) -> None:
    """R11.1-01 (one queue per group), R10.3-07, R11.2-01, R11.4-03, R10.2-11, R13.2-02:
    both items are accepted, disclosed, started, reported on and submitted with the
    handler's artifact, which the coordinator downloads intact (R13.1-05)."""
    config = load_config(live_org.write_config(tmp_path))
    coordinator = live_org.coordinator_client()
    worker_client = AgentClient(
        live_org.server.url,
        live_org.worker.id,
        live_org.worker.key,
        agent_card_version="1",
    )
    worker = Worker(config, worker_client)
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("clean", worker.run()))
    thread.start()
    try:
        items = {group: live_org.offer(coordinator, group) for group in GROUPS}
        for group, work_item in items.items():
            wait_for(
                lambda g=group, w=work_item: item_of(coordinator, g, w)["state"] == S.SUBMITTED
            )
        for group, work_item in items.items():
            item = item_of(coordinator, group, work_item)
            assert item["owner"] == worker_client.principal
            assert item["schedule"]["ownership_epoch"] == 1  # disclosed on acceptance
            events = coordinator.get_json(
                f"/groups/{group}/events", params={"after": 0, "limit": 1000}
            )["events"]
            mine = [e for e in events if e["payload"].get("work_item") == work_item]
            types = [e["type"] for e in mine]
            assert types.index("work.schedule_disclosed") < types.index("work.started")
            assert "work.progress_reported" in types
            (submitted,) = [e for e in mine if e["type"] == "work.submitted"]
            (digest,) = submitted["payload"]["artifacts"]
            expected = render(
                {"media_type": "text/markdown"}, work_item, item["contract"]["goal"], QUICK_STEPS
            )
            assert coordinator.download(digest) == expected
    finally:
        worker.stop()
        thread.join(timeout=30)
        coordinator.close()
        worker_client.close()
    assert outcome == {"clean": True}
    assert worker.errors == []


def test_a_revoked_membership_stops_that_groups_work_only(
    live_org: LiveOrg, tmp_path: Path
) -> None:
    """wire.md §7, protocol.md §2 (R11.5-01, R11.3-07), R0-01: while the worker runs a long
    item in g-alpha, an admin revokes its membership there. The stream ends that group with
    NOT_A_MEMBER; the worker drops it — the running item stops without writing anything more
    to the group's log — and the work of g-beta still flows."""
    alpha, beta = GROUPS
    config = load_config(live_org.write_config(tmp_path))
    coordinator = live_org.coordinator_client()
    worker_client = AgentClient(
        live_org.server.url, live_org.worker.id, live_org.worker.key, agent_card_version="1"
    )
    worker = Worker(config, worker_client)
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("clean", worker.run()))
    thread.start()
    try:
        slow = live_org.offer(coordinator, alpha, kind="text.digest")
        wait_for(lambda: item_of(coordinator, alpha, slow)["state"] == S.ACTIVE)
        revoked = services.membership_revoke(
            group_id=alpha, admin=live_org.admin.caller, principal=live_org.worker.principal
        )
        revoked_at = max(event["sequence"] for event in revoked.body["events"])
        wait_for(
            lambda: (
                alpha in worker.revoked and all(run.group != alpha for run in worker._snapshot())
            )
        )
        assert_fenced_while_the_other_flows(live_org, coordinator, alpha, beta, after=revoked_at)
        assert item_of(coordinator, alpha, slow)["owner"] != live_org.worker.principal
        assert worker.revoked == {alpha}
    finally:
        worker.stop()
        thread.join(timeout=30)
        coordinator.close()
        worker_client.close()
    assert outcome == {"clean": True}
    assert worker.errors == []


def assert_fenced_while_the_other_flows(
    live_org: LiveOrg, coordinator: AgentClient, fenced: str, other: str, *, after: int
) -> None:
    """A new item in ``other`` is done end to end, and the worker sent nothing to ``fenced``
    after its event ``after`` (R0-01: one group's fence leaves the others working)."""
    quick = live_org.offer(coordinator, other)
    wait_for(lambda: item_of(coordinator, other, quick)["state"] == S.SUBMITTED)
    events = coordinator.get_json(
        f"/groups/{fenced}/events", params={"after": after, "limit": 1000}
    )["events"]
    assert [e for e in events if e["actor"] == live_org.worker.principal] == []


@contextmanager
def watched_worker(
    live_org: LiveOrg, tmp_path: Path
) -> Iterator[tuple[AgentClient, Worker, WorkerConfig]]:
    """The coordinator's client and a running Worker checking its heads every 0.2 s; stopped
    and closed on leaving."""
    config = load_config(live_org.write_config(tmp_path, head_check_s="0.2"))
    coordinator = live_org.coordinator_client()
    worker_client = AgentClient(
        live_org.server.url, live_org.worker.id, live_org.worker.key, agent_card_version="1"
    )
    worker = Worker(config, worker_client)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        yield coordinator, worker, config
    finally:
        worker.stop()
        thread.join(timeout=30)
        coordinator.close()
        worker_client.close()


def test_a_worker_stops_trusting_a_group_whose_history_was_rewritten(
    live_org: LiveOrg, tmp_path: Path
) -> None:
    """Issue 33 §2 (R16-10, R16-11): the Worker keeps each group's signed head; after the
    schema owner rewrites g-alpha's history under it (and re-signs over the forgery), the next
    head check raises ``HistoryForked`` for g-alpha, naming both heads, while g-beta's work
    still flows. The kept head survives a restart of the Worker (its state folder)."""
    alpha, beta = GROUPS
    with watched_worker(live_org, tmp_path) as (coordinator, worker, config):
        first = live_org.offer(coordinator, alpha)
        wait_for(lambda: item_of(coordinator, alpha, first)["state"] == S.SUBMITTED)
        head = coordinator.signed_head(alpha)
        wait_for(lambda: worker.store.known_head(alpha) == head)
        rewrite_history(alpha, from_sequence=2)
        wait_for(lambda: alpha in worker.head_watch.forked)
        fork = worker.head_watch.forked[alpha]
        assert fork.known == head
        assert fork.offered["sequence"] == head["sequence"]
        assert fork.offered["hash"] != head["hash"]
        quick = live_org.offer(coordinator, beta)
        wait_for(lambda: item_of(coordinator, beta, quick)["state"] == S.SUBMITTED)
        assert beta not in worker.head_watch.forked
    assert CursorStore(config.state_dir / "queues.sqlite3").known_head(alpha) == head


def test_a_worker_takes_no_more_work_in_a_group_whose_history_was_rewritten(
    live_org: LiveOrg, tmp_path: Path
) -> None:
    """Issue 33 §2: once g-alpha's history contradicts the head the Worker kept, the item it
    was running there stops at its next checkpoint and nothing more of it is sent — its
    queue came from the history it no longer trusts — while g-beta's work flows."""
    alpha, beta = GROUPS
    with watched_worker(live_org, tmp_path) as (coordinator, worker, _config):
        slow = live_org.offer(coordinator, alpha, kind="text.digest")
        wait_for(lambda: item_of(coordinator, alpha, slow)["state"] == S.ACTIVE)
        wait_for(lambda: worker.store.known_head(alpha) is not None)
        rewrite_history(alpha, from_sequence=2)
        wait_for(lambda: alpha in worker.head_watch.forked)
        wait_for(lambda: all(run.group != alpha for run in worker._snapshot()))
        assert worker.distrusted == {alpha}
        stopped_at = coordinator.signed_head(alpha)["sequence"]
        assert_fenced_while_the_other_flows(live_org, coordinator, alpha, beta, after=stopped_at)
        assert item_of(coordinator, alpha, slow)["state"] == S.ACTIVE  # never submitted
    assert worker.errors == []
