"""The Worker's decisions against an in-process authority that decides every command with the
real protocol core (``fake_authority.py``): admission, start, submission, preemption, lease
renewal, schedule disclosure and shutdown (issue 14 §6, §7)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from missionweave.protocol import states as S
from missionweave.protocol.work.schedule import FIELDS
from missionweave.worker.config import GroupConfig
from missionweave.worker.execution import TOKEN_NAME
from missionweave.worker.handlers import Progress, TaskResult
from missionweave.worker.slots import SlotContext
from tests.worker.fake_work import result_for, summarise
from tests.worker.runtime_world import Gate, world

ALPHA, BETA = "g-alpha", "g-beta"


def test_an_offer_the_worker_can_honour_is_accepted_started_and_submitted(tmp_path: Path) -> None:
    """R10.3-07, R10.2-07, R10.2-11, R13.2-02: admission accepts, the scheduler's pick is
    started with its capability token (R11.3-06), the handler's output is uploaded and
    submitted with evidence for every criterion naming the artifact."""
    tokens: list[dict[str, str]] = []

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        tokens.append(ctx.tokens())
        return summarise(ctx, progress)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)

        accepted = w.sent("work.accept_offer")
        assert [a.body["work_item"] for a in accepted] == ["wi-1"]
        assert accepted[0].body["contract_revision"] == 1
        assert len(w.sent("work.start")) == 1
        assert tokens == [{TOKEN_NAME: "token-1"}]
        (submitted,) = w.sent("work.submit")
        artifacts = submitted.body["artifacts"]
        assert [w.authority.uploads[d].startswith(b"# Summarise") for d in artifacts] == [True]
        assert {e["criterion"] for e in submitted.body["evidence"]} == {"c1", "c2"}
        assert all(e["artifacts"] == artifacts for e in submitted.body["evidence"])
        assert submitted.body["outputs"] == {"summary": artifacts[0]}
        # the local checkpoints of a submitted item are gone
        assert w.worker.pool.checkpoints(ALPHA, "wi-1").latest() is None


def test_an_offer_the_worker_cannot_honour_is_rejected_with_structured_reasons(
    tmp_path: Path,
) -> None:
    """R10.3-08..10: a capability this worker lacks, and no handler for the task kind, is a
    ``work.reject_offer`` with the protocol's reason and every refusal in the detail."""
    with world(tmp_path, handlers={"text.summarise": summarise}) as w:
        w.authority.story(ALPHA, "wi-1", capabilities=[{"id": "image.render", "version": "2"}])
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: bool(w.sent("work.reject_offer")))
        (rejected,) = w.sent("work.reject_offer")
        assert rejected.body["reason"] == "capability"
        assert "image.render@2" in rejected.body["detail"]
        assert "no handler for task kind image.render" in rejected.body["detail"]
        assert w.sent("work.accept_offer") == []
        w.until(lambda: w.worker.store.offers(ALPHA) == [])


def test_acceptance_is_followed_by_a_disclosure_of_the_items_own_schedule(
    tmp_path: Path,
) -> None:
    """R11.2-01 (MWP-WRK-012): on acceptance the owner discloses the item's start window,
    completion, confidence, capacity state and computation time — in a body of exactly the
    protocol's fields (R11.2-02)."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        for item in ("wi-1", "wi-2"):
            w.authority.story(ALPHA, item)
            w.authority.offer(ALPHA, item)
        w.until(lambda: len(w.sent("work.disclose_schedule")) == 2)
        for sent in w.sent("work.disclose_schedule"):
            assert set(sent.body) <= set(FIELDS)
            assert sent.body["ownership_epoch"] == 1
            assert sent.body["capacity_state"] in ("available", "busy", "saturated")
        second = w.authority.item(ALPHA, "wi-2")
        assert second["state"] == S.QUEUED
        assert second["schedule"]["confidence"] > 0
        gate.release.set()


_TOKEN = st.text(alphabet="qvwxz0123456789", min_size=8, max_size=8)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(_TOKEN, min_size=7, max_size=7, unique=True),
    split=st.integers(min_value=1, max_value=4),
)
def test_disclosures_never_carry_another_groups_names_items_or_missions(
    names: list[str], split: int
) -> None:
    """R11.2-02 (MWP-WRK-012), property: with work queued in two groups of random names, each
    disclosure goes to its item's own group and mentions nothing of the other group — its
    id, its items or its mission."""
    alpha, beta = f"g-{names[0]}", f"g-{names[1]}"
    items = {
        alpha: [f"i-{n}" for n in names[2 : 2 + split]],
        beta: [f"i-{n}" for n in names[2 + split :]],
    }
    gate = Gate()
    with (
        tempfile.TemporaryDirectory() as folder,
        world(Path(folder), (alpha, beta), handlers={"text.summarise": gate}) as w,
    ):
        for group, ids in items.items():
            for item in ids:
                w.authority.story(group, item)
                w.authority.offer(group, item)
        w.until(lambda: len(w.sent("work.disclose_schedule")) == 5)
        secrets = {group: {group, f"m-{group}", *ids} for group, ids in items.items()}
        for sent in w.sent("work.disclose_schedule"):
            other = beta if sent.group == alpha else alpha
            text = json.dumps(sent.body)
            assert sent.body["work_item"] in items[sent.group]
            assert not any(name in text for name in secrets[other]), text
        gate.release.set()


def test_a_critical_item_makes_lower_urgency_work_of_its_group_yield_at_a_checkpoint(
    tmp_path: Path,
) -> None:
    """R0-12, R0-13, R11.3-12 (MWP-WRK-015): with every slot busy, a critical item of the
    same group asks the low-urgency running item to yield; it stops at its next checkpoint,
    which is sent as ``work.checkpoint`` (the lease released, the item back in the group
    queue, R10.2-08), the critical item starts, and the preempted one later resumes from its
    checkpoint."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        w.authority.story(ALPHA, "wi-low", urgency="low")
        w.authority.offer(ALPHA, "wi-low")
        w.until(lambda: w.state(ALPHA, "wi-low") == S.ACTIVE and gate.started.is_set())
        w.authority.story(ALPHA, "wi-critical", urgency="critical")
        w.authority.offer(ALPHA, "wi-critical")
        w.until(lambda: w.state(ALPHA, "wi-critical") == S.QUEUED)
        assert w.sent("work.checkpoint") == []  # not before the minimum run time
        w.clock.advance(11)
        w.until(lambda: w.state(ALPHA, "wi-critical") == S.ACTIVE)

        (checkpoint,) = w.sent("work.checkpoint")
        assert checkpoint.body["work_item"] == "wi-low"
        low = w.authority.item(ALPHA, "wi-low")
        assert low["state"] == S.QUEUED
        assert low["owner"] == w.authority.principal
        assert low["last_checkpoint"]["ref"] == checkpoint.body["checkpoint"]["ref"]
        stopped_at = gate.resumed_from  # [None]: the first run started from scratch

        gate.release.set()
        w.until(lambda: w.state(ALPHA, "wi-low") == S.SUBMITTED)
        assert stopped_at[0] is None
        assert gate.resumed_from[-1] is not None
        assert gate.resumed_from[-1]["next"] >= 1


def test_urgency_in_another_group_never_preempts(tmp_path: Path) -> None:
    """R11.1-06, R0-07: a coordinator's urgency orders only its own group's work; a critical
    item of another group waits for a free slot instead of taking one."""
    gate = Gate()
    with world(tmp_path, (ALPHA, BETA), handlers={"text.summarise": gate}) as w:
        w.authority.story(ALPHA, "a-low", urgency="low")
        w.authority.offer(ALPHA, "a-low")
        w.until(lambda: w.state(ALPHA, "a-low") == S.ACTIVE)
        w.authority.story(BETA, "b-critical", urgency="critical")
        w.authority.offer(BETA, "b-critical")
        w.until(lambda: w.state(BETA, "b-critical") == S.QUEUED)
        w.clock.advance(60)
        for _ in range(20):
            w.tick()
        assert w.sent("work.checkpoint") == []
        assert w.state(ALPHA, "a-low") == S.ACTIVE
        gate.release.set()
        w.until(lambda: w.state(BETA, "b-critical") == S.SUBMITTED)


def test_a_lease_is_renewed_before_it_expires_and_the_slot_gets_the_fresh_token(
    tmp_path: Path,
) -> None:
    """R11.3-03, R11.3-07, R11.3-08: once less than half the lease is left the worker renews
    it, and the renewal's token replaces the slot's token."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: bool(gate.tokens))
        assert w.sent("lease.renew") == []
        expires = w.authority.item(ALPHA, "wi-1")["lease"]["expires_at"]
        w.clock.advance(160)  # the default lease is 300 s
        w.until(lambda: bool(w.sent("lease.renew")))
        assert w.authority.item(ALPHA, "wi-1")["lease"]["expires_at"] > expires
        w.until(lambda: gate.tokens[-1] == {TOKEN_NAME: "token-2"})
        gate.release.set()
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)


def test_a_handler_that_raises_is_reported_as_the_owners_failure(tmp_path: Path) -> None:
    """R10.2-13, R11.4-08: the owner's ``work.fail`` carries evidence naming only the kind
    of error; the contract's retry policy schedules another attempt."""

    def broken(ctx: SlotContext, progress: Progress) -> TaskResult:
        raise RuntimeError("secret internals")

    with world(tmp_path, handlers={"text.summarise": broken}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: bool(w.sent("work.fail")))
        (failed,) = w.sent("work.fail")
        assert failed.body["evidence"][0]["result"]["verdict"] == "fail"
        assert "RuntimeError" in failed.body["evidence"][0]["result"]["summary"]
        assert "secret" not in json.dumps(failed.body)
        item = w.authority.item(ALPHA, "wi-1")
        assert item["state"] == S.QUEUED
        assert item["retry_at"] is not None


def test_shutdown_checkpoints_active_work_and_releases_its_lease(tmp_path: Path) -> None:
    """Issue 14 §7, R0-13, R10.2-08: a shutdown asks every active slot to yield; each stops
    at its next checkpoint, sent as ``work.checkpoint``, so its lease is released and the item
    waits queued for this worker, resumable from the checkpoint."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: gate.started.is_set() and w.state(ALPHA, "wi-1") == S.ACTIVE)
        w.worker.stop()
        assert w.worker.shutdown()
        item = w.authority.item(ALPHA, "wi-1")
        assert item["state"] == S.QUEUED
        assert item["lease"] is None or item["lease"]["status"] == "released"
        (checkpoint,) = w.sent("work.checkpoint")
        assert item["last_checkpoint"]["ref"] == checkpoint.body["checkpoint"]["ref"]
        assert w.worker.errors == []


def test_result_for_is_the_same_whatever_the_interruptions() -> None:
    """The fake work is deterministic: its output depends on the contract only."""
    context = {
        "contract": {
            "goal": "g",
            "outputs": [{"name": "summary", "media_type": "text/markdown"}],
            "acceptance_criteria": [{"id": "c1"}],
        },
        "work_item": "wi-1",
    }
    assert result_for(context, 3) == result_for(context, 3)


def test_work_the_log_takes_away_stops_at_its_next_checkpoint_and_sends_nothing(
    tmp_path: Path,
) -> None:
    """R11.5-01, R11.3-09: when the coordinator cancels a running item, the worker learns it
    from the log, asks the slot to stop at its next checkpoint and sends nothing more for
    it — no checkpoint, no progress, no submission under a dead lease."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: gate.started.is_set() and w.state(ALPHA, "wi-1") == S.ACTIVE)
        sent_before = len(w.authority.sent)
        w.authority.do(ALPHA, "wi-1", "work.cancel")
        w.until(lambda: w.worker.pool.free == 1)
        for _ in range(10):
            w.tick()
        assert w.state(ALPHA, "wi-1") == S.CANCELLED
        assert w.authority.sent[sent_before:] == []
        assert w.worker.errors == []


def test_a_revoked_membership_drops_that_groups_feed_and_work_only(tmp_path: Path) -> None:
    """wire.md §7, protocol.md §2 (R11.5-01, R11.3-07), R0-01: the worker serves two groups;
    its membership in one is revoked, and from then on that group answers NOT_A_MEMBER (so
    the revocation event itself never reaches the worker). Its running item stops at its next
    checkpoint and its queued item leaves the scheduler, both fenced locally; its feed is not
    read again and no command is sent to it; the other group's work still flows."""
    gate = Gate()
    digest = [{"id": "text.digest", "version": "1"}]
    with world(
        tmp_path,
        (ALPHA, BETA),
        handlers={"text.summarise": gate, "text.digest": summarise},
        slots=2,
        group_configs={ALPHA: GroupConfig(quota=1), BETA: GroupConfig()},
    ) as w:
        for item in ("a-1", "a-2"):
            w.authority.story(ALPHA, item)
            w.authority.offer(ALPHA, item)
        w.until(
            lambda: (
                gate.started.is_set()
                and sorted(w.state(ALPHA, i) for i in ("a-1", "a-2")) == [S.ACTIVE, S.QUEUED]
            )
        )
        w.authority.story(BETA, "b-1", capabilities=digest)
        w.authority.offer(BETA, "b-1")
        w.until(lambda: w.state(BETA, "b-1") == S.SUBMITTED)

        sent_before, reads_before = len(w.authority.sent), w.authority.reads[ALPHA]
        w.authority.revoke(ALPHA)
        w.until(lambda: ALPHA in w.worker.revoked and w.worker.pool.free == 2)
        w.authority.story(BETA, "b-2", capabilities=digest)
        w.authority.offer(BETA, "b-2")
        w.until(lambda: w.state(BETA, "b-2") == S.SUBMITTED)
        for _ in range(20):
            w.tick()

        after = w.authority.sent[sent_before:]
        assert [s.type for s in after if s.group == ALPHA] == []
        assert {"work.accept_offer", "work.start", "work.submit"} <= {s.type for s in after}
        assert w.authority.reads[ALPHA] == reads_before + 1  # the one read it refused
        assert ALPHA not in w.worker.feeds
        assert w.worker.revoked == {ALPHA}
        assert not any(group == ALPHA for group, _item in w.worker.queue.items)
        assert ALPHA not in {run.group for run in w.worker._snapshot()}
        assert (w.worker.scheduler.queued(ALPHA), w.worker.scheduler.running(ALPHA)) == (0, 0)
        assert w.worker.errors == []
