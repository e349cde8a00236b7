"""Property: whatever the order of WorkItem commands, no illegal state is ever reached and the
live projections equal a rebuild of the log (R10.2-22, R10.2, R10.3, R10.4, R16).

A Hypothesis state machine drives the whole lifecycle through the real write path on
PostgreSQL: missions, proposals, authorisations with dependencies (unknown ids and cycles
included), sequential and urgent offers (expired ones, corrected contracts), acceptances by
the right and the wrong worker, rejections, execution approvals, start, lease renewals,
progress, usage, checkpoints, blocks and unblocks, submissions (incomplete, or late from a
former owner), reviews, failures, cancellations, child missions in the same group and in
another one, their approval, failure and cancellation, and essential questions.

A small model predicts each answer from the state folded out of the log (``LogTracker``):
the error code where the rules make it cheap, and always that a refused command appends
nothing and an accepted one leaves its WorkItem in one of its table row's targets. Every
appended event's before/after state is checked against ``states.TRANSITIONS``; after every
step each live WorkItem row is in a known state and agrees with the log; after every
example both groups' logs are gapless, chained and equal to their rebuild.

Each example uses two fresh groups; the personas are shared.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from apps.ledger.write_path import Outcome
from apps.work import reviews, tasks
from apps.work.models import WorkItem as WorkItemRow
from missionweave.protocol import states as S
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.contracts import URGENCIES
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.missions.model import Mission
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.dependencies import GRAPH_KEY
from missionweave.protocol.work.items import WorkItem
from tests import factories, proofs
from tests.factories import AgentPersona, HumanPersona, mission_body, now_text
from tests.ledger.checks import assert_log_consistent
from tests.work.lifecycle import (
    FORBIDDEN,
    ILLEGAL,
    LATE,
    NOT_FOUND,
    OK,
    STALE_LEASE,
    STALE_OWNERSHIP,
    Expected,
    LogTracker,
    Persona,
    attempt,
    child_running,
    contract,
    evidence,
    find_offer,
    head,
    lease_id_of,
    live_offer,
    names_current_lease,
    offer_body,
    offer_expired,
    owner_holds,
    owner_precedence,
    predict_accept,
    retry_waits,
)

pytestmark = pytest.mark.proof

ITEMS = ("wi-a", "wi-b", "wi-c", "wi-d", "wi-e")
CHILD_MISSIONS = ("cm1", "cm2", "cm3")
WORKERS = ("pw1", "pw2", "pw3")
GHOST = "ghost"


#: what a worker submits as the contract's one declared output
SUMMARY = b"summary"

picks = st.integers(min_value=-1, max_value=60)  # -1: an id that does not exist
#: how often each command was accepted or refused with each code, printed after the run
OUTCOMES: Counter[str] = Counter()


@dataclass
class Cast:
    """The personas every example shares (each example grants them roles in new groups)."""

    org: str
    admin: HumanPersona
    coordinator: AgentPersona
    workers: dict[str, AgentPersona]
    olga: HumanPersona  # mission_owner
    omar: HumanPersona  # mission_owner
    rita: HumanPersona  # reviewer


def _cast() -> Cast:
    org = factories.organization("org-life")
    cast = Cast(
        org=org,
        admin=factories.human("alice", staff=True),
        coordinator=factories.agent("pc", org),
        workers={name: factories.agent(name, org) for name in WORKERS},
        olga=factories.human("olga"),
        omar=factories.human("omar"),
        rita=factories.human("rita"),
    )
    for persona in (cast.coordinator, *cast.workers.values()):
        persona.open_session()
    return cast


class Lifecycle(RuleBasedStateMachine):
    cast: ClassVar[Cast]

    def __init__(self) -> None:
        super().__init__()
        cast = self.cast
        suffix = uuid.uuid4().hex[:10]
        self.g = factories.group(f"gl-{suffix}", cast.org)
        self.g2 = factories.group(f"gx-{suffix}", cast.org)
        factories.grant(cast.admin, self.g, cast.coordinator, "coordinator")
        for worker in cast.workers.values():
            factories.grant(cast.admin, self.g, worker, "worker")
        factories.grant(cast.admin, self.g, cast.olga, "mission_owner")
        factories.grant(cast.admin, self.g, cast.omar, "mission_owner")
        factories.grant(cast.admin, self.g, cast.rita, "reviewer")
        factories.grant(cast.admin, self.g2, cast.coordinator, "coordinator")
        factories.grant(cast.admin, self.g2, cast.olga, "mission_owner")
        self.trackers = {self.g: LogTracker(self.g), self.g2: LogTracker(self.g2)}
        for tracker in self.trackers.values():
            tracker.catch_up()
        self.edges: dict[str, tuple[str, ...]] = {}
        self.counter = 0
        self.send(cast.olga, "mission.create", mission_body("m0"), OK)

    # --- reading the folded log -------------------------------------------------------------

    def item(self, work_item: str, group: str | None = None) -> WorkItem | None:
        return self.trackers[group or self.g].item(work_item)

    def items(self) -> list[str]:
        return sorted(ident for kind, ident in self.trackers[self.g].state if kind == "work_item")

    def state_of(self, work_item: str) -> str:
        return self.trackers[self.g].item_state(work_item)

    def pick_item(self, pick: int, command: str | None = None) -> str:
        """An item by index (-1: one that does not exist). For an even ``pick``, prefer the
        items ``command`` may act on, so the deep states are exercised, not only refusals."""
        items = self.items()
        if command is not None and pick % 2 == 0:
            allowed = S.allowed_from(command)
            items = [w for w in items if self.state_of(w) in allowed] or items
        return "wi-ghost" if pick < 0 or not items else items[pick % len(items)]

    def mission(self, mission: str, group: str | None = None) -> Mission | None:
        return self.trackers[group or self.g].state.get(("mission", mission))

    def mission_state(self, mission: str, group: str | None = None) -> str | None:
        found = self.mission(mission, group)
        return found.state if found is not None else None

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def worker(self, name: str) -> AgentPersona:
        return self.cast.workers[name]

    def tally(self, outcome: str) -> None:
        event(outcome)
        OUTCOMES[outcome] += 1

    # --- one command, judged --------------------------------------------------------------

    def send(
        self,
        persona: Persona,
        type_: str,
        body: dict[str, Any],
        expected: Expected,
        *,
        group: str | None = None,
    ) -> Outcome | ProtocolError:
        """Send a command; check the answer against ``expected`` and what it appended."""
        group = group or self.g
        work_item = body.get("work_item") if isinstance(body.get("work_item"), str) else None
        before = self.trackers[group].item_state(work_item)
        heads = {g: head(g) for g in self.trackers}
        answer = attempt(persona, group, type_, body)
        appended = {g: tracker.catch_up() for g, tracker in self.trackers.items()}
        label = f"{type_}: {body}"
        if isinstance(answer, ProtocolError):
            self.tally(f"{type_} refused {answer.code.value}")
            assert not any(appended.values()), f"{label} was refused but appended events"
            assert {g: head(g) for g in heads} == heads, f"{label} moved a head"
            assert answer.code is expected, f"{label}: expected {expected}, got {answer!r}"
            return answer
        self.tally(f"{type_} accepted" + (" (late)" if answer.status == 202 else ""))
        assert expected in (OK, LATE), f"{label}: expected {expected}, got {answer.body}"
        assert answer.status == (202 if expected == LATE else 201), answer.body
        # the command's own events, as its response listed them; anything else appended
        # meanwhile came from the authority's cross-group follow-ups (R10.4-05)
        command_id = answer.body["command_id"]
        own = [(e["sequence"], e["type"]) for e in appended[group] if e["command_id"] == command_id]
        assert own == [(e["sequence"], e["type"]) for e in answer.body["events"]]
        assert all(
            e["actor"] == AUTHORITY
            for events in appended.values()
            for e in events
            if e["command_id"] != command_id
        ), appended
        # where the command itself left the item (a follow-up may move it on afterwards)
        states_after = [
            moved[1]
            for e in answer.body["events"]
            if (moved := self.trackers[group].moved.get(e["sequence"])) and moved[0] == work_item
        ]
        after = states_after[-1] if states_after else before
        row = S.transition_for(type_)
        if answer.status == 202 or row is None:
            assert after == before, f"{label} moved {work_item}: {before} -> {after}"
        elif work_item is not None:
            assert after in row.targets, f"{label}: {after} is not a target of {row.rid}"
        return answer

    # --- judged commands: each predicts its answer, sends, and checks what it changed -------

    def do_create_mission(self, mission: str, persona: Persona) -> None:
        expected = ILLEGAL if self.mission(mission) is not None else OK
        self.send(persona, "mission.create", mission_body(mission), expected)

    def do_propose(self, proposal: str, persona: Persona, with_contract: bool) -> None:
        body: dict[str, Any] = {"proposal": proposal, "title": f"please do {proposal}"}
        if with_contract:
            body["contract"] = contract()
        known = self.trackers[self.g].state.get(("proposal", proposal)) is not None
        self.send(persona, "work.propose", body, ILLEGAL if known else OK)

    def do_authorize(
        self,
        work_item: str,
        mission: str,
        depends_on: list[str],
        proposal: str | None,
        terms: dict[str, Any],
    ) -> None:
        """R10.2-02, R10.4-01, R10.4-04 (a cycle is refused and named)."""
        body: dict[str, Any] = {
            "work_item": work_item,
            "mission": mission,
            "contract": contract(**terms),
            "depends_on": depends_on,
        }
        if proposal is not None:
            body["proposal"] = proposal
        target = self.mission(mission)
        known = self.trackers[self.g].state.get(("proposal", proposal)) if proposal else None
        expected: Expected = OK
        if self.item(work_item) is not None:
            expected = ILLEGAL
        elif target is None:
            expected = NOT_FOUND
        elif target.state != "active":
            expected = ILLEGAL
        elif proposal is not None and known is None:
            expected = NOT_FOUND
        elif known is not None and known.state != "open":
            expected = ILLEGAL
        elif self._closes_cycle(work_item, tuple(depends_on)):
            expected = ErrorCode.DEPENDENCY_CYCLE
        answer = self.send(self.cast.coordinator, "work.authorize", body, expected)
        declared = {**self.edges, work_item: tuple(depends_on)}
        if isinstance(answer, Outcome):
            self.edges = declared
        elif answer.code is ErrorCode.DEPENDENCY_CYCLE:
            path = answer.details["cycle"]
            assert path[0] == path[-1] == work_item, path
            assert all(b in declared.get(a, ()) for a, b in itertools.pairwise(path)), path

    def _closes_cycle(self, work_item: str, depends_on: tuple[str, ...]) -> bool:
        edges = {**self.edges, work_item: depends_on}
        graph = self.trackers[self.g].state.get(GRAPH_KEY)
        assert graph is None or dict(graph.edges) == self.edges
        seen: set[str] = set()
        stack = list(depends_on)
        while stack:
            node = stack.pop()
            if node == work_item:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(edges.get(node, ()))
        return False

    def do_offer(
        self,
        work_item: str,
        workers: list[str],
        mode: str,
        expired: list[bool],
        revise: str | None = None,
    ) -> None:
        """R10.2-03, R10.3-03, R10.3-04; a corrected contract is a new revision (R10.1-05)."""
        item = self.item(work_item)
        offers = [
            {
                "offer": self.fresh("o"),
                "worker": self.worker(name).principal,
                "expires_at": now_text(-60 if gone else 3600),
            }
            for name, gone in zip(workers, [*expired, *[False] * len(workers)], strict=False)
        ]
        extra: dict[str, Any] = {}
        if revise is not None and item is not None:
            revised = copy.deepcopy(item.contract)
            if revise == "corrected":
                revised["goal"] = f"{revised['goal']} (corrected {self.counter})"
            extra["contract"] = revised
        expected: Expected = OK
        if item is None:
            expected = NOT_FOUND
        elif item.state not in S.allowed_from("work.offer") or owner_holds(item):
            expected = ILLEGAL
        elif item.refusal is not None and revise != "corrected":
            expected = ILLEGAL  # R10.2-06: a refused revision waits for a corrected contract
        elif item.state == S.BLOCKED and child_running(item):
            expected = ILLEGAL  # R10.2-15: blocked while its child runs, even with no owner
        body = offer_body(work_item, offers, mode=mode, **extra)
        answer = self.send(self.cast.coordinator, "work.offer", body, expected)
        if isinstance(answer, Outcome) and item is not None:
            after = self.item(work_item)
            assert after is not None
            assert after.owner is None
            bump = 1 if revise == "corrected" else 0
            assert after.revision == item.revision + bump
            if bump:
                assert after.approvals == ()

    def do_accept(self, work_item: str, offer_id: str, worker: str, revision_offset: int) -> None:
        """R10.2-04, R10.3-05, R10.3-06: the epoch goes up by one; other offers withdrawn."""
        item = self.item(work_item)
        actor = self.worker(worker)
        revision = (item.revision if item else 1) + revision_offset
        body = {"work_item": work_item, "offer": offer_id, "contract_revision": revision}
        expected = (
            NOT_FOUND if item is None else predict_accept(item, offer_id, actor.principal, revision)
        )
        answer = self.send(actor, "work.accept_offer", body, expected)
        if isinstance(answer, Outcome):
            assert item is not None
            after = self.item(work_item)
            assert after is not None
            assert after.owner == actor.principal
            assert after.ownership_epoch == item.ownership_epoch + 1
            assert answer.body["result"]["ownership_epoch"] == after.ownership_epoch
            assert answer.body["result"]["start_deadline"] == after.start_deadline
            assert all(o.status != "open" for o in after.offers), "losing offers withdrawn"

    def do_reject(self, work_item: str, offer_id: str, worker: str) -> None:
        """R10.3-09, R10.3-10: a structured rejection of one's own open offer."""
        item = self.item(work_item)
        actor = self.worker(worker)
        body = {"work_item": work_item, "offer": offer_id, "reason": "capacity", "detail": "busy"}
        expected: Expected = NOT_FOUND
        offer = find_offer(item, offer_id) if item is not None else None
        if item is not None and offer is not None:
            if offer.worker != actor.principal:
                expected = FORBIDDEN
            elif offer.status in ("withdrawn", "superseded"):
                expected = ErrorCode.OFFER_WITHDRAWN
            elif item.state != S.OFFERED or offer.status != "open":
                expected = ILLEGAL
            else:
                expected = OK
        self.send(actor, "work.reject_offer", body, expected)

    def do_grant(self, work_item: str, persona: HumanPersona, revision_offset: int) -> None:
        """R10.2-06, R10.1-01(i): distinct human mission_owners, never the requester."""
        item = self.item(work_item)
        revision = (item.revision if item else 1) + revision_offset
        body = {"work_item": work_item, "contract_revision": revision, "comment": "go"}
        expected: Expected = OK
        if item is None:
            expected = NOT_FOUND
        elif item.state != S.QUEUED:
            expected = ILLEGAL
        elif revision != item.revision:
            expected = ErrorCode.STALE_REVISION
        else:
            expected = self._decision_refusal(item, persona)
        self.send(persona, "approval.grant_execution", body, expected)

    def _decision_refusal(self, item: WorkItem, persona: HumanPersona) -> Expected:
        """R10.2-06: never the requester; one decision per person per revision; nothing
        after a refusal."""
        if persona.principal in (item.authorized_by, item.proposed_by):
            return ErrorCode.SELF_APPROVAL
        refused_by = (item.refusal or {}).get("principal")
        if persona.principal in item.approvals or persona.principal == refused_by:
            return ErrorCode.DUPLICATE_APPROVAL
        return ILLEGAL if item.refusal is not None else OK

    def do_refuse(
        self, work_item: str, persona: HumanPersona, revision_offset: int, comment: str
    ) -> None:
        """R10.2-06: a human mission_owner refuses the revision, saying why; it never starts."""
        item = self.item(work_item)
        revision = (item.revision if item else 1) + revision_offset
        body = {"work_item": work_item, "contract_revision": revision, "comment": comment}
        expected: Expected = OK
        if not comment:
            expected = ErrorCode.MALFORMED
        elif item is None:
            expected = NOT_FOUND
        elif item.state != S.QUEUED:
            expected = ILLEGAL
        elif revision != item.revision:
            expected = ErrorCode.STALE_REVISION
        else:
            expected = self._decision_refusal(item, persona)
        self.send(persona, "approval.refuse_execution", body, expected)

    def do_start(self, work_item: str, actor: AgentPersona, epoch_offset: int) -> None:
        """R10.2-07, R11.3-01, R10.1-01(i), R10.4-03; a retry waits out its backoff (R11.4-08)."""
        item = self.item(work_item)
        epoch = max(1, (item.ownership_epoch if item else 1) + epoch_offset)
        body = {"work_item": work_item, "ownership_epoch": epoch}
        expected: Expected = OK
        if item is None:
            expected = NOT_FOUND
        elif item.owner != actor.principal:
            expected = STALE_OWNERSHIP if actor.principal in item.former_owners else FORBIDDEN
        elif epoch != item.ownership_epoch:
            expected = STALE_OWNERSHIP
        elif item.state != S.QUEUED or retry_waits(item):
            expected = ILLEGAL
        elif item.refusal is not None or len(item.approvals) < approvals_required(item):
            expected = ErrorCode.APPROVAL_REQUIRED
        elif self._unmet(item):
            expected = ErrorCode.DEPENDENCY_UNMET
        answer = self.send(actor, "work.start", body, expected)
        if isinstance(answer, Outcome):
            assert item is not None
            after = self.item(work_item)
            assert after is not None
            assert after.lease is not None
            assert after.lease.lease_id == answer.body["result"]["lease"]["lease_id"]
            assert after.lease.ownership_epoch == item.ownership_epoch

    def _unmet(self, item: WorkItem) -> bool:
        """R10.4-03: a dependency that does not exist or has not ended as the policy asks."""
        policy = item.contract.get("dependency_policy", "all_verified")
        done = {S.VERIFIED} if policy == "all_verified" else {S.VERIFIED, S.FAILED, S.CANCELLED}
        return any(
            (dependency := self.item(dep)) is None or dependency.state not in done
            for dep in item.depends_on
        )

    def do_execute(self, kind: str, work_item: str, actor: AgentPersona, lease_id: str) -> None:
        """R11.3-04, R11.4-01, R10.2-08, R10.2-09: the owner's commands under its lease."""
        item = self.item(work_item)
        body: dict[str, Any] = {"work_item": work_item, "lease_id": lease_id}
        checkpoint = {"ref": "ckpt/1", "state_digest": sha256_digest(b"state"), "artifacts": []}
        if kind == "work.progress":
            body |= {
                "phase": "reading",
                "milestones_completed": ["m1"],
                "next_checkpoint": None,
                "blockers": [],
                "estimate": {"finish_at": now_text(600), "confidence": 0.5},
                "evidence_refs": [],
            }
        elif kind == "work.usage":
            body["usage"] = {"tokens": 10, "money": 0.01}
        elif kind == "work.checkpoint":
            body["checkpoint"] = checkpoint
        elif kind == "work.block":
            body |= {"required_resolution": "need the archive", "checkpoint": checkpoint}
        expected = (
            NOT_FOUND if item is None else owner_precedence(item, actor.principal, lease_id, kind)
        )
        self.send(actor, kind, body, expected)

    def do_submit(self, work_item: str, actor: AgentPersona, lease_id: str, complete: bool) -> None:
        """R10.2-11, R13.2-02; a former owner's result is recorded for audit (R11.5-02)."""
        item = self.item(work_item)
        criteria = item.contract["acceptance_criteria"] if item else [{"id": "c1"}]
        claimed = criteria if complete else criteria[:-1]
        body = {
            "work_item": work_item,
            "lease_id": lease_id,
            # the contract's one output, uploaded by the submitter (wire.md §9, R13.2-02)
            "artifacts": [factories.store_bytes(actor.principal, SUMMARY)],
            "evidence": [
                evidence(c["id"], actor.principal, method=c.get("method", "deterministic"))
                for c in claimed
            ],
        }
        expected: Expected = NOT_FOUND
        if item is not None:
            if item.owner != actor.principal and actor.principal in item.former_owners:
                expected = LATE
            else:
                expected = owner_precedence(item, actor.principal, lease_id, "work.submit")
                if expected == OK and not complete:
                    expected = ErrorCode.EVIDENCE_MISSING
        self.send(actor, "work.submit", body, expected)

    def do_record_evidence(self, work_item: str, persona: Persona) -> None:
        item = self.item(work_item)
        body = {"work_item": work_item, **evidence("c1", persona.principal)}
        expected: Expected = NOT_FOUND
        if item is not None:
            expected = OK if item.state == S.SUBMITTED else ILLEGAL
        self.send(persona, "evidence.record", body, expected)

    def do_accept_result(self, work_item: str, persona: Persona, passes: bool) -> None:
        """R10.2-12, R13.2-03: every criterion passes; human_review needs a human owner."""
        item = self.item(work_item)
        criteria = item.contract["acceptance_criteria"] if item else []
        verdicts = [
            {"criterion": c["id"], "verdict": "pass" if passes else "fail", "note": ""}
            for c in criteria
        ]
        body = {"work_item": work_item, "review": {"verdicts": verdicts, "summary": "reviewed"}}
        expected: Expected = NOT_FOUND
        if item is not None:
            human_review = any(c["method"] == "human_review" for c in criteria)
            review = item.review or {}
            checks = [  # what the authority recorded, per criterion it checked
                [e["verdict"] for e in summary["evidence"] if e["producer"] == AUTHORITY]
                for summary in review.get("criteria", {}).values()
                if summary["method"] == "deterministic"
            ]
            not_passed = [v for v in checks if v and ("fail" in v or v[-1] != "pass")]
            if item.state != S.SUBMITTED:
                expected = ILLEGAL
            elif human_review and persona is not self.cast.olga:
                expected = FORBIDDEN
            elif review.get("pending_checks"):  # issue 34: acceptance waits for the checks
                expected = ErrorCode.CHECKS_PENDING
            elif not_passed:
                expected = ErrorCode.CHECKS_FAILED
            else:
                expected = OK if passes else ILLEGAL
        self.send(persona, "work.accept_result", body, expected)

    def do_authority_checks(self, work_item: str) -> None:
        """R13.2-03 steps 1–2: the authority's checks of a submission, as its Celery task
        runs them after the submission commits (the same function, the same write path)."""
        item = self.item(work_item)
        if item is None or item.state != S.SUBMITTED:
            return
        reviews.review_submission(tasks.STORE, self.g, work_item)
        self.tally("authority checks")
        for tracker in self.trackers.values():
            tracker.catch_up()

    def do_fail(self, work_item: str, by_owner: bool, with_evidence: bool) -> None:
        """R10.2-13: by the owner with its current lease id, or by the coordinator."""
        item = self.item(work_item)
        failure = [evidence("c1", "agent:pc", verdict="fail")] if with_evidence else []
        body: dict[str, Any] = {"work_item": work_item, "evidence": failure}
        persona: Persona = self.cast.coordinator
        expected: Expected = NOT_FOUND
        if by_owner and item is not None and item.owner is not None:
            persona = self.worker(item.owner.removeprefix("agent:"))
            body["lease_id"] = lease_id_of(item)
            if not names_current_lease(item, body["lease_id"]):
                expected = STALE_LEASE
            else:  # a current lease id, live or not: only the state decides from here
                expected = OK if item.state in S.UNFINISHED else ILLEGAL
        elif item is not None:
            expected = OK if item.state in S.UNFINISHED else ILLEGAL
        if expected == OK and not with_evidence:
            expected = ErrorCode.EVIDENCE_MISSING
        self.send(persona, "work.fail", body, expected)

    def do_send_back(self, work_item: str, with_evidence: bool) -> None:
        """R13.2-03 step 5: a human mission_owner fails a submitted item only."""
        item = self.item(work_item)
        failure = (
            [evidence("c1", self.cast.olga.principal, verdict="fail")] if with_evidence else []
        )
        body = {"work_item": work_item, "evidence": failure}
        expected: Expected = NOT_FOUND
        if item is not None:
            expected = OK if item.state == S.SUBMITTED else ILLEGAL
        if expected == OK and not with_evidence:
            expected = ErrorCode.EVIDENCE_MISSING
        self.send(self.cast.olga, "work.fail", body, expected)

    def do_cancel(self, work_item: str, persona: Persona) -> None:
        """R10.2-14, R10.2-19: any unfinished state; terminal states stay."""
        item = self.item(work_item)
        expected: Expected = NOT_FOUND
        if item is not None:
            expected = OK if item.state in S.UNFINISHED else ILLEGAL
        body = {"work_item": work_item, "reason": "no longer needed"}
        self.send(persona, "work.cancel", body, expected)

    def do_reprioritize(self, work_item: str, persona: Persona, urgency: str) -> None:
        """R0-12, R11.3-11: any state but the terminal ones, by the coordinator or a mission
        owner; the same urgency again changes nothing and is refused; the item does not move
        and keeps its revision."""
        item = self.item(work_item)
        expected: Expected = NOT_FOUND
        if item is not None:
            unchanged = item.contract.get("urgency") == urgency
            expected = ILLEGAL if item.state in S.TERMINAL or unchanged else OK
        body = {"work_item": work_item, "urgency": urgency, "reason": "escalated"}
        answer = self.send(persona, "work.reprioritize", body, expected)
        if isinstance(answer, Outcome):
            after = self.item(work_item)
            assert after is not None
            assert item is not None
            assert after.contract["urgency"] == urgency
            assert (after.state, after.revision) == (item.state, item.revision)

    def do_unblock(self, work_item: str, to: str) -> None:
        """R10.2-10; never while the linked child mission runs (R10.2-15)."""
        item = self.item(work_item)
        expected: Expected = NOT_FOUND
        if item is not None:
            stays_blocked = item.state != S.BLOCKED or child_running(item)
            nobody_to_queue_for = to == S.QUEUED and item.owner is None
            expected = ILLEGAL if stays_blocked or nobody_to_queue_for else OK
        body = {"work_item": work_item, "to": to}
        self.send(self.cast.coordinator, "work.unblock", body, expected)

    def do_create_child(self, work_item: str, child: str, same_group: bool, policy: str) -> None:
        """R10.2-15, R10.4-05, R10.4-06: the parent is blocked; the child mission exists in
        its group (through an authority follow-up when that is another group)."""
        item = self.item(work_item)
        group = self.g if same_group else self.g2
        body = {
            "work_item": work_item,
            "child": {
                "mission": child,
                "group": group,
                "goal": "sub-task",
                "budgets": {"money": 1},
            },
            "failure_policy": policy,
        }
        expected: Expected = NOT_FOUND
        taken = self.mission(child, group) is not None
        if item is not None:
            allowed = item.state in S.allowed_from("mission.create_child")
            waiting = item.child is not None and item.child.get("status") == "running"
            expected = OK if allowed and not waiting and not (same_group and taken) else ILLEGAL
        answer = self.send(self.cast.coordinator, "mission.create_child", body, expected)
        if isinstance(answer, Outcome):
            assert self.mission(child, group) is not None
            after = self.item(work_item)
            assert after is not None
            assert after.child is not None
            assert after.child["correlation_id"] == answer.body["result"]["correlation_id"]
            if taken:  # the other group refused: reported back as a failed child (R10.2-17)
                refused = S.FAILED if policy == "fail_parent" else S.BLOCKED
                assert (after.state, after.child["status"]) == (refused, "refused")
            else:
                assert (after.state, after.child["status"]) == (S.BLOCKED, "running")

    def do_end_mission(self, group: str, ident: str, outcome: str, persona: Persona) -> None:
        """R10.2-16 (approve), R10.2-17 and R10.2-18 (fail, cancel): what follows for the
        mission's unfinished WorkItems and for a linked parent WorkItem."""
        mission = self.mission(ident, group)
        type_ = {"approved": "mission.approve", "failed": "mission.fail"}.get(
            outcome, "mission.cancel"
        )
        unfinished = [
            w
            for w in (mission.work_items if mission else ())
            if self.trackers[group].item_state(w) in S.UNFINISHED
        ]
        expected: Expected = NOT_FOUND
        if mission is not None:
            stuck = outcome == "approved" and bool(unfinished)
            expected = OK if mission.state == "active" and not stuck else ILLEGAL
        parent = self._parent_after(mission, outcome) if mission else None
        field_name = "comment" if outcome == "approved" else "reason"
        body = {"mission": ident, field_name: "done with it"}
        answer = self.send(persona, type_, body, expected, group=group)
        if isinstance(answer, Outcome):
            assert self.mission_state(ident, group) == outcome
            for work_item in unfinished:
                assert self.trackers[group].item_state(work_item) == outcome
            if parent is not None:
                parent_group, parent_item, state = parent
                assert self.trackers[parent_group].item_state(parent_item) == state

    def _parent_after(self, mission: Mission, outcome: str) -> tuple[str, str, str] | None:
        """Where a blocked parent WorkItem waiting for ``mission`` ends up, if there is one."""
        link = mission.link
        if link is None:
            return None
        parent = self.item(link["work_item"], link["group"])
        if (
            parent is None
            or parent.state != S.BLOCKED
            or parent.child is None
            or parent.child.get("correlation_id") != link["correlation_id"]
        ):
            return None
        if outcome == "approved":
            return link["group"], link["work_item"], S.VERIFIED
        policy = parent.child["failure_policy"]
        return link["group"], link["work_item"], S.FAILED if policy == "fail_parent" else S.BLOCKED

    def do_message(self, work_item: str, persona: Persona, essential: bool, reply: bool) -> None:
        """R10.1-02, R10.1-03, R10.1-04: an essential question stays open until the
        coordinator answers it — unless the coordinator asked it; every other reply is kept
        and settles nothing."""
        item = self.item(work_item)
        body: dict[str, Any] = {"work_item": work_item, "text": "which month exactly?"}
        if essential:
            body["essential"] = True
        answered = item.open_questions[0] if item and item.open_questions and reply else None
        if answered is not None:
            body["in_reply_to"] = answered
        answer = self.send(persona, "work.message", body, NOT_FOUND if item is None else OK)
        if isinstance(answer, Outcome):
            after = self.item(work_item)
            assert after is not None
            if answered is not None:
                settles = persona in (self.cast.coordinator, self.cast.olga) and (
                    item is not None and item.question_askers.get(answered) != persona.principal
                )
                assert (answered not in after.open_questions) == settles
            if essential:
                assert answer.body["result"]["message"] in after.open_questions

    # --- rules: draw the arguments, then one judged command --------------------------------

    def _actor(self, item: WorkItem | None, as_owner: bool, name: str) -> AgentPersona:
        """The item's owner (or latest former owner) when asked and there is one."""
        if as_owner and item is not None:
            principal = item.owner or (item.former_owners[-1] if item.former_owners else None)
            if principal is not None:
                return self.worker(principal.removeprefix("agent:"))
        return self.worker(name)

    def _offer_pick(self, work_item: str, pick: int) -> tuple[str, str]:
        """(offer id, the worker it was made to) among the item's offers, or a made-up one."""
        item = self.item(work_item)
        if pick < 0 or item is None or not item.offers:
            return "o-ghost", WORKERS[0]
        offers = item.offers
        if pick % 2 == 0:  # prefer the offers still open (expired ones included)
            offers = tuple(o for o in offers if o.status == "open") or offers
        offer = offers[pick % len(offers)]
        return offer.offer, offer.worker.removeprefix("agent:")

    def _missions(self, group: str | None = None) -> list[tuple[str, str]]:
        return [
            (g, ident)
            for g, tracker in self.trackers.items()
            if group in (None, g)
            for kind, ident in sorted(tracker.state)
            if kind == "mission"
        ]

    def _pick_mission(self, pick: int, group: str | None = None) -> tuple[str, str]:
        missions = self._missions(group)
        if pick < 0 or not missions:
            return self.g, GHOST
        return missions[pick % len(missions)]

    @rule(again=st.integers(0, 3).map(lambda n: n == 0), by_olga=st.booleans())
    def create_mission(self, again: bool, by_olga: bool) -> None:
        """A new mission, or (``again``) an id already taken: ILLEGAL_TRANSITION."""
        mission = "m0" if again else self.fresh("m-")
        self.do_create_mission(mission, self.cast.olga if by_olga else self.cast.coordinator)

    @rule(
        again=st.integers(0, 3).map(lambda n: n == 0),
        by=st.sampled_from(("olga", "rita", "pw1")),
        with_contract=st.booleans(),
    )
    def propose(self, again: bool, by: str, with_contract: bool) -> None:
        """A new proposal, or (``again``) one that exists: ILLEGAL_TRANSITION."""
        known = sorted(i for k, i in self.trackers[self.g].state if k == "proposal")
        proposal = known[0] if again and known else self.fresh("p-")
        persona = {"olga": self.cast.olga, "rita": self.cast.rita}.get(by) or self.worker(by)
        self.do_propose(proposal, persona, with_contract)

    @rule(
        work_item=st.sampled_from(ITEMS),
        mission_pick=picks,
        dependency_picks=st.lists(
            st.one_of(st.sampled_from((-2, -1)), st.integers(0, 60)), unique=True, max_size=2
        ),
        proposal_pick=st.one_of(st.none(), st.none(), picks),
        approvals=st.sampled_from((0, 0, 1, 2)),
        human_review=st.booleans(),
        policy=st.sampled_from(("all_verified", "all_terminal")),
    )
    def authorize(
        self,
        work_item: str,
        mission_pick: int,
        dependency_picks: list[int],
        proposal_pick: int | None,
        approvals: int,
        human_review: bool,
        policy: str,
    ) -> None:
        _, mission = self._pick_mission(mission_pick, self.g)
        # -2: the item itself; -1: an id not authorised yet (it may later close a cycle)
        unused = [w for w in ITEMS if self.item(w) is None and w != work_item] or ["wi-x"]
        depends_on = sorted(
            {
                work_item if pick == -2 else unused[0] if pick == -1 else self.pick_item(pick)
                for pick in dependency_picks
            }
            - {"wi-ghost"}
        )
        proposals = sorted(i for k, i in self.trackers[self.g].state if k == "proposal")
        proposal = None
        if proposal_pick is not None:
            proposal = (
                proposals[proposal_pick % len(proposals)]
                if proposal_pick >= 0 and proposals
                else "p-ghost"
            )
        terms = {"human_review": human_review, "approvals": approvals, "dependency_policy": policy}
        self.do_authorize(work_item, mission, depends_on, proposal, terms)

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        workers=st.lists(st.sampled_from(WORKERS), unique=True, min_size=1, max_size=3),
        mode=st.sampled_from(("urgent", "sequential")),
        expired=st.lists(st.integers(0, 3).map(lambda n: n == 0), min_size=3, max_size=3),
        revise=st.sampled_from((None, None, "same", "corrected")),
    )
    def offer(
        self, pick: int, workers: list[str], mode: str, expired: list[bool], revise: str | None
    ) -> None:
        self.do_offer(self.pick_item(pick, "work.offer"), workers, mode, expired, revise)

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        offer_pick=picks,
        wrong_worker=st.sampled_from((None, None, None, *WORKERS)),
        stale_revision=st.integers(0, 5).map(lambda n: n == 0),
    )
    def accept(
        self, pick: int, offer_pick: int, wrong_worker: str | None, stale_revision: bool
    ) -> None:
        work_item = self.pick_item(pick, "work.accept_offer")
        offer_id, worker = self._offer_pick(work_item, offer_pick)
        self.do_accept(work_item, offer_id, wrong_worker or worker, 1 if stale_revision else 0)

    @precondition(lambda self: self.items())
    @rule(pick=picks, offer_pick=picks, wrong_worker=st.sampled_from((None, None, *WORKERS)))
    def reject(self, pick: int, offer_pick: int, wrong_worker: str | None) -> None:
        work_item = self.pick_item(pick, "work.reject_offer")
        offer_id, worker = self._offer_pick(work_item, offer_pick)
        self.do_reject(work_item, offer_id, wrong_worker or worker)

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        by_olga=st.booleans(),
        stale_revision=st.integers(0, 5),
        comment=st.sampled_from(("out of scope", "out of scope", "")),
    )
    def refuse_approval(self, pick: int, by_olga: bool, stale_revision: int, comment: str) -> None:
        persona = self.cast.olga if by_olga else self.cast.omar
        self.do_refuse(
            self.pick_item(pick, "approval.refuse_execution"),
            persona,
            1 if stale_revision == 0 else 0,
            comment,
        )

    @precondition(lambda self: self.items())
    @rule(pick=picks, by_olga=st.booleans(), stale_revision=st.integers(0, 5))
    def grant_approval(self, pick: int, by_olga: bool, stale_revision: int) -> None:
        persona = self.cast.olga if by_olga else self.cast.omar
        self.do_grant(
            self.pick_item(pick, "approval.grant_execution"),
            persona,
            1 if stale_revision == 0 else 0,
        )

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        as_owner=st.integers(0, 4).map(bool),
        name=st.sampled_from(WORKERS),
        wrong_epoch=st.integers(0, 6).map(lambda n: n == 0),
    )
    def start(self, pick: int, as_owner: bool, name: str, wrong_epoch: bool) -> None:
        work_item = self.pick_item(pick, "work.start")
        actor = self._actor(self.item(work_item), as_owner, name)
        self.do_start(work_item, actor, 1 if wrong_epoch else 0)

    @precondition(lambda self: self.items())
    @rule(
        kind=st.sampled_from(
            ("lease.renew", "work.progress", "work.usage", "work.checkpoint", "work.block")
        ),
        pick=picks,
        as_owner=st.integers(0, 4).map(bool),
        name=st.sampled_from(WORKERS),
        stale_lease=st.integers(0, 6).map(lambda n: n == 0),
    )
    def execute(self, kind: str, pick: int, as_owner: bool, name: str, stale_lease: bool) -> None:
        work_item = self.pick_item(pick, kind)
        item = self.item(work_item)
        actor = self._actor(item, as_owner, name)
        self.do_execute(kind, work_item, actor, lease_id_of(item, stale=stale_lease))

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        as_owner=st.integers(0, 4).map(bool),
        name=st.sampled_from(WORKERS),
        stale_lease=st.integers(0, 6).map(lambda n: n == 0),
        complete=st.integers(0, 4).map(bool),
    )
    def submit(
        self, pick: int, as_owner: bool, name: str, stale_lease: bool, complete: bool
    ) -> None:
        work_item = self.pick_item(pick, "work.submit")
        item = self.item(work_item)
        actor = self._actor(item, as_owner, name)
        self.do_submit(work_item, actor, lease_id_of(item, stale=stale_lease), complete)

    @precondition(lambda self: self.items())
    @rule(pick=picks, by_reviewer=st.booleans())
    def record_evidence(self, pick: int, by_reviewer: bool) -> None:
        persona: Persona = self.cast.rita if by_reviewer else self.cast.coordinator
        self.do_record_evidence(self.pick_item(pick, "evidence.record"), persona)

    @precondition(lambda self: self.items())
    @rule(pick=picks)
    def authority_checks(self, pick: int) -> None:
        self.do_authority_checks(self.pick_item(pick, "work.accept_result"))

    @precondition(lambda self: self.items())
    @rule(pick=picks, by_olga=st.booleans(), passes=st.integers(0, 4).map(bool))
    def accept_result(self, pick: int, by_olga: bool, passes: bool) -> None:
        persona: Persona = self.cast.olga if by_olga else self.cast.coordinator
        self.do_accept_result(self.pick_item(pick, "work.accept_result"), persona, passes)

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        by_owner=st.integers(0, 3).map(lambda n: n == 0),
        with_evidence=st.integers(0, 5).map(bool),
    )
    def fail(self, pick: int, by_owner: bool, with_evidence: bool) -> None:
        self.do_fail(self.pick_item(pick, "work.fail"), by_owner, with_evidence)

    @precondition(lambda self: self.items())
    @rule(pick=picks, with_evidence=st.integers(0, 5).map(bool))
    def send_back(self, pick: int, with_evidence: bool) -> None:
        self.do_send_back(self.pick_item(pick, "work.accept_result"), with_evidence)

    @precondition(lambda self: self.items())
    @rule(pick=picks, by_olga=st.booleans())
    def cancel(self, pick: int, by_olga: bool) -> None:
        self.do_cancel(
            self.pick_item(pick, "work.cancel"),
            self.cast.olga if by_olga else self.cast.coordinator,
        )

    @precondition(lambda self: self.items())
    @rule(pick=picks, urgency=st.sampled_from(URGENCIES), by_olga=st.booleans())
    def reprioritize(self, pick: int, urgency: str, by_olga: bool) -> None:
        persona: Persona = self.cast.olga if by_olga else self.cast.coordinator
        self.do_reprioritize(self.pick_item(pick, "work.reprioritize"), persona, urgency)

    @precondition(lambda self: self.items())
    @rule(pick=picks, to=st.sampled_from((S.QUEUED, S.OPEN)))
    def unblock(self, pick: int, to: str) -> None:
        self.do_unblock(self.pick_item(pick, "work.unblock"), to)

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        child=st.sampled_from(CHILD_MISSIONS),
        same_group=st.booleans(),
        policy=st.sampled_from(("fail_parent", "block_parent")),
    )
    def create_child(self, pick: int, child: str, same_group: bool, policy: str) -> None:
        self.do_create_child(
            self.pick_item(pick, "mission.create_child"), child, same_group, policy
        )

    @rule(pick=picks, by_omar=st.integers(0, 3).map(lambda n: n == 0))
    def approve_mission(self, pick: int, by_omar: bool) -> None:
        group, ident = self._pick_mission(pick)
        persona = self.cast.omar if by_omar and group == self.g else self.cast.olga
        self.do_end_mission(group, ident, "approved", persona)

    @rule(pick=picks, outcome=st.sampled_from(("failed", "cancelled")), by_olga=st.booleans())
    def end_mission(self, pick: int, outcome: str, by_olga: bool) -> None:
        group, ident = self._pick_mission(pick)
        persona: Persona = self.cast.olga if by_olga else self.cast.coordinator
        self.do_end_mission(group, ident, outcome, persona)

    @precondition(lambda self: self.items())
    @rule(
        pick=picks,
        by=st.sampled_from(("pw1", "pw2", "coordinator", "rita")),
        essential=st.booleans(),
        reply=st.booleans(),
    )
    def message(self, pick: int, by: str, essential: bool, reply: bool) -> None:
        extra = {"coordinator": self.cast.coordinator, "rita": self.cast.rita}
        persona = extra.get(by) or self.worker(by)
        self.do_message(self.pick_item(pick), persona, essential, reply)

    # --- the happy path: move one item along, so deep states are reached often -------------

    @rule(pick=st.integers(0, 60), steps=st.integers(1, 6))
    def advance(self, pick: int, steps: int) -> None:
        """Take the natural next command for an unfinished item, up to ``steps`` times."""
        items = [w for w in self.items() if self.state_of(w) in S.UNFINISHED | {S.FAILED}]
        if not items:
            self._authorize_next(pick)
            return
        work_item = items[pick % len(items)]
        for step in range(steps):
            if not self._advance_once(work_item, pick + step):
                return

    def _active_missions(self) -> list[str]:
        return [m for _, m in self._missions(self.g) if self.mission_state(m) == "active"]

    def _authorize_next(self, pick: int) -> None:
        unused = [w for w in ITEMS if self.item(w) is None]
        if not unused:
            return
        if not self._active_missions():
            self.do_create_mission(self.fresh("m-"), self.cast.olga)
        active = self._active_missions()
        proposals = [
            ident
            for (kind, ident), proposal in sorted(self.trackers[self.g].state.items())
            if kind == "proposal" and proposal.state == "open"
        ]
        proposal = proposals[0] if proposals and pick % 3 == 0 else None
        existing = self.items()
        depends_on = [existing[pick % len(existing)]] if existing and pick % 4 == 0 else []
        terms = {"approvals": pick % 3, "human_review": pick % 2 == 0}
        self.do_authorize(unused[0], active[pick % len(active)], depends_on, proposal, terms)

    def _advance_once(self, work_item: str, pick: int) -> bool:
        """One natural next command for the item's state. ``pick`` varies which one, so side
        roads (renewals, checkpoints, blocks, children, late results) are taken too, and
        about one step in seven is a wrong move whose refusal the model must predict."""
        item = self.item(work_item)
        assert item is not None
        if pick % 7 == 3:
            return self._detour(work_item, item, pick)
        owner = self.worker(item.owner.removeprefix("agent:")) if item.owner else None
        lease_id = lease_id_of(item)
        if item.state in (S.OPEN, S.OFFERED) and item.former_owners and pick % 4 == 0:
            former = self.worker(item.former_owners[-1].removeprefix("agent:"))
            self.do_submit(work_item, former, "lease_not_current", complete=True)  # late
            return True
        if item.state in (S.OPEN, S.FAILED) or (
            item.state == S.BLOCKED and not owner_holds(item) and not child_running(item)
        ):
            workers = [WORKERS[pick % 3], WORKERS[(pick + 1) % 3]]
            mode = "urgent" if pick % 2 else "sequential"
            self.do_offer(work_item, workers, mode, [pick % 5 == 0])
        elif item.state == S.OFFERED:
            if item.open_questions:
                # the coordinator answers, or a mission owner when the coordinator asked
                asker = item.question_askers.get(item.open_questions[0])
                coordinator = self.cast.coordinator
                answerer = self.cast.olga if asker == coordinator.principal else coordinator
                self.do_message(work_item, answerer, essential=False, reply=True)
                return True
            live = live_offer(item)
            if live is None:
                return False
            self.do_accept(work_item, live.offer, live.worker.removeprefix("agent:"), 0)
        elif item.state == S.QUEUED and owner is not None:
            approvers = [
                p
                for p in (self.cast.olga, self.cast.omar)
                if p.principal not in (item.authorized_by, item.proposed_by, *item.approvals)
            ]
            short = len(item.approvals) < approvals_required(item)
            if short and approvers and pick % 11 == 6:
                self.do_refuse(work_item, approvers[0], 0, "out of scope")  # R10.2-06
            elif short and pick % 5 == 0:
                self.do_grant(work_item, self.cast.olga, 0)  # maybe self or duplicate approval
            elif short and approvers and pick % 4:
                self.do_grant(work_item, approvers[0], 0)
            else:
                self.do_start(work_item, owner, 0)
        elif item.state == S.ACTIVE and owner is not None:
            kinds = ("lease.renew", "work.progress", "work.usage", "work.checkpoint", "work.block")
            if pick % 9 < len(kinds):
                self.do_execute(kinds[pick % 9], work_item, owner, lease_id)
            elif pick % 9 == 5:
                child = CHILD_MISSIONS[pick % 3]
                policy = ("fail_parent", "block_parent")[pick % 2]
                self.do_create_child(work_item, child, pick % 4 == 0, policy)
            else:
                self.do_submit(work_item, owner, lease_id, complete=True)
        elif item.state == S.SUBMITTED:
            if pick % 3:
                self.do_authority_checks(work_item)
            if pick % 4 == 0:
                self.do_record_evidence(work_item, self.cast.rita)
            if pick % 6 == 5:
                self.do_send_back(work_item, with_evidence=True)  # R13.2-03 step 5
            else:
                self.do_accept_result(work_item, self.cast.olga, passes=pick % 7 != 0)
        elif item.state == S.BLOCKED and child_running(item):
            assert item.child is not None
            group, child = item.child["group"], item.child["mission"]
            if self.mission(child, group) is None:
                return False
            outcome = ("approved", "approved", "failed", "cancelled")[pick % 4]
            self.do_end_mission(group, child, outcome, self.cast.olga)
        elif item.state == S.BLOCKED:
            to = S.QUEUED if owner is not None and pick % 3 else S.OPEN
            self.do_unblock(work_item, to)
        else:
            return False
        return self.item(work_item) != item

    def _detour(self, work_item: str, item: WorkItem, pick: int) -> bool:
        """A wrong move next to the happy path: a stale revision, the wrong worker, an expired
        offer, an essential question, a wrong epoch, a stale lease, missing evidence."""
        variant = pick // 7 % 3
        owner = self.worker(item.owner.removeprefix("agent:")) if item.owner else None
        live = live_offer(item) if item.state == S.OFFERED else None
        if live is not None:
            name = live.worker.removeprefix("agent:")
            expired = [o for o in item.offers if o.status == "open" and offer_expired(o.expires_at)]
            if variant == 0:
                self.do_accept(work_item, live.offer, name, 1)  # STALE_REVISION
            elif variant == 1:
                other = next(w for w in WORKERS if w != name)
                self.do_accept(work_item, live.offer, other, 0)  # FORBIDDEN
            elif expired:
                gone = expired[0]
                self.do_accept(work_item, gone.offer, gone.worker.removeprefix("agent:"), 0)
            else:
                self.do_message(work_item, self.worker(name), essential=True, reply=False)
        elif item.state == S.QUEUED and owner is not None:
            self.do_start(work_item, owner, 1)  # STALE_OWNERSHIP: not the current epoch
        elif item.state == S.ACTIVE and owner is not None:
            if variant == 0:
                self.do_submit(work_item, owner, lease_id_of(item), complete=False)
            else:
                self.do_execute("lease.renew", work_item, owner, "lease_not_current")
        else:
            return False
        return True

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def live_work_items_are_in_known_states_and_agree_with_the_log(self) -> None:
        """R10.2: every live WorkItem row is in one of the nine states, the one the log says."""
        for group, tracker in self.trackers.items():
            live = dict(
                WorkItemRow.objects.filter(group_id=group).values_list("work_item_id", "state")
            )
            folded = {
                ident: a.state for (kind, ident), a in tracker.state.items() if kind == "work_item"
            }
            assert live == folded
            assert set(live.values()) <= set(S.STATES)

    def teardown(self) -> None:
        """R16, wire§6: gapless, chained, and the live projections equal a rebuild."""
        for group in self.trackers:
            assert_log_consistent(group)


@pytest.mark.django_db(transaction=True)
def test_the_workitem_lifecycle_never_reaches_an_illegal_state_and_projections_match_rebuild() -> (
    None
):
    """R10.2-22, R10.2-01..21, R10.3, R10.4, R16: over random command sequences through the
    write path, every WorkItem move is a row of the table, refusals append nothing, and
    live projections equal a replay of each group's log."""
    Lifecycle.cast = _cast()
    OUTCOMES.clear()
    run_state_machine_as_test(
        Lifecycle,
        settings=settings(
            max_examples=proofs.size(sample=30, full=80),
            stateful_step_count=50,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    print("\n" + "\n".join(f"{count:5d}  {outcome}" for outcome, count in sorted(OUTCOMES.items())))


# --- what the state machine found, kept as plain examples ---------------------------------------


@pytest.fixture
def linked(transactional_db: None) -> tuple[Cast, str, str]:
    """The cast, a group with mission m0 and WorkItem wi-a (open), and a second group;
    transactional, so cross-group follow-ups run after each commit."""
    cast = _cast()
    group = factories.group("gl-linked", cast.org)
    other = factories.group("gx-linked", cast.org)
    factories.grant(cast.admin, group, cast.coordinator, "coordinator")
    factories.grant(cast.admin, other, cast.coordinator, "coordinator")
    factories.grant(cast.admin, group, cast.olga, "mission_owner")
    attempt(cast.olga, group, "mission.create", mission_body("m0"))
    body = {"work_item": "wi-a", "mission": "m0", "contract": contract(), "depends_on": []}
    assert isinstance(attempt(cast.coordinator, group, "work.authorize", body), Outcome)
    return cast, group, other


def _child(group: str, mission: str, policy: str = "fail_parent") -> dict[str, Any]:
    return {
        "work_item": "wi-a",
        "child": {"mission": mission, "group": group, "goal": "sub-task", "budgets": {}},
        "failure_policy": policy,
    }


def test_a_parent_waits_for_one_child_at_a_time(
    linked: tuple[Cast, str, str],
) -> None:
    """R10.2-15, R10.2-17, R10.4-06: while a child runs, a second ``mission.create_child`` is
    ILLEGAL_TRANSITION and appends nothing (it would orphan the first child); once the first
    child failed under ``block_parent`` a new child may be linked, and the parent follows it."""
    cast, group, other = linked
    create = "mission.create_child"
    first = attempt(cast.coordinator, group, create, _child(group, "cm1", "block_parent"))
    assert isinstance(first, Outcome)
    before = head(group)
    second = attempt(cast.coordinator, group, create, _child(other, "cm9"))
    assert isinstance(second, ProtocolError)
    assert (second.code, second.requirement) == (ILLEGAL, "R10.2-15")
    assert head(group) == before
    ended = attempt(cast.coordinator, group, "mission.fail", {"mission": "cm1", "reason": "x"})
    assert isinstance(ended, Outcome), ended
    assert [e["type"] for e in ended.body["events"]] == ["mission.failed", "mission.child_failed"]
    again = attempt(cast.coordinator, group, create, _child(group, "cm2"))
    assert isinstance(again, Outcome), again
    tracker = LogTracker(group)
    tracker.catch_up()
    parent = tracker.item("wi-a")
    assert parent is not None
    assert parent.child is not None
    assert (parent.state, parent.child["mission"], parent.child["status"]) == (
        S.BLOCKED,
        "cm2",
        "running",
    )


def test_a_blocked_item_whose_child_runs_cannot_be_offered_even_without_an_owner(
    linked: tuple[Cast, str, str],
) -> None:
    """R10.2-15, R10.2-22: like ``work.unblock``, ``work.offer`` is ILLEGAL_TRANSITION while
    the linked child runs, and appends nothing."""
    cast, group, _ = linked
    created = attempt(cast.coordinator, group, "mission.create_child", _child(group, "cm1"))
    assert isinstance(created, Outcome)
    before = head(group)
    worker = cast.workers[WORKERS[0]]
    offers = [{"offer": "o1", "worker": worker.principal, "expires_at": now_text(600)}]
    refused = attempt(cast.coordinator, group, "work.offer", offer_body("wi-a", offers))
    assert isinstance(refused, ProtocolError)
    assert (refused.code, refused.requirement) == (ILLEGAL, "R10.2-15")
    assert head(group) == before
