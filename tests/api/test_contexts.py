"""Context packages over HTTP against the real write path (wire.md §4, §6, §9; R13.3).

``g-research`` is the source: ``w1`` coordinates it and ``g-ops``, ``w2`` works in both,
``otto`` works in ``g-ops`` only, ``cora`` coordinates ``g-research`` only. A forward reaches
``g-ops`` as an authority follow-up after the source commits (run here with
``django_capture_on_commit_callbacks``), as child missions do.

R13.3-06 is not enforced by code; ``tests/protocol/test_context.py`` says why. R13.3-08 is
the worker scheduler's rule: ``tests/worker/test_scheduler_metadata.py``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from apps.artifacts.access import readable
from apps.ledger.write_path import run_follow_up
from missionweave.protocol.context import package_digest, receive_command_id
from missionweave.protocol.facts import FollowUp
from missionweave.protocol.signing import document_signature_holds, parse_public_key
from tests.factories import AgentPersona, agent, grant, group, now_text, store_bytes

from .http import error_of, get, json_of
from .work_http import Persona, Wire, WorkWorld, authorized, build_work_world, contract, token_of

pytestmark = pytest.mark.django_db

SOURCE = "g-research"
TARGET = "g-ops"
Commit = Callable[..., AbstractContextManager[Any]]


class ContextWorld:
    def __init__(self, api: APIClient) -> None:
        self.api = api
        self.ww: WorkWorld = build_work_world()
        alice = self.ww.alice
        group(TARGET, self.ww.org)
        self.otto: AgentPersona = agent("otto", self.ww.org)
        grant(alice, TARGET, self.ww.w1, "coordinator")
        grant(alice, TARGET, self.ww.w2, "worker")
        grant(alice, TARGET, self.otto, "worker")
        self.otto.open_session()
        self.source = Wire(api, SOURCE, self.ww.olga)
        self.target = Wire(api, TARGET, self.otto)

    def read(self, persona: Persona, path: str, status: int = 200) -> Any:
        return json_of(get(self.api, path, token_of(persona)), status)

    def refused_read(self, persona: Persona, path: str, status: int, code: str) -> dict:
        return error_of(get(self.api, path, token_of(persona)), status, code)


@pytest.fixture
def cw(api: APIClient, db: None) -> ContextWorld:
    return ContextWorld(api)


def scoped(cw: ContextWorld) -> int:
    """Mission ``m-1`` with WorkItems ``wi-1`` and ``wi-2`` in the source; returns its head."""
    for item in ("wi-1", "wi-2"):
        authorized(cw.source, cw.ww, item, mission="m-1", contract=contract(inputs=[]))
    return cw.source.head()


def package(version: int = 1, last: int = 3, **overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "id": "ctx-1",
        "version": version,
        "mission": "m-1",
        "work_items": ["wi-1", "wi-2"],
        "event_range": [1, last],
        "artifacts": [],
        "decisions": ["one summary per incident"],
        "constraints": ["no customer names"],
        "open_questions": ["include October?"],
        "generator": "agent:w1",
        "created_at": now_text(),
    }
    value.update(overrides)
    return value


def publish(cw: ContextWorld, version: int = 1, **overrides: Any) -> dict[str, Any]:
    return cw.source.ok(cw.ww.w1, "context.publish", {"package": package(version, **overrides)})


def forward_body(version: int = 1, to_group: str = TARGET) -> dict[str, Any]:
    return {"package": {"id": "ctx-1", "version": version}, "to_group": to_group}


def authority_key() -> Any:
    """The key every recorded package must verify under, read as any client reads it."""
    return parse_public_key(json_of(get(APIClient(), "/authority"), 200)["public_key"])


# --- publishing ----------------------------------------------------------------------------


def test_a_coordinator_publishes_versions_the_authority_signs_and_chains(cw: ContextWorld) -> None:
    """R13.3-01, R13.3-02, R13.3-04, wire§6: each context.publish appends context.published;
    every recorded version verifies under ``GET /authority``'s key, its digest is over the
    package without the signature, and version 2 names version 1's digest as ``previous``."""
    head = scoped(cw)
    first = publish(cw, last=head)
    second = publish(cw, 2, last=head, decisions=["one summary per incident", "weekly digest"])
    assert [e["type"] for e in first["events"] + second["events"]] == ["context.published"] * 2

    key = authority_key()
    events = cw.source.events(after=head)
    document = cw.read(cw.ww.olga, f"/groups/{SOURCE}/contexts/ctx-1")
    assert (document["id"], document["source_group"]) == ("ctx-1", SOURCE)
    assert (document["received_from"], document["forwarded"]) == (None, [])
    v1, v2 = document["versions"]
    for entry, event, answer in ((v1, events[0], first), (v2, events[1], second)):
        assert entry["package"] == event["payload"]["package"]
        assert entry["digest"] == event["payload"]["digest"] == answer["result"]["digest"]
        assert entry["digest"] == package_digest(entry["package"])
        assert entry["sequence"] == event["sequence"]
        assert document_signature_holds(key, entry["package"])
    assert v1["package"]["previous"] is None
    assert v2["package"]["previous"] == v1["digest"]
    assert v2["package"]["decisions"] == ["one summary per incident", "weekly digest"]
    tampered = {**v2["package"], "previous": None}
    assert not document_signature_holds(key, tampered)


def test_a_version_other_than_the_next_is_refused_and_appends_nothing(cw: ContextWorld) -> None:
    """R13.3-04: version 1 again (any content) and a skipped version are 409
    ILLEGAL_TRANSITION naming the latest; the recorded version is untouched."""
    head = scoped(cw)
    publish(cw, last=head)
    for version, decisions in ((1, ["rewritten"]), (3, ["skipping"])):
        body = {"package": package(version, last=head, decisions=decisions)}
        error = cw.source.refused(cw.ww.w1, "context.publish", body, 409, "ILLEGAL_TRANSITION")
        assert error["details"] == {"package": "ctx-1", "latest": 1}
    (v1,) = cw.read(cw.ww.olga, f"/groups/{SOURCE}/contexts/ctx-1")["versions"]
    assert v1["package"]["decisions"] == ["one summary per incident"]


def test_an_event_range_past_the_head_is_malformed(cw: ContextWorld) -> None:
    """R13.3-02: the cited range lies within the log as it is when the package is recorded."""
    head = scoped(cw)
    body = {"package": package(last=head + 1)}
    error = cw.source.refused(cw.ww.w1, "context.publish", body, 400, "MALFORMED", "R13.3-02")
    assert error["details"] == {"path": "$.package.event_range"}


def test_the_scope_must_be_of_this_group(cw: ContextWorld) -> None:
    """R13.3-02, R13.3-05: a mission and WorkItems of this group only (404 naming them)."""
    scoped(cw)
    error = cw.source.refused(
        cw.ww.w1, "context.publish", {"package": package(mission="m-9")}, 404, "NOT_FOUND"
    )
    assert error["details"] == {"path": "$.package.mission", "mission": "m-9"}
    body = {"package": package(work_items=["wi-1", "wi-9"])}
    error = cw.source.refused(cw.ww.w1, "context.publish", body, 404, "NOT_FOUND")
    assert error["details"] == {"path": "$.package.work_items[1]", "work_item": "wi-9"}


def test_only_a_coordinator_publishes(cw: ContextWorld) -> None:
    """wire§9: context.publish is issued by a coordinator; a worker is FORBIDDEN."""
    scoped(cw)
    cw.source.refused(cw.ww.w2, "context.publish", {"package": package()}, 403, "FORBIDDEN")


def test_an_artifact_the_sender_may_not_name_is_not_found_naming_its_digest(
    cw: ContextWorld,
) -> None:
    """R13.3-02, wire§9: a package's artifact hashes are digests the sender may name; one
    never stored, and one stored by a stranger to this group that w1 may not read, are both
    404 NOT_FOUND with ``details.digest``, and nothing is appended."""
    scoped(cw)
    never_stored = "sha256:" + "de" * 32
    strangers = store_bytes(cw.otto.principal, b"otto's notes, uploaded in g-ops")
    for digest in (never_stored, strangers):
        body = {"package": package(artifacts=[digest])}
        error = cw.source.refused(cw.ww.w1, "context.publish", body, 404, "NOT_FOUND")
        assert error["details"] == {"path": "$.package.artifacts[0]", "digest": digest}


# --- forwarding ----------------------------------------------------------------------------


def test_forwarding_records_the_crossing_in_both_logs(cw: ContextWorld, commit: Any) -> None:
    """R13.3-05, R13.3-07, wire§6: before the forward ``g-ops`` has no such package; the
    forward appends context.forwarded in the source, and the authority's follow-up appends
    context.received in the target carrying the signed package exactly as recorded."""
    head = scoped(cw)
    published = publish(cw, last=head)["events"][0]
    cw.refused_read(cw.otto, f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1", 404, "NOT_FOUND")
    target_head = cw.target.head()
    with commit():
        answer = cw.source.ok(cw.ww.w1, "context.forward", forward_body(), id="fwd-1")

    source_event = cw.source.events(after=published["sequence"])[0]
    assert (source_event["type"], source_event["actor"]) == ("context.forwarded", "agent:w1")
    digest = source_event["payload"]["digest"]
    assert source_event["payload"] == {
        "package": {"id": "ctx-1", "version": 1},
        "digest": digest,
        "to_group": TARGET,
    }
    (received,) = cw.target.events(after=target_head)
    assert (received["type"], received["actor"]) == ("context.received", "authority")
    assert received["command_id"] == receive_command_id(SOURCE, "fwd-1")
    assert received["command_id"] == answer["result"]["receive_command"]
    source_package = cw.read(cw.ww.olga, f"/groups/{SOURCE}/contexts/ctx-1")
    assert received["payload"] == {
        "package": source_package["versions"][0]["package"],
        "digest": digest,
        "from_group": SOURCE,
        "forwarded_by": "agent:w1",
        "source_sequence": published["sequence"],
    }
    assert source_package["forwarded"] == [
        {
            "version": 1,
            "to_group": TARGET,
            "sequence": source_event["sequence"],
            "forwarded_by": "agent:w1",
        }
    ]

    copy = cw.read(cw.otto, f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1")
    assert (copy["source_group"], copy["received_from"], copy["forwarded_by"]) == (
        SOURCE,
        SOURCE,
        "agent:w1",
    )
    (entry,) = copy["versions"]
    assert document_signature_holds(authority_key(), entry["package"])
    assert entry["source_sequence"] == published["sequence"]
    cw.refused_read(cw.otto, f"/groups/{TARGET}/contexts/ctx-1", 404, "NOT_FOUND")


def test_a_resent_receive_is_an_idempotent_replay(cw: ContextWorld, commit: Any) -> None:
    """R13.3-07, wire§3: the follow-up carries a deterministic command id, so delivering it
    again (the outbox's resend) replays the stored answer and appends nothing."""
    head = scoped(cw)
    publish(cw, last=head)
    with commit():
        cw.source.ok(cw.ww.w1, "context.forward", forward_body(), id="fwd-1")
    target_head = cw.target.head()
    (received,) = cw.target.events(after=target_head - 1)
    again = FollowUp(
        TARGET, "context.receive", received["payload"], receive_command_id(SOURCE, "fwd-1")
    )
    outcome = run_follow_up(again)
    assert outcome is not None
    assert outcome.replayed
    assert cw.target.head() == target_head


def test_a_version_is_forwarded_to_a_group_once(cw: ContextWorld, commit: Any) -> None:
    """R13.3-07: a second forward of the same version to the same group is 409, in neither
    log; the next version crosses on its own."""
    head = scoped(cw)
    publish(cw, last=head)
    with commit():
        cw.source.ok(cw.ww.w1, "context.forward", forward_body())
    target_head = cw.target.head()
    error = cw.source.refused(
        cw.ww.w1, "context.forward", forward_body(), 409, "ILLEGAL_TRANSITION"
    )
    assert error["details"]["to_group"] == TARGET
    publish(cw, 2, last=head)
    with commit():
        cw.source.ok(cw.ww.w1, "context.forward", forward_body(2))
    versions = cw.read(cw.otto, f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1")["versions"]
    assert [v["version"] for v in versions] == [1, 2]
    assert versions[1]["package"]["previous"] == versions[0]["digest"]
    assert cw.target.head() == target_head + 1


def test_forwarding_needs_the_coordinator_role_in_the_target_too(
    cw: ContextWorld, commit: Any
) -> None:
    """R13.3-07: cora coordinates the source only: not a member of ``g-ops`` is 403
    NOT_A_MEMBER, a worker there 403 FORBIDDEN, each naming the group; neither log grows."""
    head = scoped(cw)
    publish(cw, last=head)
    cora = cw.ww.cora
    target_head = cw.target.head()
    with commit():
        error = cw.source.refused(cora, "context.forward", forward_body(), 403, "NOT_A_MEMBER")
    assert error["details"]["group"] == TARGET
    assert cw.target.head() == target_head
    grant(cw.ww.alice, TARGET, cora, "worker")
    with commit():
        error = cw.source.refused(cora, "context.forward", forward_body(), 403, "FORBIDDEN")
    assert error["details"]["group"] == TARGET
    assert cw.target.head() == target_head + 1  # only cora's membership.granted
    assert cw.read(cw.ww.olga, f"/groups/{SOURCE}/contexts/ctx-1")["forwarded"] == []


def test_forwarding_to_a_group_that_does_not_exist_is_not_found(cw: ContextWorld) -> None:
    """R13.3-07: the target is checked before anything is appended."""
    head = scoped(cw)
    publish(cw, last=head)
    body = forward_body(to_group="g-nowhere")
    error = cw.source.refused(cw.ww.w1, "context.forward", body, 404, "NOT_FOUND")
    assert error["details"]["group"] == "g-nowhere"


def test_clients_cannot_submit_a_receive(cw: ContextWorld) -> None:
    """R13.3-07, wire§9: only the authority records an arrival; for a client the type does
    not exist."""
    body = {"package": package(), "digest": "sha256:" + "0" * 64, "from_group": SOURCE}
    cw.target.refused(cw.ww.w1, "context.receive", body, 400, "UNKNOWN_COMMAND")


# --- reading the cited events (R13.3-03) ---------------------------------------------------


def _forwarded(cw: ContextWorld, commit: Any) -> int:
    """Version 1 citing events 1..head published and forwarded; returns that head."""
    head = scoped(cw)
    publish(cw, last=head)
    with commit():
        cw.source.ok(cw.ww.w1, "context.forward", forward_body())
    return head


def test_a_worker_outside_the_source_group_cannot_read_the_cited_events(
    cw: ContextWorld, commit: Any
) -> None:
    """R13.3-03: otto reads the forwarded summary in ``g-ops`` but not the history behind it:
    403 NOT_A_MEMBER naming the source group."""
    _forwarded(cw, commit)
    path = f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1/versions/1/events"
    error = cw.refused_read(cw.otto, path, 403, "NOT_A_MEMBER")
    assert (error["requirement"], error["details"]) == ("R13.3-03", {"group": SOURCE})


def test_a_member_of_both_groups_reads_the_cited_events_page_by_page(
    cw: ContextWorld, commit: Any
) -> None:
    """R13.3-03: w2 belongs to both groups, so it reads exactly the events of the range from
    the source log, identical to the source's own event pages, following ``next_after``."""
    head = _forwarded(cw, commit)
    cited = cw.source.events()[:head]
    path = f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1/versions/1/events"
    page = cw.read(cw.ww.w2, path)
    assert (page["group"], page["event_range"], page["next_after"]) == (SOURCE, [1, head], head)
    assert page["events"] == cited

    found, after = [], 0
    while True:
        page = cw.read(cw.ww.w2, f"{path}?after={after}&limit=2")
        if not page["events"]:
            break
        found.extend(page["events"])
        after = page["next_after"]
    assert found == cited
    assert cw.read(cw.ww.w2, f"{path}?after={head}")["events"] == []


def test_the_source_group_reads_the_events_its_own_package_cites(cw: ContextWorld) -> None:
    """R13.3-03: any member of the source group (olga) reads them; a range starting after 1
    starts there."""
    head = scoped(cw)
    publish(cw, event_range=[2, head])
    page = cw.read(cw.ww.olga, f"/groups/{SOURCE}/contexts/ctx-1/versions/1/events")
    assert [e["sequence"] for e in page["events"]] == list(range(2, head + 1))


def test_reading_packages_needs_membership_and_unknown_ones_are_not_found(
    cw: ContextWorld, commit: Any
) -> None:
    """R13.3-05, wire§4: a non-member of the group gets 403; an unknown package, source or
    version 404 — in the §8 error shape."""
    _forwarded(cw, commit)
    stranger = cw.ww.stranger
    cw.refused_read(stranger, f"/groups/{SOURCE}/contexts/ctx-1", 403, "NOT_A_MEMBER")
    cw.refused_read(stranger, f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1", 403, "NOT_A_MEMBER")
    cw.refused_read(cw.otto, f"/groups/{SOURCE}/contexts/ctx-1", 403, "NOT_A_MEMBER")
    for path in (
        f"/groups/{SOURCE}/contexts/ctx-404",
        f"/groups/{TARGET}/contexts/g-elsewhere/ctx-1",
        f"/groups/{SOURCE}/contexts/ctx-1/versions/2/events",
        f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1/versions/9/events",
    ):
        cw.refused_read(cw.ww.w2, path, 404, "NOT_FOUND")
    cw.refused_read(cw.ww.w2, f"/groups/{SOURCE}/contexts/ctx-1/", 404, "NOT_FOUND")
    error_of(get(cw.api, f"/groups/{SOURCE}/contexts/ctx-1"), 401, "UNAUTHENTICATED")


def test_the_projections_are_what_a_replay_of_both_logs_builds(
    cw: ContextWorld, commit: Any
) -> None:
    """R13.3-01, R13.3-04: the package rows are disposable — ``rebuild_projections --verify``
    finds the live rows equal to a replay of each log, and a rebuild serves the same
    documents."""
    head = _forwarded(cw, commit)
    publish(cw, 2, last=head)
    with commit():
        cw.source.ok(cw.ww.w1, "context.forward", forward_body(2))
    paths = (
        (cw.ww.olga, f"/groups/{SOURCE}/contexts/ctx-1"),
        (cw.otto, f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1"),
    )
    before = [cw.read(persona, path) for persona, path in paths]
    out = io.StringIO()
    groups = ("--group", SOURCE, "--group", TARGET)
    call_command("rebuild_projections", *groups, "--verify", stdout=out, stderr=io.StringIO())
    assert out.getvalue().count("projections match") == 2
    call_command("rebuild_projections", *groups, stdout=io.StringIO(), stderr=io.StringIO())
    assert [cw.read(persona, path) for persona, path in paths] == before


def test_a_forwarded_package_lets_the_target_read_the_artifacts_it_names(
    cw: ContextWorld, commit: Any
) -> None:
    """R13.3-02, R13.3-07, wire§4: a package's artifact hashes are citations in each log
    that records it, so after the forward otto (a member of ``g-ops`` only) may read the
    artifact w1 uploaded, which he could not before."""
    digest = store_bytes(cw.ww.w1.principal, b"the incident summary, v1")
    head = scoped(cw)
    publish(cw, last=head, artifacts=[digest])
    assert not readable(cw.otto.principal, digest)
    with commit():
        cw.source.ok(cw.ww.w1, "context.forward", forward_body())
    (entry,) = cw.read(cw.otto, f"/groups/{TARGET}/contexts/{SOURCE}/ctx-1")["versions"]
    assert entry["package"]["artifacts"] == [digest]
    assert readable(cw.otto.principal, digest)
