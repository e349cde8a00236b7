"""The API's other endpoints judged from their headers before the body is read (issue 16 §1,
wire.md §3 step 1, §1 size limits), under uvicorn, which hands bodies over as they arrive.

Raw sockets: each refusal must come back while the client has sent the headers and not a
byte of the body (``apps.api.body_guard``). What passes reaches Django whole.
"""

from __future__ import annotations

import json

import pytest

from apps.registry.models import Organization
from tests.factories import World
from tests.live_server import LiveServer, uvicorn_server

from .raw_http import chunked, connect, flood_chunks, json_from, request_head, response_of

__all__ = ["uvicorn_server"]

pytestmark = pytest.mark.django_db(transaction=True)

MIB = 1024 * 1024
#: endpoints Django answers, each needing a bearer token
GUARDED = [
    ("POST", "/api/v1/capabilities:check"),
    ("POST", "/api/v1/organizations"),
    ("POST", "/api/v1/groups/g-research/memberships"),
    ("DELETE", "/api/v1/groups/g-research/memberships/agent:w1"),
]


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_no_token_is_401_before_a_declared_512_mib_body(
    uvicorn_server: LiveServer, world: World, method: str, path: str
) -> None:
    """Django would read all 512 MiB first; the guard answers the headers and closes."""
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                path,
                {"Content-Type": "application/json", "Content-Length": str(512 * MIB)},
                method=method,
            )
        )
        status, headers, document = response_of(sock)

    assert (status, document["error"]["code"]) == (401, "UNAUTHENTICATED")
    assert headers["www-authenticate"].startswith("Bearer")
    assert headers["connection"] == "close"


@pytest.mark.parametrize(("method", "path"), [*GUARDED, ("POST", "/api/v1/sessions")])
def test_a_declared_length_over_1_mib_is_413_before_the_body(
    uvicorn_server: LiveServer, world: World, method: str, path: str
) -> None:
    """Also for ``POST /sessions``, which takes no bearer token (its body is signed)."""
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                path,
                json_from(world.alice.token, **{"Content-Length": str(2 * MIB)}),
                method=method,
            )
        )
        status, headers, document = response_of(sock)

    assert (status, document["error"]["code"]) == (413, "TOO_LARGE")
    assert document["error"]["details"] == {"limit": MIB}
    assert headers["connection"] == "close"


def test_a_chunked_body_past_the_limit_is_cut_at_413(
    uvicorn_server: LiveServer, world: World
) -> None:
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                "/api/v1/organizations",
                json_from(world.alice.token, **{"Transfer-Encoding": "chunked"}),
            )
        )
        flood_chunks(sock)
        status, _, document = response_of(sock)

    assert (status, document["error"]["code"]) == (413, "TOO_LARGE")


def test_what_passes_reaches_django_whole_chunked_or_not(
    uvicorn_server: LiveServer, world: World
) -> None:
    """The guard reads the body and hands it on: a chunked admin request is carried out."""
    body = json.dumps({"id": "org-chunked", "name": "Chunked Ltd"}).encode()
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                "/api/v1/organizations",
                json_from(world.alice.token, **{"Transfer-Encoding": "chunked"}),
            )
            + chunked(body, 7)
        )
        status, _, document = response_of(sock)

    assert status == 201, document
    assert Organization.objects.filter(id="org-chunked").exists()


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("POST", "/api/v1/no-such-endpoint", 404, "NOT_FOUND"),
        ("POST", "/api/v1/authority", 405, "METHOD_NOT_ALLOWED"),
    ],
)
def test_an_unknown_path_or_method_stays_djangos_answer(
    uvicorn_server: LiveServer, world: World, method: str, path: str, status: int, code: str
) -> None:
    """No token is asked where no endpoint is: the answer is the 404 or 405 Django gives."""
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                path, {"Content-Type": "application/json", "Content-Length": "2"}, method=method
            )
            + b"{}"
        )
        answer, _, document = response_of(sock)

    assert (answer, document["error"]["code"]) == (status, code)
