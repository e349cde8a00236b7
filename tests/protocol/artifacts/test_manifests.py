"""``artifact.publish`` and the authority's recorded manifests, decided without a database
(R13.1-01, R13.1-03, R13.1-04, R13.1-06, R13.3-06, wire.md §9)."""

from __future__ import annotations

from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.artifacts.manifests import agent_card_key, agent_keys_key
from missionweave.protocol.artifacts.records import StoredArtifact, artifact_key
from missionweave.protocol.canonical import canonical_bytes, sha256_digest, without
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import INCIDENT_REPORTS_DIGEST
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.signing import generate_private_key, sign

from ..work_scenarios import WORKER, Call, PureDriver, WorkStory, story_in

OUTPUT = b"# Summary\nEvery report covered."
DIGEST = sha256_digest(OUTPUT)


def active() -> WorkStory:
    driver = PureDriver()
    driver.scenario.outside[agent_card_key(WORKER)] = "7"
    return story_in(S.ACTIVE, driver)


def manifest(story: WorkStory, **changes: Any) -> dict[str, Any]:
    return {
        "digest": DIGEST,
        "media_type": "text/markdown",
        "schema": None,
        "producer": {"agent": WORKER, "version": "summariser 2.1", "agent_card_version": "7"},
        "mission": story.mission,
        "work_item": story.item,
        "sources": [INCIDENT_REPORTS_DIGEST],
        "tool_versions": {"search": "1.4"},
        "created_at": "2026-11-30T10:00:00Z",
        "classification": "internal",
        "size": 0,
        "uri": "https://example.org/mutable/location",
        **changes,
    }


def publish(story: WorkStory, document: dict[str, Any]) -> Call:
    body = {"work_item": story.item, "lease_id": story.lease_id, "manifest": document}
    return Call("artifact.publish", WORKER, body)


def refused(story: WorkStory, call: Call) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        story.driver.decide(call)
    return caught.value


def test_a_manifest_with_every_field_is_recorded_for_the_authority_to_sign() -> None:
    """R13.1-03: every field of the manifest; without the producer's signature the event
    asks the authority to sign it (``authority_signs``) and says so (``signed_by``).
    R13.1-06: the ``uri`` is carried as written, never used to find the bytes."""
    story = active()
    decision = story.driver.decide(publish(story, manifest(story)))
    [event] = decision.events
    assert event.type == "artifact.published"
    assert event.authority_signs == ("manifest",)
    assert event.payload["signed_by"] == AUTHORITY
    assert event.payload["manifest"]["uri"] == "https://example.org/mutable/location"


def test_a_producer_signed_manifest_is_checked_against_its_current_keys() -> None:
    """R13.1-03: a manifest carrying its producer's signature is verified, then recorded as
    signed by the producer; a signature by another key is INVALID_SIGNATURE."""
    story = active()
    key, stranger = generate_private_key(), generate_private_key()
    story.driver.scenario.outside[agent_keys_key(WORKER)] = [key.public_key()]
    document = manifest(story)
    signed = {**document, "signature": sign(key, canonical_bytes(document))}
    [event] = story.driver.decide(publish(story, signed)).events
    assert event.authority_signs == ()
    assert event.payload["signed_by"] == WORKER
    forged = {**document, "signature": sign(stranger, canonical_bytes(document))}
    assert refused(story, publish(story, forged)).code is ErrorCode.INVALID_SIGNATURE


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"size": 9}, "$.manifest.size"),
        ({"mission": "m-other"}, "$.manifest.mission"),
        (
            {"producer": {"agent": "agent:w9", "version": "1", "agent_card_version": "7"}},
            "$.manifest.producer.agent",
        ),
        (
            {"producer": {"agent": WORKER, "version": "1", "agent_card_version": "6"}},
            "$.manifest.producer.agent_card_version",
        ),
    ],
)
def test_a_manifest_that_misstates_its_object_or_producer_is_malformed(
    changes: dict[str, Any], path: str
) -> None:
    """R13.1-03: size is the stored object's, the producer the sender at its current card."""
    story = active()
    error = refused(story, publish(story, manifest(story, **changes)))
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"] == path


def test_bytes_not_stored_are_refused_like_any_unknown_digest() -> None:
    """R13.1-02, wire.md §9: a manifest names stored bytes the sender may name."""
    story = active()
    story.driver.scenario.stored = {}
    error = refused(story, publish(story, manifest(story)))
    assert (error.code, error.details["digest"]) == (ErrorCode.NOT_FOUND, DIGEST)


def test_a_source_must_be_published_here_or_an_input_of_the_contract() -> None:
    """R13.1-04: the provenance graph has only edges the log can show."""
    story = active()
    elsewhere = sha256_digest(b"from some other group")
    error = refused(story, publish(story, manifest(story, sources=[elsewhere])))
    assert error.code is ErrorCode.NOT_FOUND
    assert error.details == {"path": "$.manifest.sources[0]", "digest": elsewhere}


def test_a_digest_is_published_once_and_derived_artifacts_link_both_ways() -> None:
    """R13.1-01 (immutable: one manifest per digest), R13.1-04 (derived from / derives)."""
    story = active()
    story.run(publish(story, manifest(story)))
    state = story.driver.scenario.state
    record = state[artifact_key(DIGEST)]
    assert record.manifest is not None
    assert record.signed_by == AUTHORITY
    assert DIGEST in state[artifact_key(INCIDENT_REPORTS_DIGEST)].derived
    again = refused(story, publish(story, manifest(story)))
    assert again.code is ErrorCode.ILLEGAL_TRANSITION


def test_classification_and_provenance_are_part_of_every_manifest() -> None:
    """R13.3-06 (as far as this server goes): an artifact is published with a
    classification and its provenance or not at all. There is no organisation catalogue to
    approve reusable knowledge into; knowledge crosses groups only by context forwarding."""
    story = active()
    for missing in ("classification", "sources"):
        error = refused(story, publish(story, without(manifest(story), missing)))
        assert error.code is ErrorCode.MALFORMED


def test_a_submitted_artifact_nobody_published_gets_an_authority_manifest() -> None:
    """R13.1-03: ``work.submit`` appends ``work.submitted`` alone and hands the authority a
    follow-up recording the manifest of each unpublished artifact (producer: the
    submitter, its card version; uri a location only)."""
    story = active()
    story.driver.scenario.stored = {
        DIGEST: StoredArtifact(DIGEST, len(OUTPUT)),
        INCIDENT_REPORTS_DIGEST: StoredArtifact(INCIDENT_REPORTS_DIGEST, 31),
    }
    call = story.call("work.submit")
    body = {**call.body, "artifacts": [DIGEST], "outputs": {"summary": DIGEST}}
    for evidence in body["evidence"]:
        evidence["artifacts"] = []
    decision = story.driver.decide(Call("work.submit", WORKER, body))
    assert [event.type for event in decision.events] == ["work.submitted"]
    [follow_up] = decision.follow_ups
    assert follow_up.type == "artifact.record_manifest"
    recorded = follow_up.body["manifest"]
    assert recorded["producer"] == {
        "agent": WORKER,
        "version": "7",
        "agent_card_version": "7",
    }
    assert (recorded["size"], recorded["media_type"]) == (len(OUTPUT), "text/markdown")
    assert recorded["uri"] == f"/api/v1/artifacts/{DIGEST}"
    story.driver.scenario.then(decision, actor=WORKER)
    authority = story.driver.scenario.when(
        follow_up.type, follow_up.body, actor=AUTHORITY, command_id=follow_up.command_id
    )
    [event] = authority.events
    assert event.payload["signed_by"] == AUTHORITY
    assert event.authority_signs == ("manifest",)
