"""What a result may name and who may judge it, over HTTP on the real write path (wire.md §4,
§9; R13.1, R13.2).

A digest is not a key: a command names only stored bytes that the group's log already cites,
that its sender uploaded, or that a forward brought into the group (wire.md §9; R13.3-05,
R13.3-07); anything else is the same 404, so the answer reveals nothing about bytes
elsewhere. A submission covers every declared
output with a stored artifact (an output with an inline JSON Schema is validated before
anything is appended) and every criterion with evidence its sender produced by that
criterion's method; the item's owner never judges its own work. Manifests are signed — by
their producer or, when nobody published the artifact, by the authority as it records one
after the submission commits (a follow-up, run here with ``django_capture_on_commit_callbacks``)
— and ``GET /groups/{g}/artifacts/{digest}`` walks the provenance the log shows.

Uploads go through the store itself (``Wire.upload``): the artifact endpoints are an ASGI
application ahead of Django, which ``APIClient`` does not reach.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from apps.ledger.authority import public_key
from missionweave.protocol.artifacts.manifests import artifact_uri
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.examples import INCIDENT_REPORTS_DIGEST
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.signing import (
    document_signature_holds,
    parse_public_key,
    sign_document,
)
from tests.factories import HumanPersona, agent_card, grant, human, now_text

from .http import error_of, get, json_of
from .work_http import (
    SUMMARY,
    Persona,
    Wire,
    WorkWorld,
    approval_risk,
    authorized,
    checked,
    contract,
    evidence,
    far,
    machine_criteria,
    offer_body,
    raw_json,
    review,
    started,
    submission,
    token_of,
)

pytestmark = pytest.mark.django_db

Commit = Callable[..., AbstractContextManager[Any]]

#: both criteria of the example contract, claimed by ``producer`` with their own methods
BOTH = ("c1", "deterministic"), ("c2", "human_review")


def claims(producer: Persona) -> list[dict[str, Any]]:
    return [evidence(criterion, producer, method=method) for criterion, method in BOTH]


def provenance(wire: Wire, digest: str, persona: Persona | None = None) -> Any:
    path = f"/groups/{wire.group}/artifacts/{digest}"
    return get(wire.api, path, token_of(persona or wire.reader))


def authority_key() -> Any:
    """The key recorded manifests must verify under, read as any client reads it."""
    served = json_of(get(APIClient(), "/authority"), 200)["public_key"]
    assert served == public_key()
    return parse_public_key(served)


# --- a digest is not a key (wire.md §9, R13.1-01) ---------------------------------------------


def test_an_unknown_digest_in_a_submission_is_not_found_and_named(
    wire: Wire, ww: WorkWorld
) -> None:
    """R13.1-01, wire§9: a submitted artifact or an evidence artifact that was never stored is
    404 NOT_FOUND naming the digest and where the body names it; nothing is appended."""
    lease = started(wire, ww, "wi-1")
    unknown = sha256_digest(b"never uploaded")
    body = submission(wire, ww.w2, "wi-1", lease, claims(ww.w2))

    error = wire.refused(
        ww.w2, "work.submit", {**body, "artifacts": [unknown]}, 404, "NOT_FOUND", "R13.1-01"
    )
    assert (error["details"]["digest"], error["details"]["path"]) == (unknown, "$.artifacts[0]")

    cited = claims(ww.w2)
    cited[1]["artifacts"] = [unknown]
    error = wire.refused(
        ww.w2, "work.submit", {**body, "evidence": cited}, 404, "NOT_FOUND", "R13.1-01"
    )
    assert error["details"] == {"path": "$.evidence[1].artifacts[0]", "digest": unknown}
    assert wire.item("wi-1")["state"] == "active"


def test_bytes_only_a_stranger_uploaded_are_refused_exactly_like_bytes_never_stored(
    wire: Wire, ww: WorkWorld
) -> None:
    """wire§9, wire§4: an upload by someone who belongs to no group of the sender makes the
    digest no more nameable — the error document is byte for byte the one for a digest never
    stored, so the answer does not reveal that the bytes exist. Once the worker uploads the
    same bytes itself, the same submission is accepted."""
    lease = started(wire, ww, "wi-1")
    secret = b"# someone else's summary\n"
    body = submission(wire, ww.w2, "wi-1", lease, claims(ww.w2))
    body["artifacts"] = [sha256_digest(secret)]

    never_stored = wire.send(ww.w2, "work.submit", body)
    assert wire.upload(ww.stranger, secret) == sha256_digest(secret)
    uploaded_by_stranger = wire.send(ww.w2, "work.submit", body)

    error_of(never_stored, 404, "NOT_FOUND")
    assert uploaded_by_stranger.status_code == never_stored.status_code
    assert raw_json(uploaded_by_stranger) == raw_json(never_stored)
    assert wire.item("wi-1")["state"] == "active"

    wire.upload(ww.w2, secret)
    wire.ok(ww.w2, "work.submit", body)
    assert wire.item("wi-1")["state"] == "submitted"


# --- evidence is the sender's, by its criterion's method (R13.2-04) ---------------------------


def test_evidence_produced_by_someone_else_is_malformed(wire: Wire, ww: WorkWorld) -> None:
    """R13.2-04: the submitter may not present evidence as another member's (here w3's)."""
    lease = started(wire, ww, "wi-1")
    borrowed = [evidence("c1", ww.w3), evidence("c2", ww.w2, method="human_review")]
    body = submission(wire, ww.w2, "wi-1", lease, borrowed)

    error = wire.refused(ww.w2, "work.submit", body, 400, "MALFORMED", "R13.2-04")

    assert error["details"]["path"] == "$.evidence[0].producer"


def test_evidence_judged_by_another_method_than_its_criterions_is_malformed(
    wire: Wire, ww: WorkWorld
) -> None:
    """R13.2-04: c2 is judged by ``human_review``; a worker's ``deterministic`` claim on it is
    refused, and so is a reviewer's ``agent_review`` verdict on c1 (``deterministic``)."""
    lease = started(wire, ww, "wi-1")
    relabelled = [evidence("c1", ww.w2), evidence("c2", ww.w2)]
    body = submission(wire, ww.w2, "wi-1", lease, relabelled)

    error = wire.refused(ww.w2, "work.submit", body, 400, "MALFORMED", "R13.2-04")
    assert error["details"]["path"] == "$.evidence[1].method"

    wire.ok(ww.w2, "work.submit", {**body, "evidence": claims(ww.w2)})
    verdict = {"work_item": "wi-1", **evidence("c1", ww.rex, method="agent_review")}
    error = wire.refused(ww.rex, "evidence.record", verdict, 400, "MALFORMED", "R13.2-04")
    assert error["details"]["path"] == "$.method"
    wire.ok(ww.rex, "evidence.record", {**verdict, "method": "deterministic"})


# --- the owner does not judge its own work (R13.2-01) -----------------------------------------


def test_an_owner_who_is_also_mission_owner_cannot_approve_accept_or_judge_its_own_item(
    wire: Wire, ww: WorkWorld
) -> None:
    """R13.2-01: hana is a human worker and mission_owner. Owning the item, she may not grant
    its execution, record evidence on it or accept its result (SELF_APPROVAL, each appending
    nothing); olga, another mission owner, may."""
    hana: HumanPersona = human("hana")
    grant(ww.alice, ww.group, hana, "worker", "mission_owner")
    authorized(wire, ww, "wi-h", contract=contract(risk=approval_risk(1)))
    wire.ok(ww.w1, "work.offer", offer_body("wi-h", [("o-h", hana, far())]))
    accept = {"work_item": "wi-h", "offer": "o-h", "contract_revision": 1}
    epoch = wire.ok(hana, "work.accept_offer", accept)["result"]["ownership_epoch"]
    assert wire.item("wi-h")["owner"] == hana.principal

    approval = {"work_item": "wi-h", "contract_revision": 1, "comment": "mine, so fine"}
    wire.refused(hana, "approval.grant_execution", approval, 403, "SELF_APPROVAL", "R13.2-01")
    wire.ok(ww.olga, "approval.grant_execution", approval)

    start = {"work_item": "wi-h", "ownership_epoch": epoch}
    lease = wire.ok(hana, "work.start", start)["result"]["lease"]["lease_id"]
    wire.ok(hana, "work.submit", submission(wire, hana, "wi-h", lease, claims(hana)))

    verdict = {"work_item": "wi-h", **evidence("c1", hana)}
    wire.refused(hana, "evidence.record", verdict, 403, "SELF_APPROVAL", "R13.2-01")
    accepted = {"work_item": "wi-h", "review": review("c1", "c2")}
    wire.refused(hana, "work.accept_result", accepted, 403, "SELF_APPROVAL", "R13.2-01")
    checked(ww.group, "wi-h")
    wire.ok(ww.olga, "work.accept_result", accepted)
    assert wire.item("wi-h")["state"] == "verified"


# --- artifact.publish (R13.1-03, R13.1-04) ----------------------------------------------------


def manifest(ww: WorkWorld, digest: str, size: int, **overrides: Any) -> dict[str, Any]:
    """Every field of the wire.md §9 manifest, for w2's bytes in ``wi-1`` of ``m-1``, derived
    from the contract's input."""
    value: dict[str, Any] = {
        "digest": digest,
        "media_type": "text/markdown",
        "schema": None,
        "producer": {
            "agent": ww.w2.principal,
            "version": "summariser 1.4.2",
            "agent_card_version": agent_card()["version"],
        },
        "mission": "m-1",
        "work_item": "wi-1",
        "sources": [INCIDENT_REPORTS_DIGEST],
        "tool_versions": {"search": "2.1.0"},
        "created_at": now_text(),
        "classification": "internal",
        "size": size,
        "uri": artifact_uri(digest),
    }
    value.update(overrides)
    return value


def test_a_published_manifest_is_recorded_once_and_signed_by_the_authority_or_its_producer(
    wire: Wire, ww: WorkWorld
) -> None:
    """R13.1-03, R13.1-04, R13.1-01: the owner publishes a manifest with every field under its
    lease. Unsigned, the authority signs it as it records it (``signed_by`` authority,
    verifying under ``GET /authority``'s key); signed by the producer's own key, it is kept as
    signed (``signed_by`` the agent). A ``size`` other than the stored object's is MALFORMED, a
    source neither published here nor an input NOT_FOUND, a second manifest for the same
    digest ILLEGAL_TRANSITION — none appends anything."""
    lease = started(wire, ww, "wi-1")
    draft = b"# Draft\n\nThree incidents so far.\n"
    draft_digest = wire.upload(ww.w2, draft)
    head = wire.head()

    body = {"work_item": "wi-1", "lease_id": lease, "manifest": manifest(ww, draft_digest, 0)}
    error = wire.refused(ww.w2, "artifact.publish", body, 400, "MALFORMED", "R13.1-03")
    assert error["details"] == {"path": "$.manifest.size", "expected": len(draft)}

    stray = wire.upload(ww.w2, b"notes nobody published")
    body["manifest"] = manifest(ww, draft_digest, len(draft), sources=[stray])
    error = wire.refused(ww.w2, "artifact.publish", body, 404, "NOT_FOUND", "R13.1-04")
    assert error["details"] == {"path": "$.manifest.sources[0]", "digest": stray}

    body["manifest"] = manifest(ww, draft_digest, len(draft))
    answer = wire.ok(ww.w2, "artifact.publish", body)
    assert [e["type"] for e in answer["events"]] == ["artifact.published"]
    [published] = wire.events(after=head)
    recorded = published["payload"]["manifest"]
    assert published["payload"]["signed_by"] == AUTHORITY
    assert {k: v for k, v in recorded.items() if k != "signature"} == body["manifest"]
    assert document_signature_holds(authority_key(), recorded)

    again = wire.refused(ww.w2, "artifact.publish", body, 409, "ILLEGAL_TRANSITION", "R13.1-01")
    assert again["details"]["published"] == published["sequence"]

    # a summary derived from the draft (published above), signed by its producer
    final = b"# November incidents\n\nEvery report, from the draft.\n"
    final_digest = wire.upload(ww.w2, final)
    unsigned = manifest(ww, final_digest, len(final), sources=[draft_digest])
    signed = sign_document(ww.w2.key, unsigned)
    body = {"work_item": "wi-1", "lease_id": lease, "manifest": signed}
    answer = wire.ok(ww.w2, "artifact.publish", body)
    [by_producer] = wire.events(after=answer["events"][0]["sequence"] - 1)
    assert by_producer["payload"]["signed_by"] == ww.w2.principal
    assert by_producer["payload"]["manifest"] == signed
    assert document_signature_holds(ww.w2.key.public_key(), by_producer["payload"]["manifest"])
    assert not document_signature_holds(authority_key(), by_producer["payload"]["manifest"])

    graph = json_of(provenance(wire, draft_digest), 200)
    assert [node["digest"] for node in graph["derived"]] == [final_digest]
    assert graph["derived"][0]["signed_by"] == ww.w2.principal


# --- the authority's manifest and the provenance graph (R13.1-03, R13.1-04) -------------------


def test_an_unpublished_submitted_artifact_gets_an_authority_manifest_and_a_provenance_graph(
    wire: Wire, ww: WorkWorld, commit: Any
) -> None:
    """R13.1-03, R13.1-04, R13.2-03 step 5: w2 submits a summary nobody published, mapped to the
    contract's ``summary`` output; after the
    submission commits, the authority records its manifest (``artifact.published`` by
    ``authority``, through the follow-up outbox) with w2 as producer and the contract's input
    as source, signed under ``GET /authority``'s key. ``GET /groups/{g}/artifacts/{digest}``
    shows the manifest, the source, every citation and, once olga accepts the result, her
    approval; the input shows the summary as derived from it. A replay of the log builds the
    same projections (``rebuild_projections --verify``)."""
    lease = started(wire, ww, "wi-1")
    head = wire.head()
    body = submission(wire, ww.w2, "wi-1", lease, claims(ww.w2))
    summary = body["artifacts"][0]
    with commit():
        submitted = wire.ok(ww.w2, "work.submit", {**body, "outputs": {"summary": summary}})

    events = wire.events(after=head)
    assert [(e["type"], e["actor"]) for e in events] == [
        ("work.submitted", ww.w2.principal),
        ("artifact.published", AUTHORITY),
    ]
    recorded = events[1]["payload"]
    assert recorded["signed_by"] == AUTHORITY
    assert document_signature_holds(authority_key(), recorded["manifest"])
    assert recorded["manifest"]["producer"]["agent"] == ww.w2.principal
    assert (recorded["manifest"]["digest"], recorded["manifest"]["size"]) == (
        summary,
        len(SUMMARY),
    )
    assert recorded["manifest"]["sources"] == [INCIDENT_REPORTS_DIGEST]
    # the output it was mapped to says what it is (the contract's ``summary``)
    assert recorded["manifest"]["media_type"] == "text/markdown"

    checked(ww.group, "wi-1")
    wire.ok(ww.olga, "work.accept_result", {"work_item": "wi-1", "review": review("c1", "c2")})
    accepted = wire.head()

    graph = json_of(provenance(wire, summary), 200)
    assert (graph["group"], graph["digest"]) == (ww.group, summary)
    assert graph["manifest"] == recorded["manifest"]
    assert (graph["signed_by"], graph["published"]) == (AUTHORITY, events[1]["sequence"])
    assert graph["sources"] == [
        {"digest": INCIDENT_REPORTS_DIGEST, "manifest": None, "signed_by": None}
    ]
    assert graph["derived"] == []
    assert [(c["event"], c["field"]) for c in graph["citations"]] == [
        ("work.submitted", "$.artifacts[0]"),
        ("artifact.published", "$.manifest.digest"),
        ("evidence.recorded", "$.artifacts[0]"),  # the authority's integrity check (R13.2-03)
    ]
    assert graph["citations"][0]["sequence"] == submitted["events"][0]["sequence"]
    assert graph["work_items"] == ["wi-1"]
    assert [s["sequence"] for s in graph["submissions"]] == [submitted["events"][0]["sequence"]]
    assert graph["approvals"] == [
        {"work_item": "wi-1", "sequence": accepted, "by": ww.olga.principal}
    ]

    source = json_of(provenance(wire, INCIDENT_REPORTS_DIGEST, ww.w2), 200)
    assert [node["digest"] for node in source["derived"]] == [summary]
    assert source["derived"][0]["manifest"] == recorded["manifest"]

    out = io.StringIO()
    call_command(
        "rebuild_projections", "--group", ww.group, "--verify", stdout=out, stderr=io.StringIO()
    )
    assert out.getvalue().count("projections match") == 1, out.getvalue()


def test_provenance_is_not_found_outside_the_log_and_refused_to_non_members(
    wire: Wire, ww: WorkWorld
) -> None:
    """R13.1-04, wire§4: a digest this group's log never cites is 404 — even when the bytes
    are stored — and a principal outside the group is 403 NOT_A_MEMBER."""
    stored = wire.upload(ww.w2, b"stored, never cited")

    for digest in (stored, sha256_digest(b"never stored")):
        error = error_of(provenance(wire, digest), 404, "NOT_FOUND")
        assert error["details"]["digest"] == digest
    error_of(provenance(wire, INCIDENT_REPORTS_DIGEST), 404, "NOT_FOUND")

    authorized(wire, ww, "wi-1")  # the contract's input is now cited here
    json_of(provenance(wire, INCIDENT_REPORTS_DIGEST), 200)
    error_of(provenance(wire, INCIDENT_REPORTS_DIGEST, ww.stranger), 403, "NOT_A_MEMBER")


# --- an output with an inline JSON Schema (R13.2-03 step 1) -----------------------------------

REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["incidents"],
    "properties": {
        "incidents": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "severity"],
                "properties": {"id": {"type": "string"}, "severity": {"enum": ["low", "high"]}},
            },
        }
    },
}


def test_an_output_with_an_inline_schema_is_validated_before_the_submission_is_accepted(
    wire: Wire, ww: WorkWorld
) -> None:
    """R13.2-03 step 1, R13.2-02: the contract declares ``report`` as JSON with an inline
    schema. Mapped in ``outputs``, a report that breaks the schema is 400 MALFORMED naming the
    output and the JSON path inside it, and appends nothing; a valid one is accepted."""
    outputs = [{"name": "report", "media_type": "application/json", "schema": REPORT_SCHEMA}]
    terms = contract(outputs=outputs, acceptance_criteria=machine_criteria())
    lease = started(wire, ww, "wi-1", contract=terms)
    claimed = [evidence("c1", ww.w2)]

    wrong = json.dumps({"incidents": [{"id": "i-1", "severity": "low"}, {"id": "i-2"}]})
    wrong_severity = json.dumps({"incidents": [{"id": "i-1", "severity": "urgent"}]})
    for document, path in ((wrong, "$.incidents[1]"), (wrong_severity, "$.incidents[0].severity")):
        body = submission(wire, ww.w2, "wi-1", lease, claimed, document.encode())
        body["outputs"] = {"report": body["artifacts"][0]}
        error = wire.refused(ww.w2, "work.submit", body, 400, "MALFORMED", "R13.2-03")
        assert (error["details"]["output"], error["details"]["path"]) == ("report", path)

    valid = json.dumps({"incidents": [{"id": "i-1", "severity": "high"}]}).encode()
    body = submission(wire, ww.w2, "wi-1", lease, claimed, valid)
    unmapped = wire.refused(ww.w2, "work.submit", body, 409, "EVIDENCE_MISSING", "R13.2-03")
    assert unmapped["details"]["missing"] == ["report"]
    wire.ok(ww.w2, "work.submit", {**body, "outputs": {"report": body["artifacts"][0]}})
    assert wire.item("wi-1")["state"] == "submitted"
