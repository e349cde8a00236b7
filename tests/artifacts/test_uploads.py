"""``PUT /api/v1/artifacts/{digest}`` against a real uvicorn (wire.md §1, §4, §8).

Bytes are kept only under the digest they hash to (R13.1-01), outside every log (R13.1-02);
refusals come before the body is read where they can, and a refused or abandoned upload
leaves nothing behind: no blob, no upload row, no object, no spool.
"""

from __future__ import annotations

import os
import threading
import time

import httpx
import pytest

from apps.artifacts.models import Blob, Upload
from missionweave.protocol.canonical import sha256_digest
from tests.factories import World

from .helpers import (
    bearer,
    connect,
    error_of,
    eventually,
    put,
    raw_error,
    read_response,
    request_head,
)
from .servers import MAX_BYTES, ArtifactServer

pytestmark = pytest.mark.e2e


def _nothing_kept(server: ArtifactServer, digest: str) -> bool:
    return (
        not Blob.objects.filter(pk=digest).exists()
        and not Upload.objects.filter(blob_id=digest).exists()
        and not server.storage.exists(digest)
        and not server.spools()
    )


def test_upload_is_201_then_200_and_every_uploader_is_recorded(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """R13.1-01, R13.1-02, wire§4: stored under its digest outside the log: 201 the first
    time, 200 when already stored (this uploader is still recorded); one object."""
    data = os.urandom(200_000)
    digest = sha256_digest(data)

    first = put(http, fs_server, live_world.w1.token, data)
    again = put(http, fs_server, live_world.w1.token, data)
    other = put(http, fs_server, live_world.olga.token, data, content_type="text/plain")

    assert first.status_code == 201, first.text
    assert first.json() == {"digest": digest, "size": len(data)}
    assert (again.status_code, other.status_code) == (200, 200)
    assert Blob.objects.get(pk=digest).size == len(data)
    assert sorted(Upload.objects.filter(blob_id=digest).values_list("principal", flat=True)) == [
        live_world.w1.principal,
        live_world.olga.principal,
    ]
    stored = fs_server.storage.open(digest)
    assert stored is not None
    assert b"".join(stored.chunks()) == data
    stored.close()
    assert fs_server.spools() == []


def test_bytes_that_do_not_hash_to_the_digest_are_refused_422_and_not_kept(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """R13.1-01, wire§4: ARTIFACT_HASH_MISMATCH with both digests; nothing is kept."""
    data = os.urandom(100_000)
    claimed = sha256_digest(b"something else")

    error = error_of(
        put(http, fs_server, live_world.w1.token, data, digest=claimed),
        422,
        "ARTIFACT_HASH_MISMATCH",
    )

    assert error["details"] == {"expected": claimed, "actual": sha256_digest(data)}
    assert error["requirement"].startswith("R13.1")
    assert _nothing_kept(fs_server, claimed)
    assert _nothing_kept(fs_server, sha256_digest(data))


def test_a_declared_length_over_the_limit_is_refused_413_before_any_body(
    fs_server: ArtifactServer, live_world: World
) -> None:
    """wire§1, wire§8: Content-Length 2 GiB with no body sent is refused 413 TOO_LARGE at
    once: the server does not wait for a byte of the body, and closes the connection."""
    digest = sha256_digest(b"never sent")
    with connect(fs_server) as sock:
        started = time.monotonic()
        sock.sendall(
            request_head(
                "PUT",
                f"/api/v1/artifacts/{digest}",
                {
                    **bearer(live_world.w1.token),
                    "Content-Type": "application/octet-stream",
                    "Content-Length": "2147483648",
                },
            )
        )
        status, headers, body = read_response(sock, timeout_s=5)
        elapsed = time.monotonic() - started
        assert sock.recv(1) == b""  # closed: the unread body cannot be taken for a request

    assert status == 413
    assert elapsed < 2.0
    assert headers["connection"] == "close"
    assert raw_error(body, "TOO_LARGE")["details"] == {"limit": MAX_BYTES}
    assert _nothing_kept(fs_server, digest)


def test_an_upload_cut_off_half_way_leaves_nothing_behind(
    fs_server: ArtifactServer, live_world: World
) -> None:
    """R13.1-01: a client that disconnects mid-body leaves no blob, no upload row, no
    object and no spool: a body shorter than its Content-Length is never kept."""
    data = os.urandom(3 * 1024 * 1024)
    digest = sha256_digest(data)
    with connect(fs_server) as sock:
        sock.sendall(
            request_head(
                "PUT",
                f"/api/v1/artifacts/{digest}",
                {
                    **bearer(live_world.w1.token),
                    "Content-Type": "application/octet-stream",
                    "Content-Length": str(len(data)),
                },
            )
        )
        sock.sendall(data[: len(data) // 2])
        # The spool exists while the body is arriving...
        assert eventually(lambda: bool(fs_server.spools()), timeout_s=5)
    # ...and is gone once the server has seen the disconnect.
    assert eventually(lambda: _nothing_kept(fs_server, digest))


def test_a_chunked_body_over_the_limit_is_cut_at_the_limit(
    fs_server: ArtifactServer, live_world: World
) -> None:
    """wire§1: without a Content-Length the bytes are counted as they arrive: one past the
    limit is 413 TOO_LARGE, the spool is removed and nothing is kept.

    The body never ends (no last chunk is sent), so an answer at all proves the refusal came
    on the way. How much the client managed to send first is not asserted: loopback socket
    buffers (tcp_rmem reaches 32 MiB here) absorb megabytes while a loaded server catches up.
    """
    piece = os.urandom(64 * 1024)
    digest = sha256_digest(b"over the limit")
    sent = 0
    with connect(fs_server) as sock:
        sock.sendall(
            request_head(
                "PUT",
                f"/api/v1/artifacts/{digest}",
                {
                    **bearer(live_world.w1.token),
                    "Content-Type": "application/octet-stream",
                    "Transfer-Encoding": "chunked",
                },
            )
        )
        try:
            while sent <= 2 * MAX_BYTES:
                sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                sent += len(piece)
        except OSError:
            pass  # the server answered and closed while we were still sending
        status, headers, body = read_response(sock)

    assert status == 413
    assert headers["connection"] == "close"
    assert raw_error(body, "TOO_LARGE")["details"] == {"limit": MAX_BYTES}
    assert eventually(lambda: _nothing_kept(fs_server, digest))


def test_two_concurrent_uploads_of_one_digest_both_succeed_and_leave_one_object(
    fs_server: ArtifactServer, live_world: World
) -> None:
    """R13.1-01: the object is committed by an atomic rename, so both uploads succeed
    (one 201, one 200), both uploaders are recorded, and one object remains."""
    data = os.urandom(4 * 1024 * 1024)
    digest = sha256_digest(data)
    tokens = [live_world.w1.token, live_world.w2.token]
    barrier = threading.Barrier(len(tokens))
    statuses: list[int] = []

    def upload(token: str) -> None:
        with httpx.Client(timeout=30) as client:
            barrier.wait()
            statuses.append(put(client, fs_server, token, data).status_code)

    threads = [threading.Thread(target=upload, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses) == [200, 201]
    assert Blob.objects.filter(pk=digest).count() == 1
    assert Upload.objects.filter(blob_id=digest).count() == 2
    assert fs_server.storage.exists(digest)
    object_folder = fs_server.storage.path(digest).parent  # type: ignore[attr-defined]
    assert [path.name for path in object_folder.iterdir()] == [digest.removeprefix("sha256:")]
    assert fs_server.spools() == []


def test_no_token_is_401_before_the_body_is_read(
    fs_server: ArtifactServer, live_world: World
) -> None:
    """wire§4, wire§3: authentication comes first: headers announcing a body but no token
    are refused 401 UNAUTHENTICATED without the server waiting for the body; a small body
    sent after all is discarded and the connection serves the next request."""
    digest = sha256_digest(b"x" * 1000)
    with connect(fs_server) as sock:
        sock.sendall(
            request_head(
                "PUT",
                f"/api/v1/artifacts/{digest}",
                {"Content-Type": "application/octet-stream", "Content-Length": "1000"},
            )
        )
        status, headers, body = read_response(sock, timeout_s=5)
        # A small body is discarded by the server when it comes: the connection stays usable.
        sock.sendall(b"x" * 1000)
        sock.sendall(
            request_head("GET", f"/api/v1/artifacts/{digest}", bearer(live_world.w1.token))
        )
        next_status, _headers, next_body = read_response(sock, timeout_s=5)

    assert status == 401
    assert "connection" not in headers
    assert headers["www-authenticate"].startswith("Bearer")
    assert raw_error(body, "UNAUTHENTICATED")["requirement"] == "wire§4"
    assert next_status == 404
    raw_error(next_body, "NOT_FOUND")
    assert _nothing_kept(fs_server, digest)


def test_unknown_and_replaced_tokens_are_401(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """wire§4: an unknown token is UNAUTHENTICATED; a replaced session's is STALE_SESSION."""
    data = b"token check"
    error_of(put(http, fs_server, "sess_nonsense", data), 401, "UNAUTHENTICATED")
    old_token = live_world.w1.token
    live_world.w1.open_session()
    error_of(put(http, fs_server, old_token, data), 401, "STALE_SESSION")
    assert put(http, fs_server, live_world.w1.token, data).status_code == 201


def test_a_put_without_content_type_is_415_and_any_type_is_accepted(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """wire§1: a PUT without Content-Type is 415 UNSUPPORTED_MEDIA_TYPE; for artifacts any
    type will do."""
    data = b"typed bytes"
    error_of(
        put(http, fs_server, live_world.w1.token, data, content_type=None),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
    )
    assert not Blob.objects.filter(pk=sha256_digest(data)).exists()
    response = put(http, fs_server, live_world.w1.token, data, content_type="image/x-anything")
    assert response.status_code == 201


@pytest.mark.parametrize("method", ["POST", "DELETE", "PATCH"])
def test_other_methods_are_405(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client, method: str
) -> None:
    """wire§8: 405 METHOD_NOT_ALLOWED, in the error document, naming what is allowed."""
    response = http.request(
        method, fs_server.artifact_url(sha256_digest(b"m")), headers=bearer(live_world.w1.token)
    )
    error_of(response, 405, "METHOD_NOT_ALLOWED")
    assert response.headers["allow"] == "GET, HEAD, PUT"


@pytest.mark.parametrize(
    "tail",
    [
        "sha256:" + "A" * 64,  # uppercase hex
        "sha256:" + "a" * 63,
        "sha256:" + "a" * 65,
        "md5:" + "a" * 32,
        "a" * 64,
        "sha256:" + "a" * 64 + "/",  # trailing slash (wire.md §1)
        "",
        "sha256:" + "a" * 64 + "/more",
    ],
)
def test_a_malformed_digest_in_the_path_is_404(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client, tail: str
) -> None:
    """wire§1, wire§4: paths are exact; a path that names no digest is 404 NOT_FOUND."""
    for method in ("GET", "PUT"):
        response = http.request(
            method,
            f"{fs_server.url}/api/v1/artifacts/{tail}",
            content=b"x",
            headers={**bearer(live_world.w1.token), "Content-Type": "text/plain"},
        )
        error_of(response, 404, "NOT_FOUND")


def test_the_rest_of_the_api_is_still_served_by_django(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """wire§4: only /api/v1/artifacts/ is mounted ahead of Django; the collection path
    without a digest is Django's 404 in the same error shape."""
    assert http.get(f"{fs_server.url}/api/v1/authority").status_code == 200
    error_of(http.get(f"{fs_server.url}/api/v1/artifacts"), 404, "NOT_FOUND")
