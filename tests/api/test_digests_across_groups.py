"""A digest is not a key, even across groups (wire.md §9; R13.3-05, R13.3-07; R13.1-01), over
HTTP on the real write path.

A command may name a digest only if this group's log already cites it, its sender uploaded
it, or it arrived here by ``context.forward``. ``g-research`` (A) and ``g-ops`` (B): ``w2``
works in both and uploads bytes only A's log cites; ``cleo`` coordinates B and is no member
of A; ``w1`` coordinates both (so it reads what A cites, and may forward); ``otto`` works in B
only. Being in B with the uploader, or reading the bytes through A, is no route into B.
A forward reaches B as an authority follow-up after A commits (``commit``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.artifacts.access import readable
from missionweave.protocol.canonical import sha256_digest
from tests.factories import AgentPersona, agent, grant, group, now_text

from .http import error_of, get
from .work_http import (
    Persona,
    Wire,
    WorkWorld,
    authorize_body,
    build_work_world,
    checkpoint_body,
    contract,
    mission_create_body,
    raw_json,
    started,
    token_of,
)

pytestmark = pytest.mark.django_db

A = "g-research"
B = "g-ops"
Commit = Callable[..., AbstractContextManager[Any]]

#: bytes w2 uploads and cites in A: what the probe turned into a key in B
ONLY_A_CITES = b"A's incident notes, uploaded by w2 and cited in A alone\n"


class TwoGroups:
    def __init__(self, api: APIClient) -> None:
        self.api = api
        self.ww: WorkWorld = build_work_world()
        alice = self.ww.alice
        group(B, self.ww.org)
        self.cleo: AgentPersona = agent("cleo", self.ww.org)
        self.otto: AgentPersona = agent("otto", self.ww.org)
        grant(alice, B, self.cleo, "coordinator")
        grant(alice, B, self.ww.w1, "coordinator")
        grant(alice, B, self.ww.w2, "worker")
        grant(alice, B, self.otto, "worker")
        for persona in (self.cleo, self.otto):
            persona.open_session()
        self.a = Wire(api, A, self.ww.olga)
        self.b = Wire(api, B, self.otto)
        self.b.ok(self.cleo, "mission.create", mission_create_body("m-b"))

    def cited_in_a(self) -> str:
        """``w2`` uploads the bytes and cites them in A's log (a checkpoint of its work)."""
        digest = self.a.upload(self.ww.w2, ONLY_A_CITES)
        lease = started(self.a, self.ww, "wi-a")
        self.a.ok(self.ww.w2, "work.checkpoint", checkpointing(lease, "wi-a", digest))
        assert self.provenance(A, digest).status_code == 200
        return digest

    def provenance(self, group_id: str, digest: str, persona: Persona | None = None) -> Any:
        path = f"/groups/{group_id}/artifacts/{digest}"
        return get(self.api, path, token_of(persona or self.ww.w1))


@pytest.fixture
def tg(api: APIClient, db: None) -> TwoGroups:
    return TwoGroups(api)


def authorize_naming(work_item: str, digest: str) -> dict[str, Any]:
    """``work.authorize`` in B of a contract whose one input is ``digest``."""
    return authorize_body(work_item, "m-b", contract=contract(inputs=[{"ref": digest}]))


def with_digest(error: dict[str, Any], digest: str, other: str) -> Any:
    """``error`` as it would read for ``other`` in place of ``digest``."""
    return json.loads(json.dumps(error).replace(digest, other))


def checkpointing(lease: str, work_item: str, digest: str) -> dict[str, Any]:
    body = checkpoint_body(work_item, lease)
    body["checkpoint"]["artifacts"] = [digest]
    return body


# --- the probe: a member of two groups does not turn a digest into a key ------------------


def test_a_coordinator_of_b_cannot_name_bytes_only_a_cites_that_a_member_of_b_uploaded(
    tg: TwoGroups,
) -> None:
    """wire§9, R13.3-05, R13.1-01 — the probe's case: w2 (a member of A and B) uploaded the
    bytes and only A's log cites them; cleo, coordinator of B and no member of A, names them
    in a contract in B. Refused with the 404 NOT_FOUND a digest never stored gets (same code,
    requirement and details shape, the same document but for the digest), nothing appended
    to B, no projection changed: no WorkItem, no citation; otto (in B only) still cannot
    read the bytes."""
    secret = tg.cited_in_a()
    never_stored = sha256_digest(b"never uploaded anywhere")
    assert not readable(tg.otto.principal, secret)
    mission = tg.b.mission("m-b")

    refused = tg.b.refused(
        tg.cleo, "work.authorize", authorize_naming("wi-b", secret), 404, "NOT_FOUND", "R13.1-01"
    )
    assert refused["details"] == {"path": "$.contract.inputs[0].ref", "digest": secret}
    unknown = tg.b.send(tg.cleo, "work.authorize", authorize_naming("wi-b", never_stored))
    assert unknown.status_code == 404
    assert raw_json(unknown) == {"error": with_digest(refused, secret, never_stored)}

    error_of(get(tg.api, f"/groups/{B}/work-items/wi-b", token_of(tg.otto)), 404, "NOT_FOUND")
    error_of(tg.provenance(B, secret), 404, "NOT_FOUND")
    assert tg.b.mission("m-b") == mission
    assert "work.authorized" not in {event["type"] for event in tg.b.events()}
    assert not readable(tg.otto.principal, secret)
    assert not readable(tg.cleo.principal, secret)


def test_members_of_b_who_did_not_upload_the_bytes_are_refused_too(tg: TwoGroups) -> None:
    """wire§9, R13.3-05: w1 reads the bytes through A (where it coordinates) and otto works in
    B with their uploader; neither may name them in B — w1 in a contract, otto in a
    checkpoint of his own item — each 404 NOT_FOUND naming the digest, nothing appended."""
    secret = tg.cited_in_a()
    assert readable(tg.ww.w1.principal, secret)

    refused = tg.b.refused(
        tg.ww.w1, "work.authorize", authorize_naming("wi-b", secret), 404, "NOT_FOUND"
    )
    assert refused["details"]["digest"] == secret

    lease = started(tg.b, tg.ww, "wi-otto", worker=tg.otto, mission="m-b")
    body = checkpointing(lease, "wi-otto", secret)
    refused = tg.b.refused(tg.otto, "work.checkpoint", body, 404, "NOT_FOUND", "R13.1-01")
    assert refused["details"] == {"path": "$.checkpoint.artifacts[0]", "digest": secret}
    error_of(tg.provenance(B, secret), 404, "NOT_FOUND")


# --- the three routes, each accepted ---------------------------------------------------------


def test_a_digest_this_groups_log_already_cites_may_be_named_by_any_member(
    tg: TwoGroups,
) -> None:
    """wire§9 route (a): w1 uploads an input and cites it in B's log; cleo, who did not
    upload it, then names it in another contract in B, and otto may read it."""
    shared = tg.b.upload(tg.ww.w1, b"B's own input, uploaded by w1\n")
    tg.b.ok(tg.ww.w1, "work.authorize", authorize_naming("wi-b1", shared))
    assert readable(tg.otto.principal, shared)

    tg.b.ok(tg.cleo, "work.authorize", authorize_naming("wi-b2", shared))

    citations = tg.provenance(B, shared).json()["citations"]
    assert [(c["event"], c["actor"]) for c in citations] == [
        ("work.authorized", tg.ww.w1.principal),
        ("work.authorized", tg.cleo.principal),
    ]


def test_the_uploader_itself_may_name_its_bytes_in_another_group(tg: TwoGroups) -> None:
    """wire§9 route (b): w2 uploaded the bytes A cites and may name them in B (it holds them):
    a checkpoint of its item in B is accepted, B's log now cites them, and from then on
    route (a) lets cleo name them in B."""
    secret = tg.cited_in_a()
    lease = started(tg.b, tg.ww, "wi-w2", worker=tg.ww.w2, mission="m-b")

    tg.b.ok(tg.ww.w2, "work.checkpoint", checkpointing(lease, "wi-w2", secret))

    (citation,) = tg.provenance(B, secret).json()["citations"]
    assert (citation["event"], citation["actor"]) == ("work.checkpointed", tg.ww.w2.principal)
    assert readable(tg.otto.principal, secret)
    tg.b.ok(tg.cleo, "work.authorize", authorize_naming("wi-b", secret))


def test_bytes_forwarded_by_context_forward_may_be_named_and_the_crossing_is_in_a_log(
    tg: TwoGroups, commit: Commit
) -> None:
    """wire§9 route (c), R13.3-05, R13.3-07: w1 publishes a package in A naming the bytes
    (A's log cites them) and forwards it to B; A's log records ``context.forwarded``, B's
    ``context.received`` cites the bytes, otto may read them, and cleo's contract naming
    them in B, refused before the forward, is accepted after it."""
    secret = tg.cited_in_a()
    body = authorize_naming("wi-b", secret)
    tg.b.refused(tg.cleo, "work.authorize", body, 404, "NOT_FOUND")
    package = {
        "id": "ctx-1",
        "version": 1,
        "mission": "m-1",
        "work_items": ["wi-a"],
        "event_range": [1, tg.a.head()],
        "artifacts": [secret],
        "decisions": [],
        "constraints": [],
        "open_questions": [],
        "generator": tg.ww.w1.principal,
        "created_at": now_text(),
    }
    tg.a.ok(tg.ww.w1, "context.publish", {"package": package})
    source_head = tg.a.head()
    with commit():
        forward = {"package": {"id": "ctx-1", "version": 1}, "to_group": B}
        tg.a.ok(tg.ww.w1, "context.forward", forward)

    (crossing,) = tg.a.events(after=source_head)
    assert (crossing["type"], crossing["payload"]["to_group"]) == ("context.forwarded", B)
    (citation,) = tg.provenance(B, secret).json()["citations"]
    assert (citation["event"], citation["actor"]) == ("context.received", "authority")
    assert readable(tg.otto.principal, secret)
    tg.b.ok(tg.cleo, "work.authorize", body)


def test_a_group_where_neither_route_holds_still_refuses_after_another_group_gained_one(
    tg: TwoGroups,
) -> None:
    """wire§9: a route is the group's own. After w2 cites the bytes in B (route (b)), a third
    group C with cleo as coordinator still refuses them: B's citation is no key in C."""
    secret = tg.cited_in_a()
    lease = started(tg.b, tg.ww, "wi-w2", worker=tg.ww.w2, mission="m-b")
    tg.b.ok(tg.ww.w2, "work.checkpoint", checkpointing(lease, "wi-w2", secret))
    group("g-c", tg.ww.org)
    grant(tg.ww.alice, "g-c", tg.cleo, "coordinator")
    grant(tg.ww.alice, "g-c", tg.ww.w2, "worker")
    c = Wire(tg.api, "g-c", tg.cleo)
    c.ok(tg.cleo, "mission.create", mission_create_body("m-b"))

    c.refused(tg.cleo, "work.authorize", authorize_naming("wi-c", secret), 404, "NOT_FOUND")
