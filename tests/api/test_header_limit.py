"""Too many or too large headers are refused before anything reads them (issue 16 §3, wire.md
§1), under uvicorn, whose parser itself sets no limit.

Raw sockets, since no client library sends 101 header fields: under ``/api/`` the answer is
the wire.md §8 document, in the dashboard the styled "Bad request" page, for a websocket a
refused handshake; at the limits, the request is served.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from django.conf import settings
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as websocket_connect

from tests.artifacts.helpers import read_response
from tests.factories import World
from tests.live_server import LiveServer, uvicorn_server

from .raw_http import connect, request_head, response_of

__all__ = ["uvicorn_server"]

pytestmark = pytest.mark.django_db(transaction=True)


def _fields(count: int) -> dict[str, str]:
    """``count`` header fields in all, with the ``Host`` the request line adds."""
    return {f"X-Field-{n}": "v" for n in range(count - 1)}


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(_fields(settings.MWP_MAX_HEADER_FIELDS + 1), id="one field too many"),
        pytest.param({"X-Large": "a" * settings.MWP_MAX_HEADER_BYTES}, id="too many bytes"),
    ],
)
def test_over_the_limits_under_api_is_400_malformed_and_closed(
    uvicorn_server: LiveServer, world: World, headers: dict[str, str]
) -> None:
    with connect(uvicorn_server) as sock:
        sock.sendall(request_head("/api/v1/authority", headers, method="GET"))
        status, response_headers, body = response_of(sock)
    assert status == 400
    assert body["error"]["code"] == "MALFORMED"
    assert body["error"]["requirement"] == "wire§1"
    assert "header" in body["error"]["message"]
    assert response_headers.get("connection") == "close"


def test_at_the_limits_the_request_is_served(uvicorn_server: LiveServer, world: World) -> None:
    fields = _fields(settings.MWP_MAX_HEADER_FIELDS)
    with connect(uvicorn_server) as sock:
        sock.sendall(request_head("/api/v1/authority", fields, method="GET"))
        status, _, body = response_of(sock)
    assert status == 200
    assert body["protocol"] == "mwp/1"


def test_over_the_limits_in_the_dashboard_is_the_styled_page(
    uvicorn_server: LiveServer, world: World
) -> None:
    """issue 16 §3: the dashboard's "Bad request" page, its styles in the page itself."""
    fields = _fields(settings.MWP_MAX_HEADER_FIELDS + 1)
    with connect(uvicorn_server) as sock:
        sock.sendall(request_head("/", fields, method="GET"))
        status, headers, body = read_response(sock)
    assert status == 400
    assert headers["content-type"].startswith("text/html")
    page = body.decode()
    assert "Bad request" in page
    assert f"more than {settings.MWP_MAX_HEADER_FIELDS} header fields" in page
    # styled inline: the browser would send its stylesheet requests with the same headers
    assert "<style>" in page
    assert ".topbar" in page
    assert 'rel="stylesheet"' not in page
    # the dashboard's policy, its one inline stylesheet allowed by that sheet's hash alone
    styles = page.split("<style>", 1)[1].split("</style>", 1)[0].encode()
    sheet_hash = base64.b64encode(hashlib.sha256(styles).digest()).decode()
    assert headers["content-security-policy"] == (
        f"default-src 'self'; style-src 'sha256-{sheet_hash}'; object-src 'none'; "
        "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )


def test_an_over_burdened_websocket_handshake_is_refused(
    uvicorn_server: LiveServer, world: World
) -> None:
    headers = {"Authorization": f"Bearer {world.w1.token}", **_fields(100)}
    with pytest.raises(InvalidStatus) as refused:
        websocket_connect(f"{uvicorn_server.ws_url}/ws/v1/stream", additional_headers=headers)
    assert refused.value.response.status_code == 403
