"""Urgent offers under real contention on PostgreSQL (R10.3-04..06, R10.2-03, R10.2-04).

1,000 trials (a sample of 240 in ``make test``: tests/proofs.py): in each, 2, 4, 8 or 16
workers hold their own offer of the same urgent ``work.offer`` and send
``work.accept_offer`` at the same moment (a barrier releases them together, each from its own
thread and database connection). The head-row lock serialises
them; the first valid acceptance must win a new ownership epoch and withdraw every other
open offer in the same command, and every loser must then be refused ``OFFER_WITHDRAWN`` —
even one that was sent before the withdrawal was appended.

To keep 1,000 trials affordable on a small machine the cast is shared: 16 worker agents and
one coordinator, four groups, 500 WorkItems raced twice (the second time after a
``work.fail`` and a new offer, so the winning epoch is 2). The 16 threads live for a whole
round and meet at one barrier per trial; envelopes are signed before the barrier.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection

from apps.ledger.write_path import Outcome, submit_batch, submit_command
from apps.work.models import WorkItem
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests import factories, proofs
from tests.factories import AgentPersona, mission_body
from tests.ledger.checks import assert_log_consistent, event_documents
from tests.ledger.concurrency import run_in_threads
from tests.work.lifecycle import attempt, contract, evidence, offer_body, offer_entry, submit

WORKERS = 16
GROUPS = 4
ITEMS = proofs.size(sample=120, full=500)  # each raced twice: 1,000 trials at full size
COUNTS = (2, 4, 8, 16)
BATCH = 100  # setup commands per submit_batch
BARRIER_TIMEOUT = 120.0

pytestmark = pytest.mark.proof

Result = Outcome | ProtocolError


@dataclass(frozen=True)
class Trial:
    """One race: ``racers`` (worker indexes) accept their own offers of ``item``."""

    index: int
    group: str
    item: str
    racers: tuple[int, ...]
    round: int

    def offer(self, worker: int) -> str:
        return f"o{self.round}-{self.item}-w{worker:02d}"


@dataclass
class Cast:
    groups: list[str]
    coordinator: AgentPersona
    workers: list[AgentPersona]


def _cast() -> Cast:
    org = factories.organization("org-race")
    alice = factories.human("alice", staff=True)
    groups = [factories.group(f"g-race-{n}", org) for n in range(GROUPS)]
    coordinator = factories.agent("coord", org)
    workers = [factories.agent(f"rw{n:02d}", org) for n in range(WORKERS)]
    for group in groups:
        factories.grant(alice, group, coordinator, "coordinator")
        for worker in workers:
            factories.grant(alice, group, worker, "worker")
    for persona in (coordinator, *workers):
        persona.open_session()
    for group in groups:
        submit(coordinator, group, "mission.create", mission_body("m-race"))
    return Cast(groups, coordinator, workers)


def _trials(cast: Cast, round_: int) -> list[Trial]:
    """Round ``round_``'s trials: consecutive trials sit in different groups, worker counts
    cycle through ``COUNTS`` and the racing workers rotate through the pool."""
    trials = []
    for n in range(ITEMS):
        index = round_ * ITEMS + n
        count = COUNTS[(index // GROUPS) % len(COUNTS)]
        first = (index * 5) % WORKERS
        racers = tuple(sorted((first + k) % WORKERS for k in range(count)))
        trials.append(Trial(index, cast.groups[n % GROUPS], f"wi-{n:04d}", racers, round_))
    return trials


def _batch(cast: Cast, group: str, commands: list[tuple[str, dict[str, Any]]]) -> None:
    """The coordinator's setup commands for one group, a batch at a time; all must pass."""
    persona = cast.coordinator
    for start in range(0, len(commands), BATCH):
        documents = [
            persona.command(group, type_, body) for type_, body in commands[start : start + BATCH]
        ]
        answers = submit_batch(group_id=group, documents=documents, caller=persona.caller)
        refused = [answer for answer in answers if isinstance(answer, ProtocolError)]
        assert not refused, refused[:3]


def _setup_round(cast: Cast, trials: list[Trial]) -> None:
    """Round 0 authorises each item; round 1 fails the previous winner's item first. Then the
    item is offered, urgently, to exactly the trial's racers."""
    by_group: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for trial in trials:
        commands = by_group[trial.group]
        if trial.round == 0:
            body = {"work_item": trial.item, "mission": "m-race", "contract": contract()}
            commands.append(("work.authorize", {**body, "depends_on": []}))
        else:
            failure = evidence("c1", cast.coordinator.principal, verdict="fail")
            commands.append(("work.fail", {"work_item": trial.item, "evidence": [failure]}))
        offers = [offer_entry(trial.offer(w), cast.workers[w]) for w in trial.racers]
        commands.append(("work.offer", offer_body(trial.item, offers, mode="urgent")))
    for group, commands in by_group.items():
        _batch(cast, group, commands)


def run_trials(
    threads: int,
    trials: list[tuple[int, ...]],
    fire: Callable[[int, int], Callable[[], Result]],
) -> dict[tuple[int, int], Result]:
    """Run every trial with the threads it names, all of them released by one barrier.

    ``trials[t]`` lists the threads taking part in trial ``t``; ``fire(t, thread)`` prepares
    (signs) that thread's command and returns the call that sends it. Each thread walks the
    trials in order, so trial ``t`` starts once its last racer is done with earlier trials.
    A thread that fails breaks every barrier, so the others stop instead of waiting forever.
    """
    barriers = [threading.Barrier(len(racers)) for racers in trials]
    results: dict[tuple[int, int], Result] = {}

    def work(thread: int) -> None:
        try:
            for t, racers in enumerate(trials):
                if thread not in racers:
                    continue
                send = fire(t, thread)
                barriers[t].wait(BARRIER_TIMEOUT)
                try:
                    results[(t, thread)] = send()
                except ProtocolError as refusal:
                    results[(t, thread)] = refusal
        except BaseException:
            for barrier in barriers:
                barrier.abort()
            raise

    # With the psycopg pool (MWP_DB_POOL_MAX, 16 by default) 16 racing threads need every
    # connection: give back the one this thread holds, or the last racer would wait for it.
    connection.close()
    run_in_threads(threads, work)
    return results


def _race(
    cast: Cast, trials: list[Trial]
) -> tuple[dict[tuple[int, int], Result], dict[tuple[int, int], str]]:
    """Every trial's acceptances; their answers and command ids by (trial, worker)."""
    command_ids: dict[tuple[int, int], str] = {}

    def fire(t: int, worker: int) -> Callable[[], Result]:
        trial, persona = trials[t], cast.workers[worker]
        body = {"work_item": trial.item, "offer": trial.offer(worker), "contract_revision": 1}
        document = persona.command(trial.group, "work.accept_offer", body)
        command_ids[(t, worker)] = document["id"]
        return lambda: submit_command(
            group_id=trial.group, document=document, caller=persona.caller
        )

    results = run_trials(WORKERS, [trial.racers for trial in trials], fire)
    return results, command_ids


def _check_round(
    cast: Cast,
    trials: list[Trial],
    results: dict[tuple[int, int], Result],
    command_ids: dict[tuple[int, int], str],
) -> None:
    """Exactly one winner per trial, with epoch = round + 1; every loser OFFER_WITHDRAWN with
    nothing appended; the winner's command withdrew exactly the losing offers, in consecutive
    events; the projection names the winner."""
    logs = {group: event_documents(group) for group in cast.groups}
    withdrawn: Counter[tuple[str, str, str]] = Counter()
    for group, documents in logs.items():
        for document in documents:
            if document["type"] == "work.offer_withdrawn":
                payload = document["payload"]
                withdrawn[(group, payload["work_item"], payload["offer"])] += 1
    by_command = {
        (group, d["command_id"]): [e for e in documents if e["command_id"] == d["command_id"]]
        for group, documents in logs.items()
        for d in documents
        if d["type"] == "work.offer_accepted"
    }
    rows = {
        (row.group_id, row.work_item_id): row.data
        for row in WorkItem.objects.filter(group_id__in=cast.groups)
    }
    logged_commands = {d["command_id"] for documents in logs.values() for d in documents}
    for t, trial in enumerate(trials):
        answers = {worker: results[(t, worker)] for worker in trial.racers}
        winners = [w for w, answer in answers.items() if isinstance(answer, Outcome)]
        assert len(winners) == 1, (trial, answers)
        (winner,) = winners
        outcome = answers[winner]
        assert isinstance(outcome, Outcome)
        assert (outcome.status, outcome.replayed) == (201, False)
        assert outcome.body["result"]["ownership_epoch"] == trial.round + 1
        losers = [w for w in trial.racers if w != winner]
        for loser in losers:
            refusal = answers[loser]
            assert isinstance(refusal, ProtocolError), (trial, loser, refusal)
            assert refusal.code is ErrorCode.OFFER_WITHDRAWN, (trial, loser, refusal)
            assert refusal.details["offer"] == trial.offer(loser)
            assert command_ids[(t, loser)] not in logged_commands
        events = by_command[(trial.group, outcome.body["command_id"])]
        assert [e["type"] for e in events] == ["work.offer_accepted"] + [
            "work.offer_withdrawn"
        ] * len(losers)
        first = events[0]["sequence"]
        assert [e["sequence"] for e in events] == list(range(first, first + len(events)))
        assert [(e["sequence"], e["type"]) for e in events] == [
            (e["sequence"], e["type"]) for e in outcome.body["events"]
        ]
        accepted = events[0]["payload"]
        assert accepted["worker"] == cast.workers[winner].principal
        assert accepted["ownership_epoch"] == trial.round + 1
        assert {e["payload"]["offer"] for e in events[1:]} == {trial.offer(w) for w in losers}
        for loser in losers:
            assert withdrawn[(trial.group, trial.item, trial.offer(loser))] == 1
        row = rows[(trial.group, trial.item)]
        assert (row["state"], row["owner"], row["ownership_epoch"]) == (
            "queued",
            cast.workers[winner].principal,
            trial.round + 1,
        )
        statuses = {o["offer"]: o["status"] for o in row["offers"]}
        assert statuses[trial.offer(winner)] == "accepted"
        assert all(statuses[trial.offer(w)] == "withdrawn" for w in losers)


@pytest.mark.django_db(transaction=True)
def test_exactly_one_of_up_to_16_concurrent_acceptances_wins_an_urgent_offer() -> None:
    """R10.3-05, R10.3-06, R10.2-04, wire§6: 2 x ITEMS trials of 2–16 workers accepting the same
    urgent offer at once: one winner with ownership epoch previous + 1, every other offer
    withdrawn in the winner's command, every loser refused OFFER_WITHDRAWN, the projection
    owned by the winner, the logs gapless and chained and equal to a rebuild."""
    started = time.perf_counter()
    cast = _cast()
    timings: dict[str, float] = {}
    attempts = 0
    for round_ in (0, 1):
        trials = _trials(cast, round_)
        mark = time.perf_counter()
        _setup_round(cast, trials)
        timings[f"setup {round_}"] = time.perf_counter() - mark
        mark = time.perf_counter()
        results, command_ids = _race(cast, trials)
        timings[f"race {round_}"] = time.perf_counter() - mark
        attempts += len(results)
        mark = time.perf_counter()
        _check_round(cast, trials, results, command_ids)
        timings[f"check {round_}"] = time.perf_counter() - mark
    mark = time.perf_counter()
    for group in cast.groups:
        assert_log_consistent(group)
    timings["log checks"] = time.perf_counter() - mark
    total = time.perf_counter() - started
    print(
        f"\n{2 * ITEMS} trials, {attempts} acceptances in {total:.1f} s: "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items())
    )


SUPERSEDE_TRIALS = 60


@pytest.mark.django_db(transaction=True)
def test_an_acceptance_racing_a_new_offer_either_wins_or_is_withdrawn_never_both() -> None:
    """R10.2-03, R10.3-06: an acceptance and a re-offer (supersede) of the same item sent at
    once: either the acceptance wins and the re-offer is ILLEGAL_TRANSITION (an active owner
    holds the item), or the re-offer supersedes the offer and the acceptance is
    OFFER_WITHDRAWN. Never both accepted, never both refused."""
    org = factories.organization("org-race")
    alice = factories.human("alice", staff=True)
    group = factories.group("g-supersede", org)
    coordinator, worker, other = (factories.agent(name, org) for name in ("coord", "wa", "wb"))
    factories.grant(alice, group, coordinator, "coordinator")
    factories.grant(alice, group, worker, "worker")
    factories.grant(alice, group, other, "worker")
    for persona in (coordinator, worker, other):
        persona.open_session()
    submit(coordinator, group, "mission.create", mission_body("m-race"))
    items = [f"wi-{n:03d}" for n in range(SUPERSEDE_TRIALS)]
    for item in items:
        submit(
            coordinator,
            group,
            "work.authorize",
            {"work_item": item, "mission": "m-race", "contract": contract(), "depends_on": []},
        )
        submit(coordinator, group, "work.offer", offer_body(item, [offer_entry("o1", worker)]))

    def fire(t: int, thread: int) -> Callable[[], Result]:
        item = items[t]
        if thread == 0:
            body = {"work_item": item, "offer": "o1", "contract_revision": 1}
            return lambda: attempt(worker, group, "work.accept_offer", body)
        reoffer = offer_body(item, [offer_entry("o2", other)], mode="sequential")
        return lambda: attempt(coordinator, group, "work.offer", reoffer)

    results = run_trials(2, [(0, 1)] * SUPERSEDE_TRIALS, fire)
    orders: Counter[str] = Counter()
    for t, item in enumerate(items):
        accept, reoffer = results[(t, 0)], results[(t, 1)]
        row = WorkItem.objects.get(group_id=group, work_item_id=item).data
        if isinstance(accept, Outcome):
            assert isinstance(reoffer, ProtocolError), (item, reoffer)
            assert reoffer.code is ErrorCode.ILLEGAL_TRANSITION
            assert reoffer.requirement == "R10.2-03"
            assert (row["state"], row["owner"], row["ownership_epoch"]) == (
                "queued",
                worker.principal,
                1,
            )
            orders["accept first"] += 1
        else:
            assert isinstance(accept, ProtocolError), (item, accept)
            assert accept.code is ErrorCode.OFFER_WITHDRAWN, (item, accept)
            assert isinstance(reoffer, Outcome), (item, reoffer)
            assert (row["state"], row["owner"], row["ownership_epoch"]) == ("offered", None, 0)
            statuses = {o["offer"]: o["status"] for o in row["offers"]}
            assert statuses == {"o1": "superseded", "o2": "open"}
            orders["re-offer first"] += 1
    assert_log_consistent(group)
    print(f"\nsupersede race: {dict(orders)}")
