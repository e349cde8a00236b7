"""``GET``/``HEAD /api/v1/artifacts/{digest}`` against a real uvicorn (wire.md §4, R13.1-05):
the verified bytes with the headers an immutable, content-addressed object deserves, one
byte range, and conditional requests.
"""

from __future__ import annotations

import os

import httpx
import pytest

from missionweave.protocol.canonical import sha256_digest
from tests.factories import World

from .helpers import bearer, error_of, get, put
from .servers import IN_MEMORY_BYTES, ArtifactServer

pytestmark = pytest.mark.e2e

# One object read into memory to verify, one verified in a first pass and streamed in a
# second, across several 1 MiB chunks.
SIZES = [10_000, 3 * 1024 * 1024 + 17]


@pytest.fixture(params=SIZES, ids=["in-memory", "streamed"])
def stored(
    request: pytest.FixtureRequest,
    fs_server: ArtifactServer,
    live_world: World,
    http: httpx.Client,
) -> tuple[str, bytes]:
    data = os.urandom(request.param)
    assert (len(data) > IN_MEMORY_BYTES) == (request.param == SIZES[1])
    assert put(http, fs_server, live_world.w2.token, data).status_code == 201
    return sha256_digest(data), data


def test_get_sends_the_verified_bytes_with_immutable_cache_headers(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client, stored: tuple[str, bytes]
) -> None:
    """R13.1-05, R13.1-01, wire§4: the bytes, an ETag that is the digest, cacheable for a
    year by this client only (access depends on who asks)."""
    digest, data = stored
    response = get(http, fs_server, live_world.w2.token, digest)

    assert response.status_code == 200
    assert response.content == data
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["content-length"] == str(len(data))
    assert response.headers["etag"] == f'"{digest}"'
    assert response.headers["accept-ranges"] == "bytes"
    assert response.headers["cache-control"] == "private, max-age=31536000, immutable"


def test_head_answers_like_get_without_the_bytes(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client, stored: tuple[str, bytes]
) -> None:
    """wire§4: HEAD has GET's status and headers and no body."""
    digest, data = stored
    response = http.head(fs_server.artifact_url(digest), headers=bearer(live_world.w2.token))
    assert response.status_code == 200
    assert response.headers["content-length"] == str(len(data))
    assert response.content == b""


@pytest.mark.parametrize(
    "header", ['"{digest}"', 'W/"{digest}"', '"sha256:other", "{digest}"', "*"]
)
def test_if_none_match_with_the_digest_is_304_without_a_body(
    fs_server: ArtifactServer,
    live_world: World,
    http: httpx.Client,
    stored: tuple[str, bytes],
    header: str,
) -> None:
    """wire§4: a client holding the bytes of a digest holds the right bytes: 304."""
    digest, _data = stored
    response = get(
        http, fs_server, live_world.w2.token, digest, if_none_match=header.format(digest=digest)
    )
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == f'"{digest}"'


def test_if_none_match_with_another_etag_sends_the_bytes(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client, stored: tuple[str, bytes]
) -> None:
    digest, data = stored
    response = get(http, fs_server, live_world.w2.token, digest, if_none_match='"sha256:x"')
    assert response.status_code == 200
    assert response.content == data


def test_one_byte_range_is_206_with_its_content_range(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client, stored: tuple[str, bytes]
) -> None:
    """wire§4, R13.1-05: ``a-b``, ``a-`` and ``-n`` each send exactly their bytes (the whole
    object was verified first)."""
    digest, data = stored
    size = len(data)
    cases = {
        "bytes=0-0": (0, 1),
        "bytes=10-1999": (10, 2000),
        f"bytes={size - 5}-": (size - 5, size),
        "bytes=-7": (size - 7, size),
        f"bytes=100-{size * 2}": (100, size),  # the end is clamped
        "bytes=-99999999999": (0, size),
    }
    if size > 2 * 1024 * 1024:
        cases[f"bytes=1048570-{1048576 + 10}"] = (1048570, 1048587)  # across a chunk boundary
    for header, (start, stop) in cases.items():
        response = get(http, fs_server, live_world.w2.token, digest, range=header)
        assert response.status_code == 206, header
        assert response.content == data[start:stop], header
        assert response.headers["content-range"] == f"bytes {start}-{stop - 1}/{size}", header
        assert response.headers["content-length"] == str(stop - start)


@pytest.mark.parametrize("header", ["bytes={size}-", "bytes={size}-{size}", "bytes=-0"])
def test_an_unsatisfiable_range_is_416_with_the_size(
    fs_server: ArtifactServer,
    live_world: World,
    http: httpx.Client,
    stored: tuple[str, bytes],
    header: str,
) -> None:
    """wire§4, wire§8: 416 with ``Content-Range: bytes */size`` and the error document."""
    digest, data = stored
    response = get(
        http, fs_server, live_world.w2.token, digest, range=header.format(size=len(data))
    )
    error = error_of(response, 416, "MALFORMED")
    assert error["requirement"] == "wire§4"
    assert response.headers["content-range"] == f"bytes */{len(data)}"


@pytest.mark.parametrize(
    "header", ["bytes=0-1,5-9", "items=0-1", "bytes=9-3", "bytes=x-", "bytes=-", "bytes=1"]
)
def test_a_range_not_served_is_ignored_and_the_whole_object_sent(
    fs_server: ArtifactServer,
    live_world: World,
    http: httpx.Client,
    stored: tuple[str, bytes],
    header: str,
) -> None:
    """RFC 9110 §14.2: several ranges, another unit or a malformed range: 200, all bytes."""
    digest, data = stored
    response = get(http, fs_server, live_world.w2.token, digest, range=header)
    assert response.status_code == 200
    assert response.content == data


def test_get_without_a_token_is_401_and_an_unknown_digest_404(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """wire§4: authentication first; then a digest never stored is 404 NOT_FOUND."""
    digest = sha256_digest(b"never stored")
    error_of(http.get(fs_server.artifact_url(digest)), 401, "UNAUTHENTICATED")
    error = error_of(get(http, fs_server, live_world.w1.token, digest), 404, "NOT_FOUND")
    assert error["details"] == {"digest": digest}
