"""Every route that sends an artifact's raw bytes sends them as an attachment that is never
sniffed and never runs (``apps.artifacts.raw_headers``), on ``GET``, ``HEAD``, a range
request and a revalidation, for an object verified in memory and one streamed.

The two routes, against one real uvicorn: the API's ``/api/v1/artifacts/{digest}`` (answered
ahead of Django's middleware, ``apps.artifacts.asgi``) with w2's bearer token, and the
dashboard's ``/groups/{g}/artifacts/{digest}/raw/`` with maria's session cookie.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import Client

from apps.artifacts.raw_headers import RAW_CSP, download_name, raw_headers
from tests.dashboard.artifact_world import workshop
from tests.factories import build_world, grant, human
from tests.live_server import LiveServer, session_server

pytestmark = pytest.mark.e2e

#: objects up to this size are verified in memory by the server; larger ones are streamed
IN_MEMORY_BYTES = 64 * 1024
SIZES = [10_000, 3 * IN_MEMORY_BYTES + 17]


@pytest.fixture(scope="module")
def server(django_db_setup: None, worker_id: str) -> Iterator[LiveServer]:
    env = {"MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES": str(IN_MEMORY_BYTES)}
    with session_server(worker_id, server="uvicorn", extra_env=env) as live:
        yield live


@dataclass(frozen=True)
class Route:
    name: str
    url: str
    headers: dict[str, str]
    #: whether the route serves a single byte range (206); one that does not sends it all
    ranges: bool


@dataclass(frozen=True)
class Published:
    digest: str
    data: bytes
    routes: list[Route]


@pytest.fixture(params=SIZES, ids=["in-memory", "streamed"])
def published(
    request: pytest.FixtureRequest, transactional_db: None, server: LiveServer
) -> Published:
    """Bytes w2 uploaded and published in the group's log, which maria observes."""
    world = build_world()
    maria = human("maria")
    grant(world.alice, world.group, maria, "observer")
    data = os.urandom(request.param)
    digest = workshop(world).publish(data, "application/octet-stream")
    browser = Client()
    browser.force_login(get_user_model().objects.get(username=maria.username))
    session = browser.cookies[django_settings.SESSION_COOKIE_NAME].value
    return Published(
        digest,
        data,
        [
            Route(
                "api",
                f"{server.url}/api/v1/artifacts/{digest}",
                {"Authorization": f"Bearer {world.w2.token}"},
                ranges=True,
            ),
            Route(
                "dashboard",
                f"{server.url}/groups/{world.group}/artifacts/{digest}/raw/",
                {"Cookie": f"{django_settings.SESSION_COOKIE_NAME}={session}"},
                ranges=False,
            ),
        ],
    )


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def assert_raw_headers(response: httpx.Response, digest: str) -> None:
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"] == RAW_CSP
    assert response.headers["content-disposition"] == (
        f'attachment; filename="{digest.removeprefix("sha256:")[:16]}.bin"'
    )


def test_get_sends_the_bytes_as_a_sandboxed_attachment_on_every_route(
    published: Published, http: httpx.Client
) -> None:
    for route in published.routes:
        response = http.get(route.url, headers=route.headers)
        assert response.status_code == 200, route.name
        assert response.content == published.data, route.name
        assert_raw_headers(response, published.digest)


def test_head_sends_the_same_headers_without_the_bytes_on_every_route(
    published: Published, http: httpx.Client
) -> None:
    for route in published.routes:
        response = http.head(route.url, headers=route.headers)
        assert response.status_code == 200, route.name
        assert response.content == b"", route.name
        assert response.headers["content-length"] == str(len(published.data)), route.name
        assert_raw_headers(response, published.digest)


def test_a_range_request_keeps_the_headers_on_every_route(
    published: Published, http: httpx.Client
) -> None:
    """The API serves the range (206); the dashboard, which serves no ranges, sends the whole
    object (RFC 9110 §14.2 allows ignoring ``Range``): both under the same headers."""
    size = len(published.data)
    for route in published.routes:
        response = http.get(route.url, headers={**route.headers, "Range": "bytes=100-1099"})
        if route.ranges:
            assert response.status_code == 206, route.name
            assert response.content == published.data[100:1100]
            assert response.headers["content-range"] == f"bytes 100-1099/{size}"
        else:
            assert response.status_code == 200, route.name
            assert response.content == published.data
        assert_raw_headers(response, published.digest)


def test_the_api_keeps_its_etag_and_a_revalidation_keeps_the_headers(
    published: Published, http: httpx.Client
) -> None:
    api = next(route for route in published.routes if route.name == "api")
    first = http.get(api.url, headers=api.headers)
    assert first.headers["etag"] == f'"{published.digest}"'
    again = http.get(api.url, headers={**api.headers, "If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""
    assert_raw_headers(again, published.digest)


def test_the_middleware_policy_does_not_replace_the_raw_one(
    published: Published, http: httpx.Client
) -> None:
    """Django's CSP middleware adds the dashboard's policy only where a response has none:
    the dashboard's raw route keeps the closed one (one header, not two)."""
    dashboard = next(route for route in published.routes if route.name == "dashboard")
    response = http.get(dashboard.url, headers=dashboard.headers)
    assert response.headers.get_list("content-security-policy") == [RAW_CSP]


def test_a_download_name_is_made_of_the_digests_hex_digits_only() -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    assert download_name(digest) == "0123456789abcdef.bin"
    assert download_name(digest, ".md") == "0123456789abcdef.md"


def test_a_name_ascii_cannot_spell_is_sent_as_rfc_6266_filename_star() -> None:
    headers = dict(raw_headers("résumé 1.txt"))
    assert headers["content-disposition"] == "attachment; filename*=utf-8''r%C3%A9sum%C3%A9%201.txt"
    headers = dict(raw_headers('a"b.txt'))
    assert headers["content-disposition"] == 'attachment; filename="a\\"b.txt"'
