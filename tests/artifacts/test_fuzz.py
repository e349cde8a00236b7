"""No input, however malformed, produces a 5xx at the artifact endpoints (wire.md §8), under
uvicorn (the streaming server) and daphne (the demo's, which buffers bodies)."""

from __future__ import annotations

import os
import string

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from missionweave.protocol.canonical import sha256_digest
from tests.factories import World

from .helpers import bearer, error_of, get, put
from .servers import ArtifactServer

pytestmark = pytest.mark.e2e

PRINTABLE = st.text(alphabet=string.printable.strip() + " ", max_size=80)
STORED = b"fuzzed artifact"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=st.sampled_from(["GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"]),
    tail=st.one_of(st.just(sha256_digest(STORED)), PRINTABLE),
    token=st.one_of(st.none(), st.just("valid"), PRINTABLE),
    content_type=st.one_of(st.none(), PRINTABLE),
    range_=st.one_of(
        st.none(), PRINTABLE, st.from_regex(r"bytes=[0-9]{0,25}-[0-9]{0,25}", fullmatch=True)
    ),
    if_none_match=st.one_of(st.none(), PRINTABLE),
    body=st.binary(max_size=2000),
)
def test_no_request_is_answered_with_a_5xx(
    fs_server: ArtifactServer,
    live_world: World,
    http: httpx.Client,
    method: str,
    tail: str,
    token: str | None,
    content_type: str | None,
    range_: str | None,
    if_none_match: str | None,
    body: bytes,
) -> None:
    """wire§8: random methods, paths, tokens and headers are judged, never a 5xx, and every
    refusal is the error document."""
    headers: dict[str, str] = {}
    if token is not None:
        headers.update(bearer(live_world.w2.token if token == "valid" else token.strip() or "x"))
    for name, value in (
        ("Content-Type", content_type),
        ("Range", range_),
        ("If-None-Match", if_none_match),
    ):
        if value is not None and value.strip():
            headers[name] = value.strip()
    response = http.request(
        method,
        f"{fs_server.url}/api/v1/artifacts/{tail}",
        headers=headers,
        content=body if method in {"PUT", "POST"} else None,
    )
    assert response.status_code < 500, response.text
    if response.status_code >= 400 and method != "HEAD":
        assert set(response.json()["error"]) == {"code", "message", "requirement", "details"}


def test_the_artifact_endpoints_work_under_daphne_too(
    daphne_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """R13.1-01, R13.1-05: daphne reads the whole body before the application runs, so
    uploads do not stream there, but they store, refuse and read back the same way."""
    data = os.urandom(300_000)
    digest = sha256_digest(data)
    assert put(http, daphne_server, live_world.w2.token, data).status_code == 201
    assert get(http, daphne_server, live_world.w2.token, digest).content == data
    error_of(
        put(http, daphne_server, live_world.w2.token, b"x", digest=digest + "0"), 404, "NOT_FOUND"
    )
    error_of(
        put(http, daphne_server, live_world.w2.token, b"y", digest=sha256_digest(b"z")),
        422,
        "ARTIFACT_HASH_MISMATCH",
    )
