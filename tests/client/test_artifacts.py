"""The agent client's artifacts against a real uvicorn serving the real API.

``upload`` hashes first and streams (wire.md §4, R13.1-01); ``download`` verifies the digest
as it receives and leaves nothing behind when the bytes are wrong, whether the authority
found its copy corrupted (409) or the bytes changed on the way (R13.1-05); ``publish`` builds
and signs the manifest the authority verifies (R13.1-03); ``submit_work`` sends the outputs
map with the evidence (R13.2-02, R13.2-03). Faults in transit are injected by a transport
that wraps the real one, so the server, its storage and the database are always the real ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apps.artifacts.storage import FilesystemStorage
from missionweave.client import AgentClient, ApiError, ArtifactMismatch, ClientError
from missionweave.client.artifacts import build_manifest, payload_of, signed_manifest
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.signing import document_signature_holds, generate_private_key
from tests.artifacts.servers import MAX_BYTES, ArtifactServer
from tests.factories import World, build_world, unique

from .scenario import ActiveItem, report_bytes, start_item, worker_evidence

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024
Rewrite = Callable[[httpx.Request, httpx.Response], httpx.Response]


@pytest.fixture
def live_world(transactional_db: None) -> World:
    """Committed, so the server process sees it (the live_server pattern)."""
    return build_world()


class Wrapping(httpx.BaseTransport):
    """The real HTTP transport with a hook on each answer to an artifact ``GET``."""

    def __init__(self, rewrite: Rewrite | None = None) -> None:
        self.inner = httpx.HTTPTransport()
        self.rewrite = rewrite
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = self.inner.handle_request(request)
        downloading = request.method == "GET" and "/artifacts/" in request.url.path
        if self.rewrite is None or not downloading or response.status_code != 200:
            return response
        response.read()
        return self.rewrite(request, response)

    def close(self) -> None:
        self.inner.close()

    def gets(self) -> int:
        return sum(1 for r in self.requests if r.method == "GET" and "/artifacts/" in r.url.path)


def flip_middle_byte(_request: httpx.Request, response: httpx.Response) -> httpx.Response:
    """A man in the middle: the same status, headers and length, one bit changed."""
    body = bytearray(response.content)
    body[len(body) // 2] ^= 0x01
    return httpx.Response(200, headers=response.headers, content=bytes(body))


class CutShort(httpx.SyncByteStream):
    """Half of the body, then the connection drops."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self.data[: len(self.data) // 2]
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")


def _client(server: ArtifactServer, world: World, agent: str = "w2", **kwargs: Any) -> AgentClient:
    persona = world.w1 if agent == "w1" else world.w2
    return AgentClient(
        server.url, agent, persona.key, sleep=lambda _s: None, agent_card_version="1", **kwargs
    )


def _unique_bytes(size: int = 4096) -> bytes:
    """Content no other test uploads (a corrupted object stays corrupted for the session)."""
    return os.urandom(size)


def _flip_stored_byte(server: ArtifactServer, digest: str, position: int) -> None:
    """Change one byte of the stored object in place, behind the server's back."""
    storage = server.storage
    assert isinstance(storage, FilesystemStorage)
    path = storage.path(digest)
    path.chmod(0o600)  # objects are stored read-only
    with path.open("r+b") as file:
        file.seek(position)
        original = file.read(1)[0]
        file.seek(position)
        file.write(bytes([original ^ 0xFF]))


def _events(client: AgentClient, group: str) -> list[dict[str, Any]]:
    return client.get_json(f"/groups/{group}/events", params={"after": 0, "limit": 1000})["events"]


def _published(client: AgentClient, group: str, digest: str) -> dict[str, Any]:
    return next(
        event["payload"]
        for event in _events(client, group)
        if event["type"] == "artifact.published"
        and event["payload"]["manifest"]["digest"] == digest
    )


# --- upload and download ----------------------------------------------------------------------


def test_upload_answers_the_digest_and_a_second_upload_is_harmless(
    artifact_server: ArtifactServer, live_world: World
) -> None:
    """wire.md §4, R13.1-01: the digest is the content's; storing it again (200) is success;
    a client that did not upload it learns its stored size from ``HEAD`` (for a manifest)."""
    data = _unique_bytes()
    with _client(artifact_server, live_world) as client:
        digest = client.upload(data)
        assert digest == sha256_digest(data)
        assert client.upload(data) == digest
        assert client.download(digest) == data
    with _client(artifact_server, live_world) as later:
        assert later.artifact_size(digest) == len(data)


def test_five_mib_file_streams_up_and_comes_back_verified_to_a_path(
    artifact_server: ArtifactServer, live_world: World, tmp_path: Path
) -> None:
    """wire.md §4, R13.1-05: a 5 MiB file is hashed, then streamed with its Content-Length
    (no chunked encoding, so the server can refuse an oversized one up front) through
    uvicorn; downloaded to a path it arrives whole, verified, with no temporary file left."""
    source = tmp_path / "source.bin"
    source.write_bytes(os.urandom(5 * MiB))
    target_dir = tmp_path / "downloads"
    target_dir.mkdir()
    recording = Wrapping()
    with _client(artifact_server, live_world, transport=recording) as client:
        digest = client.upload(source)
        path = client.download(digest, to=target_dir / "copy.bin")
        in_memory = client.download(digest)

    assert digest == sha256_digest(source.read_bytes())
    put = next(r for r in recording.requests if r.method == "PUT")
    assert put.headers["content-length"] == str(5 * MiB)
    assert "transfer-encoding" not in put.headers
    assert not isinstance(put.stream, httpx.ByteStream)  # sent as it was read, not in one piece
    assert path == target_dir / "copy.bin"
    assert path.read_bytes() == source.read_bytes()
    assert in_memory == source.read_bytes()
    assert sorted(p.name for p in target_dir.iterdir()) == ["copy.bin"]


def test_a_corrupted_stored_object_is_refused_409_and_nothing_is_written(
    artifact_server: ArtifactServer, live_world: World, tmp_path: Path
) -> None:
    """R13.1-05: the authority verifies before it sends; a stored object that no longer
    matches is 409 ARTIFACT_CORRUPTED, a typed refusal naming the digest, and the target
    path is never created."""
    data = _unique_bytes(200_000)  # beyond the server's in-memory bound: the streamed check
    with _client(artifact_server, live_world) as client:
        digest = client.upload(data)
        _flip_stored_byte(artifact_server, digest, 1234)

        with pytest.raises(ApiError) as refused:
            client.download(digest, to=tmp_path / "copy.bin")
        with pytest.raises(ApiError):
            client.download(digest)

    assert (refused.value.status, refused.value.code) == (409, "ARTIFACT_CORRUPTED")
    assert refused.value.requirement == "R13.1-05"
    assert refused.value.details == {"digest": digest}
    assert list(tmp_path.iterdir()) == []


def test_a_byte_flipped_in_transit_raises_and_leaves_no_file(
    artifact_server: ArtifactServer, live_world: World, tmp_path: Path
) -> None:
    """R13.1-05: the client hashes what it receives; bytes changed on the way raise
    ArtifactMismatch at once (a retry would not help), and neither the target nor a
    temporary file is left behind."""
    data = _unique_bytes(300_000)
    with _client(artifact_server, live_world) as uploader:
        digest = uploader.upload(data)
    tampering = Wrapping(flip_middle_byte)
    with _client(artifact_server, live_world, transport=tampering) as client:
        with pytest.raises(ArtifactMismatch) as mismatch:
            client.download(digest, to=tmp_path / "copy.bin")
        with pytest.raises(ArtifactMismatch):
            client.download(digest)

    assert mismatch.value.digest == digest
    assert mismatch.value.actual != digest
    assert mismatch.value.size == len(data)
    assert list(tmp_path.iterdir()) == []
    assert tampering.gets() == 2  # one attempt each: a mismatch is not retried


def test_a_download_cut_short_is_retried_from_the_start(
    artifact_server: ArtifactServer, live_world: World, tmp_path: Path
) -> None:
    """R13.1-05: half a body is not kept; the download starts again and the file that ends
    up at the target is the whole, verified artifact."""
    data = _unique_bytes(300_000)
    cuts = {"left": 1}

    def cut_once(_request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if cuts["left"]:
            cuts["left"] -= 1
            return httpx.Response(200, headers=response.headers, stream=CutShort(response.content))
        return httpx.Response(200, headers=response.headers, content=response.content)

    transport = Wrapping(cut_once)
    with _client(artifact_server, live_world, transport=transport) as client:
        digest = client.upload(data)
        path = client.download(digest, to=tmp_path / "copy.bin")

    assert path.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["copy.bin"]
    assert transport.gets() == 2


def test_an_artifact_this_agent_may_not_read_is_not_found(
    artifact_server: ArtifactServer, live_world: World
) -> None:
    """wire.md §4: another agent's upload that no log references is 404 NOT_FOUND, exactly
    like a digest never stored: existence is not revealed."""
    data = _unique_bytes()
    with _client(artifact_server, live_world, "w1") as owner:
        digest = owner.upload(data)
    with _client(artifact_server, live_world) as other:
        with pytest.raises(ApiError) as hidden:
            other.download(digest)
        with pytest.raises(ApiError) as never:
            other.download(sha256_digest(_unique_bytes()))

    assert (hidden.value.status, hidden.value.code) == (404, "NOT_FOUND")
    assert (never.value.status, never.value.code, never.value.message) == (
        404,
        "NOT_FOUND",
        hidden.value.message,
    )


def test_an_upload_over_the_limit_is_a_typed_refusal(
    artifact_server: ArtifactServer, live_world: World
) -> None:
    """wire.md §1, §8: past the authority's size limit the upload is 413 TOO_LARGE, raised
    as ApiError (never retried, never Unavailable)."""
    with _client(artifact_server, live_world) as client, pytest.raises(ApiError) as refused:
        client.upload(b"\0" * (MAX_BYTES + 1))

    assert (refused.value.status, refused.value.code) == (413, "TOO_LARGE")


def test_a_file_changed_after_hashing_is_not_sent_under_the_old_digest(tmp_path: Path) -> None:
    """R13.1-01: the digest in the URL names the bytes hashed; a file that changed since
    stops the upload instead of sending other bytes under that name."""
    source = tmp_path / "report.json"
    source.write_bytes(b'{"status": "draft"}')
    payload = payload_of(source)
    source.write_bytes(b'{"status": "final, and longer"}')

    with pytest.raises(ClientError, match="changed while it was being uploaded"):
        b"".join(payload.chunks())
    with pytest.raises(TypeError):
        payload_of("report.json")  # type: ignore[arg-type]  # content or a path? refused


# --- publish and submit -----------------------------------------------------------------------


@pytest.fixture
def worker(artifact_server: ArtifactServer, live_world: World) -> Iterator[AgentClient]:
    """w2's client; its session holds the lease of ``active`` (another would revoke it)."""
    with _client(artifact_server, live_world) as client:
        yield client


@pytest.fixture
def active(artifact_server: ArtifactServer, live_world: World, worker: AgentClient) -> ActiveItem:
    """A WorkItem ``worker`` has started."""
    with _client(artifact_server, live_world, "w1") as coordinator:
        return start_item(coordinator, worker, live_world.group)


def test_publish_signs_the_manifest_and_the_authority_verifies_it(
    worker: AgentClient, live_world: World, active: ActiveItem
) -> None:
    """R13.1-03: the manifest carries every wire.md §9 field — digest and size of the
    stored bytes, producer with its Agent Card version, mission and work item, sources,
    tool versions, creation time, classification, uri — signed with the producer's key;
    the authority checks that signature and records it as the producer's (``signed_by``)."""
    report = worker.upload(report_bytes(), content_type="application/json")

    result = worker.publish(
        active.group,
        active.work_item,
        active.lease_id,
        digest=report,
        media_type="application/json",
        schema="urn:example:report/1",
        sources=[active.input_digest],
        tool_versions={"summariser": "2.1"},
        classification="confidential",
    )

    assert [e["type"] for e in result.events] == ["artifact.published"]
    payload = _published(worker, active.group, report)
    manifest = payload["manifest"]
    assert payload["signed_by"] == "agent:w2"
    assert document_signature_holds(live_world.w2.key.public_key(), manifest)
    assert {k: v for k, v in manifest.items() if k not in ("created_at", "signature")} == {
        "digest": report,
        "media_type": "application/json",
        "schema": "urn:example:report/1",
        "producer": {
            "agent": "agent:w2",
            "version": worker.software_version,
            "agent_card_version": "1",
        },
        "mission": active.mission,
        "work_item": active.work_item,
        "sources": [active.input_digest],
        "tool_versions": {"summariser": "2.1"},
        "classification": "confidential",
        "size": len(report_bytes()),
        "uri": f"/api/v1/artifacts/{report}",
    }
    assert worker.software_version.startswith("missionweave-client/")


def test_a_manifest_signed_by_another_key_is_refused(
    worker: AgentClient, live_world: World, active: ActiveItem
) -> None:
    """R13.1-03: the authority verifies the producer's signature; one made with a key that
    is not the sender's is 401 INVALID_SIGNATURE and nothing is recorded."""
    report = worker.upload(report_bytes(), content_type="application/json")
    manifest = build_manifest(
        digest=report,
        size=len(report_bytes()),
        media_type="application/json",
        schema=None,
        producer="agent:w2",
        version="forger/1",
        agent_card_version="1",
        mission=active.mission,
        work_item=active.work_item,
        sources=[],
        tool_versions={},
        created_at="2026-12-01T10:00:00Z",
        classification="internal",
    )
    body = {
        "work_item": active.work_item,
        "lease_id": active.lease_id,
        "manifest": signed_manifest(generate_private_key(), manifest),  # not w2's key
    }

    with pytest.raises(ApiError) as refused:
        worker.submit(active.group, "artifact.publish", body)

    assert (refused.value.status, refused.value.code) == (401, "INVALID_SIGNATURE")
    assert refused.value.details == {"path": "$.manifest.signature"}
    assert not any(e["type"] == "artifact.published" for e in _events(worker, active.group))


def test_an_unsigned_manifest_is_signed_by_the_authority(
    worker: AgentClient, live_world: World, active: ActiveItem
) -> None:
    """R13.1-03: every recorded manifest is signed; without the producer's signature the
    authority signs it with its own key, and says so."""
    report = worker.upload(report_bytes(), content_type="application/json")

    worker.publish(
        active.group,
        active.work_item,
        active.lease_id,
        digest=report,
        media_type="application/json",
        sign=False,
    )

    payload = _published(worker, active.group, report)
    assert payload["signed_by"] == "authority"
    assert document_signature_holds(worker.authority_key(), payload["manifest"])
    assert payload["manifest"]["mission"] == active.mission  # read from the WorkItem


def test_publish_needs_the_agent_card_version(
    artifact_server: ArtifactServer, live_world: World
) -> None:
    """R13.1-03: the manifest names the producer's Agent Card version; a client that does not
    know it refuses to publish rather than send a manifest the authority would refuse."""
    client = AgentClient(artifact_server.url, "w2", live_world.w2.key)
    with client, pytest.raises(ClientError, match="Agent Card version"):
        client.publish(
            live_world.group,
            "wi-x",
            "lease-x",
            digest=sha256_digest(b"x"),
            media_type="text/plain",
            mission="m-x",
            size=1,
        )


def test_submit_work_sends_outputs_and_evidence(
    worker: AgentClient, live_world: World, active: ActiveItem
) -> None:
    """R13.2-02, R13.2-03: the submission names which artifact is which declared output;
    the authority validates the output against the contract's schema and records it."""
    report = worker.upload(report_bytes(), content_type="application/json")

    result = worker.submit_work(
        active.group,
        active.work_item,
        active.lease_id,
        outputs={"report": report},
        evidence=worker_evidence(report),
    )

    assert result.status == 201
    assert [e["type"] for e in result.events] == ["work.submitted"]
    item = worker.get_json(f"/groups/{active.group}/work-items/{active.work_item}")
    assert item["state"] == "submitted"
    submitted = next(
        e["payload"] for e in _events(worker, active.group) if e["type"] == "work.submitted"
    )
    assert submitted["outputs"] == {"report": report}
    assert submitted["artifacts"] == [report]
    assert {e["producer"] for e in submitted["evidence"]} == {"agent:w2"}


def test_an_output_that_fails_its_schema_is_refused(
    worker: AgentClient, live_world: World, active: ActiveItem
) -> None:
    """R13.2-03 step 1: an output declared with an inline schema is validated before
    anything is appended; a report that does not match is 400 MALFORMED naming the output."""
    bad = report_bytes({"status": "complete", "coverage": "most", "findings": []})
    report = worker.upload(bad, content_type="application/json")

    with pytest.raises(ApiError) as refused:
        worker.submit_work(
            active.group,
            active.work_item,
            active.lease_id,
            outputs={"report": report},
            evidence=worker_evidence(report),
        )

    assert (refused.value.status, refused.value.code) == (400, "MALFORMED")
    assert refused.value.details["output"] == "report"
    assert refused.value.details["path"] == "$.coverage"
    item = worker.get_json(f"/groups/{active.group}/work-items/{active.work_item}")
    assert item["state"] == "active"


def test_a_digest_nobody_in_the_group_uploaded_cannot_be_submitted(
    worker: AgentClient, live_world: World, active: ActiveItem
) -> None:
    """wire.md §9, "A digest is not a key": a digest the group's log does not cite and the
    sender did not upload is refused like one never stored (404 NOT_FOUND with the digest)."""
    unknown = sha256_digest(unique("never-uploaded").encode())

    with pytest.raises(ApiError) as refused:
        worker.submit_work(
            active.group,
            active.work_item,
            active.lease_id,
            outputs={"report": unknown},
            evidence=worker_evidence(unknown),
        )

    assert (refused.value.status, refused.value.code) == (404, "NOT_FOUND")
    assert refused.value.details["digest"] == unknown
