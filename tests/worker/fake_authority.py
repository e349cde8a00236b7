"""An in-process authority for the runtime's unit tests: every command is decided by the real
pure protocol core, so what the Worker sends is validated as the server would validate it.

Each group is a ``PureDriver`` over a ``RecordingScenario`` (``tests/worker/streams.py``):
commands of the worker (``submit``) and of the test's coordinator (``story``) are decided,
appended, and served as wire.md §6 documents with their hash chain through ``get_json``, so
the worker's ``QueueStore`` folds them exactly as it folds the real log. ``unreachable``
makes every call raise ``Unavailable``, as the client does once its retries are spent.
``revoke`` revokes the worker's membership in a group, after which the group answers every
read and command of the worker ``NOT_A_MEMBER`` (the server's door, wire.md §2, §4);
``replace_session`` opens a new session for it, revoking its active leases (R11.3-10).

What it does not emulate: the write path's follow-ups after a submission (the authority's
own manifests, evidence and review requests), capability token signatures (tokens are opaque
strings), and artifact bytes (every digest counts as stored, as ``Scenario`` assumes).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from missionweave.client.agent import CommandResult, Membership, Session
from missionweave.client.errors import ApiError, ArtifactMismatch, Unavailable
from missionweave.protocol import decider
from missionweave.protocol.canonical import ZERO_HASH, sha256_digest
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ProtocolError, http_status
from missionweave.protocol.facts import Command, Decision, StateKey
from missionweave.protocol.heads import head_document, reference
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.memberships import GRANT, REVOKE, owned_items_key
from missionweave.protocol.presence import validate_presence
from missionweave.protocol.signing import generate_private_key, sign_document
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.items import work_item_key
from tests.protocol.work_scenarios import (
    SESSION_EPOCH,
    WORKER,
    Call,
    PureDriver,
    WorkStory,
    work_contract,
)
from tests.worker.streams import ADMIN, RecordingScenario, documents

#: the fake authority's own signing key (nothing checks it: the fake is the client too)
_HEAD_KEY = generate_private_key()

ME = WORKER


class Clock:
    """The shared test clock: the worker and the authority read the same time."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@dataclass
class Sent:
    group: str
    type: str
    body: dict[str, Any]
    extensions: dict[str, Any] | None
    command_id: str


@dataclass
class GroupScenario(RecordingScenario):
    """A ``RecordingScenario`` whose commands name their real group (``Scenario`` names one
    fixed group; an offline binding must name the command's own, R11.5-10)."""

    group: str = "g-research"

    def when(self, type_: str, body: dict[str, Any], **kwargs: Any) -> Decision:
        spec = COMMANDS[type_]
        spec.validate(body)
        command = Command(
            kwargs.get("command_id") or f"cmd-{self.sequence + 1}",
            type_,
            self.group,
            kwargs.get("actor", "user:alice"),
            body,
            kwargs["now"],
            kwargs.get("session_epoch"),
            kwargs.get("roles", frozenset()),
            kwargs.get("extensions") or {},
            head_sequence=self.sequence,
        )
        view: dict[StateKey, Any] = {}
        for _ in range(8):
            missing = spec.keys(command, view) - view.keys()
            if not missing:
                break
            view.update({key: self._load(key) for key in missing})
        return decider.decide(view, command)


@dataclass
class GroupLog:
    name: str
    driver: PureDriver = field(init=False)
    stories: dict[str, WorkStory] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.driver = PureDriver(scenario=GroupScenario(group=self.name), group=self.name)

    @property
    def scenario(self) -> GroupScenario:
        assert isinstance(self.driver.scenario, GroupScenario)
        return self.driver.scenario

    def events(self) -> list[dict[str, Any]]:
        return documents(self.name, self.scenario.log)


class FakeAuthority:
    """The ``Authority`` the runtime talks to, for ``principal`` (the worker)."""

    def __init__(self, clock: Clock, groups: Sequence[str], principal: str = ME) -> None:
        self.clock = clock
        self.principal = principal
        self.unreachable = False
        #: groups where the worker's membership was revoked (``revoke``)
        self.revoked: set[str] = set()
        #: how many times each group's events were asked for
        self.reads: Counter[str] = Counter()
        self.sent: list[Sent] = []
        #: the heads signed for each group, in order (``signed_head``)
        self._heads: dict[str, list[dict[str, Any]]] = {}
        self.uploads: dict[str, bytes] = {}
        #: every presence report, oldest first
        self.presence: list[dict[str, Any]] = []
        self.published: list[dict[str, Any]] = []
        self._replies: dict[str, CommandResult] = {}
        self._tokens = itertools.count(1)
        self.session = Session(
            "s-1",
            SESSION_EPOCH,
            "token",
            format_timestamp(clock.now + timedelta(days=1)),
            {group: Membership(("worker",), 1) for group in groups},
        )
        self.groups = {group: GroupLog(group) for group in groups}
        for log in self.groups.values():
            self._admin(log, GRANT, {"principal": principal, "roles": ["worker"]})

    # --- the test's coordinator ----------------------------------------------------------------

    def _admin(
        self, log: GroupLog, type_: str, body: dict[str, Any], *, actor: str = ADMIN
    ) -> None:
        now = self.clock.now
        decision = log.scenario.when(type_, body, actor=actor, now=now)
        events = log.scenario.then(decision, actor=actor, at=now)
        for story in log.stories.values():  # the fenced items' bookkeeping (owner, lease)
            for event_type, payload in events:
                story._track(event_type, payload)

    def revoke(self, group: str) -> None:
        """An admin revokes the worker's membership in ``group``: the same command fences
        every item it owns (protocol.md §2), and from then on the group refuses it."""
        log = self.groups[group]
        owned = tuple(
            sorted(
                ident
                for ident in log.stories
                if self.item(group, ident).get("owner") == self.principal
            )
        )
        log.scenario.outside[owned_items_key(self.principal)] = owned
        self._admin(log, REVOKE, {"principal": self.principal})
        self.revoked.add(group)

    def replace_session(self) -> None:
        """The worker opens a new session (a new process): its active leases are revoked and
        their items queued again for it (R11.3-10), as ``POST /sessions`` does."""
        epoch = self.session.epoch + 1
        self.session = replace(self.session, session_id=f"s-{epoch}", epoch=epoch)
        for log in self.groups.values():
            log.driver.sessions[self.principal] = epoch
            for ident in sorted(log.stories):
                lease = self.item(log.name, ident).get("lease")
                if lease and lease["agent"] == self.principal and lease["status"] == "active":
                    body = {
                        "work_item": ident,
                        "lease_id": lease["lease_id"],
                        "session_epoch": epoch,
                    }
                    self._admin(log, "lease.revoke", body, actor=AUTHORITY)

    def story(self, group: str, item: str, **contract: Any) -> WorkStory:
        """A WorkItem authorised by the coordinator in ``group``, in the group's one mission
        ``m-<group>`` (created with the first item)."""
        log = self.groups[group]
        log.driver.at = self.clock.now
        story = WorkStory(
            log.driver, item=item, mission=f"m-{group}", contract=work_contract(**contract)
        )
        if not log.stories:
            story.do("mission.create")
        story.do("work.authorize")
        log.stories[item] = story
        return story

    def offer(self, group: str, item: str, **options: Any) -> None:
        log = self.groups[group]
        log.driver.at = self.clock.now
        log.stories[item].do("work.offer", workers=(self.principal,), **options)

    def do(self, group: str, item: str, command: str, **options: Any) -> None:
        """Any other story command (an approval, a cancellation, a reassignment...)."""
        log = self.groups[group]
        log.driver.at = self.clock.now
        log.stories[item].do(command, **options)

    def item(self, group: str, item: str) -> dict[str, Any]:
        found = self.groups[group].scenario.state.get(work_item_key(item))
        assert found is not None, f"no {item} in {group}"
        return found.as_dict()

    def of_type(self, type_: str, group: str | None = None) -> list[Sent]:
        return [s for s in self.sent if s.type == type_ and group in (None, s.group)]

    # --- the Authority protocol ----------------------------------------------------------------

    def _reachable(self, group: str | None = None) -> None:
        if self.unreachable:
            raise Unavailable("the fake authority is unreachable")
        if group in self.revoked:
            raise ApiError(403, "NOT_A_MEMBER", f"{self.principal} is not a member of {group}")

    def submit(
        self,
        group: str,
        type_: str,
        body: dict[str, Any],
        command_id: str | None = None,
        *,
        extensions: dict[str, Any] | None = None,
    ) -> CommandResult:
        self._reachable()
        command_id = command_id or f"cmd-{len(self.sent) + 1}-{group}"
        if command_id in self._replies:  # wire.md §3 step 5: the same command, answered again
            reply = self._replies[command_id]
            return CommandResult(command_id, reply.status, reply.body, True)
        self.sent.append(Sent(group, type_, body, extensions, command_id))
        self._reachable(group)  # recorded first: a test sees what was sent to a revoked group
        log = self.groups[group]
        now = self.clock.now
        log.driver.at = now
        try:
            decision = log.driver.decide(
                Call(type_, self.principal, body, extensions=extensions or {}),
                at=now,
                command_id=command_id,  # as the server: a message's id is its command's
            )
        except ProtocolError as error:
            status = http_status(error.code)
            details = dict(error.details or {})
            raise ApiError(
                status, str(error.code), error.message, error.requirement, details
            ) from None
        events = log.scenario.then(decision, actor=self.principal, at=now)
        for story in log.stories.values():
            for event_type, payload in events:
                story._track(event_type, payload)
        result = dict(decision.result or {})
        if decision.capabilities:
            result["capability_tokens"] = [
                {"token_id": f"tok-{n}", "token": f"token-{n}", "expires_at": "", "scope": {}}
                for n in (next(self._tokens) for _ in decision.capabilities)
            ]
        reply = CommandResult(
            command_id, decision.status, {"command_id": command_id, "result": result}, False
        )
        self._replies[command_id] = reply
        return reply

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._reachable()
        parts = path.strip("/").split("/")
        if parts == ["sessions", "current"]:
            return {"memberships": {g: {"roles": ["worker"], "epoch": 1} for g in self.groups}}
        if parts[0] == "groups" and parts[2] == "events":
            self.reads[parts[1]] += 1  # attempts, refused ones included
        if parts[0] == "groups":
            self._reachable(parts[1])
        if parts[0] == "groups" and parts[2] == "events":
            events = self.groups[parts[1]].events()
            after, limit = int((params or {})["after"]), int((params or {})["limit"])
            return {"events": events[after : after + limit], "head": len(events)}
        if parts[0] == "groups" and parts[2] == "work-items":
            found = self.groups[parts[1]].scenario.state.get(work_item_key(parts[3]))
            if found is None:
                raise ApiError(404, "NOT_FOUND", f"no {parts[3]}")
            return found.as_dict()
        if parts[0] == "groups" and parts[2:] == ["contexts"]:
            return self._contexts(parts[1], params or {})
        raise AssertionError(f"the fake serves no {path}")

    def _contexts(self, group: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """``GET /groups/{g}/contexts`` in one page, from the group's context aggregates."""
        state = self.groups[group].scenario.state
        packages = sorted(
            (package for (kind, _), package in state.items() if kind == "context"),
            key=lambda package: package.id,
        )
        mission, work_item = params.get("mission"), params.get("work_item")
        listed = [p.summary() for p in packages if p.in_context_of(mission, work_item)]
        return {"packages": listed, "next_after": None}

    def signed_head(self, group: str) -> dict[str, Any]:
        """The group's head as the real authority signs it: once per sequence, each naming
        the one before (``missionweave.protocol.heads``); the fake's key is its own."""
        self._reachable(group)
        events = self.groups[group].events()
        signed = self._heads.setdefault(group, [])
        if signed and signed[-1]["sequence"] == len(events):
            return signed[-1]
        head = sign_document(
            _HEAD_KEY,
            head_document(
                group=group,
                sequence=len(events),
                hash_=events[-1]["hash"] if events else ZERO_HASH,
                previous=reference(signed[-1]) if signed else None,
                signed_at=format_timestamp(self.clock()),
            ),
        )
        signed.append(head)
        return head

    def current_session(self) -> Session:
        return self.session

    def report_presence(self, report: dict[str, Any]) -> dict[str, Any]:
        """``POST /presence``, checked by the protocol core and kept in order (R11.1-11)."""
        self._reachable()
        self.presence.append(validate_presence(report))
        return {"agent": self.principal, **report}

    def upload(self, data: Any, *, content_type: str = "application/octet-stream") -> str:
        self._reachable()
        digest = sha256_digest(bytes(data))
        self.uploads[digest] = bytes(data)
        return digest

    def download(self, digest: str) -> bytes:
        """The bytes uploaded under ``digest`` (a checkpoint's stored state, ``resume.py``);
        404 ``NOT_FOUND`` for anything never uploaded, as the server answers, and
        ``ArtifactMismatch`` for bytes that do not hash to it, as ``AgentClient.download``
        finds while they stream (a test changes ``uploads`` to play a corrupted store)."""
        self._reachable()
        if digest not in self.uploads:
            raise ApiError(404, "NOT_FOUND", f"no artifact {digest}")
        data = self.uploads[digest]
        if sha256_digest(data) != digest:
            raise ArtifactMismatch(digest, sha256_digest(data), len(data))
        return data

    def publish(self, group: str, work_item: str, lease_id: str, **manifest: Any) -> Any:
        self._reachable(group)
        self.published.append({"group": group, "work_item": work_item, **manifest})
        return CommandResult("publish", 201, {}, False)

    def submit_work(
        self,
        group: str,
        work_item: str,
        lease_id: str,
        *,
        outputs: Mapping[str, str],
        evidence: Sequence[Mapping[str, Any]],
        artifacts: Sequence[str] | None = None,
    ) -> CommandResult:
        """As ``AgentClient.submit_work`` builds it (producer filled in)."""
        body: dict[str, Any] = {
            "work_item": work_item,
            "lease_id": lease_id,
            "artifacts": list(dict.fromkeys(outputs.values())),
            "evidence": [{"producer": self.principal, "artifacts": [], **e} for e in evidence],
        }
        if outputs:
            body["outputs"] = dict(outputs)
        return self.submit(group, "work.submit", body)

    def close(self) -> None:
        pass


def wait_until(
    tick: Callable[[], None], condition: Callable[[], bool], *, timeout_s: float = 10.0
) -> None:
    """Tick the worker until ``condition`` holds (slot threads run meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        tick()
        time.sleep(0.005)
