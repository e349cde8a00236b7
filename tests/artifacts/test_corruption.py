"""Reads are verified against the digest before a byte is sent (R13.1-05), on the filesystem
and in S3 (a real moto_server), through a real uvicorn.

Damage is done to the stored object behind the server's back — a flipped byte in the file
or an object overwritten in the bucket — and every read must then be 409
``ARTIFACT_CORRUPTED`` whose body is exactly the error document (so no byte of the object
was sent), with the corruption reported for admins; an upload of the right bytes repairs it.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.artifacts.models import Blob, CorruptionReport
from apps.artifacts.storage import FilesystemStorage, S3Storage
from missionweave.protocol.canonical import sha256_digest
from tests.factories import World

from .helpers import bearer, error_of, get, put
from .servers import IN_MEMORY_BYTES, ArtifactServer, MotoServer

pytestmark = pytest.mark.e2e

PROPERTY = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def flip_byte(server: ArtifactServer, digest: str, position: int, mask: int) -> None:
    """Change one byte of the stored object in place, behind the server's back."""
    storage = server.storage
    if isinstance(storage, FilesystemStorage):
        path = storage.path(digest)
        path.chmod(0o600)  # objects are stored read-only
        with path.open("r+b") as file:
            file.seek(position)
            original = file.read(1)[0]
            file.seek(position)
            file.write(bytes([original ^ mask]))
        return
    assert isinstance(storage, S3Storage)
    client: Any = storage._client()  # the test reaches into the bucket directly
    key = "sha256/" + digest.removeprefix("sha256:")
    data = bytearray(client.get_object(Bucket=storage.bucket, Key=key)["Body"].read())
    data[position] ^= mask
    client.put_object(Bucket=storage.bucket, Key=key, Body=bytes(data))


def assert_corrupted(response: httpx.Response, digest: str) -> None:
    """409 ARTIFACT_CORRUPTED whose body is exactly the error document: nothing else,
    so not a byte of the object, was sent."""
    error = error_of(response, 409, "ARTIFACT_CORRUPTED")
    assert error["requirement"] == "R13.1-05"
    assert error["details"] == {"digest": digest}
    assert int(response.headers["content-length"]) == len(response.content)
    assert "content-range" not in response.headers
    assert "etag" not in response.headers


def _corruption_is_always_refused(
    server: ArtifactServer, world: World, http: httpx.Client, data: bytes, where: Any
) -> None:
    digest = sha256_digest(data)
    assert put(http, server, world.w2.token, data).status_code in {200, 201}
    assert get(http, server, world.w2.token, digest).content == data
    position = where.draw(st.integers(0, len(data) - 1), label="position")
    mask = where.draw(st.integers(1, 255), label="mask")
    start = where.draw(st.integers(0, len(data) - 1), label="range start")
    stop = where.draw(st.integers(start, len(data) - 1), label="range end")

    flip_byte(server, digest, position, mask)

    for headers in ({}, {"range": f"bytes={start}-{stop}"}, {"range": "bytes=-1"}):
        assert_corrupted(get(http, server, world.w2.token, digest, **headers), digest)
    head = http.head(server.artifact_url(digest), headers=bearer(world.w2.token))
    assert head.status_code == 409
    report = CorruptionReport.objects.get(digest=digest, resolved_at__isnull=True)
    assert report.location == server.storage.kind
    assert report.count == 4
    assert report.actual.startswith("sha256:")
    assert report.actual != digest
    assert world.w2.principal in report.request
    assert Blob.objects.get(pk=digest).corrupted_at is not None


# Sizes on both sides of the in-memory limit: hashed in memory, and hashed in a first pass
# then streamed in a second.
CONTENT = st.one_of(
    st.binary(min_size=1, max_size=IN_MEMORY_BYTES),
    st.integers(IN_MEMORY_BYTES + 1, 3 * IN_MEMORY_BYTES).map(os.urandom),
)


@PROPERTY
@given(data=CONTENT, where=st.data())
def test_any_flipped_byte_on_the_filesystem_makes_every_read_409(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client, data: bytes, where: Any
) -> None:
    """R13.1-05: flip any byte of an object on disk: GET, a Range GET and HEAD are all 409
    ARTIFACT_CORRUPTED, no byte of the object is sent, and one open CorruptionReport counts
    the detections."""
    _corruption_is_always_refused(fs_server, live_world, http, data, where)


@PROPERTY
@given(data=CONTENT, where=st.data())
def test_any_flipped_byte_in_s3_makes_every_read_409(
    s3_server: ArtifactServer, live_world: World, http: httpx.Client, data: bytes, where: Any
) -> None:
    """R13.1-05, R13.1-06: the same for an object in an S3 bucket (moto_server) overwritten
    under its key: the key still answers, but a mutable location is not the artifact."""
    _corruption_is_always_refused(s3_server, live_world, http, data, where)


@pytest.mark.parametrize("backend", ["fs_server", "s3_server"])
def test_a_missing_object_is_409_not_5xx_and_an_upload_repairs_it(
    request: pytest.FixtureRequest, live_world: World, http: httpx.Client, backend: str
) -> None:
    """R13.1-05, wire§8: a blob whose object is gone is 409 ARTIFACT_CORRUPTED (never a 5xx);
    an upload of the right bytes stores it again (200: the blob was known), resolves the
    report and reads verify again."""
    server: ArtifactServer = request.getfixturevalue(backend)
    data = os.urandom(IN_MEMORY_BYTES * 2)
    digest = sha256_digest(data)
    assert put(http, server, live_world.w2.token, data).status_code == 201
    server.storage.delete(digest)

    assert_corrupted(get(http, server, live_world.w2.token, digest), digest)
    report = CorruptionReport.objects.get(digest=digest)
    assert (report.actual, report.resolved_at) == ("", None)

    assert put(http, server, live_world.w2.token, data).status_code == 200
    assert get(http, server, live_world.w2.token, digest).content == data
    report.refresh_from_db()
    assert report.resolved_at is not None
    assert Blob.objects.get(pk=digest).corrupted_at is None


def test_a_corrupted_object_is_repaired_by_an_upload_of_the_right_bytes(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """R13.1-05, R13.1-01: the upload replaces the damaged object atomically."""
    data = os.urandom(1000)
    digest = sha256_digest(data)
    put(http, fs_server, live_world.w2.token, data)
    flip_byte(fs_server, digest, 10, 0xFF)
    assert_corrupted(get(http, fs_server, live_world.w2.token, digest), digest)

    assert put(http, fs_server, live_world.w1.token, data).status_code == 200

    assert get(http, fs_server, live_world.w2.token, digest).content == data
    assert not CorruptionReport.objects.filter(digest=digest, resolved_at__isnull=True).exists()


def test_reads_from_s3_stream_the_verified_bytes(
    s3_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """R13.1-02, R13.1-05: an S3-backed object round-trips, whole and by range."""
    data = os.urandom(3 * 1024 * 1024 + 5)
    digest = sha256_digest(data)
    assert put(http, s3_server, live_world.w2.token, data).status_code == 201
    assert get(http, s3_server, live_world.w2.token, digest).content == data
    ranged = get(http, s3_server, live_world.w2.token, digest, range="bytes=1048000-2100000")
    assert ranged.status_code == 206
    assert ranged.content == data[1048000:2100001]
    assert s3_server.spools() == []


def test_the_moto_server_is_a_real_s3_endpoint(moto_server: MotoServer) -> None:
    """The S3 tests talk HTTP to a separate process, not to an in-process mock."""
    assert httpx.get(moto_server.endpoint_url).status_code == 200
