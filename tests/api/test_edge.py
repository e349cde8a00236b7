"""The command endpoints answered ahead of Django (``apps/api/edge.py``, issue 15).

Two doors answer ``POST /groups/{group}/commands`` and ``commands:batch``: the edge, which
every ASGI server runs, and the DRF views behind Django's stack, which the test client and the
OpenAPI document use. The property test sends the same requests through both, in process,
and holds their answers equal. The socket tests check what only the edge can do under a
server that streams bodies (uvicorn): refuse before a byte of the body is read (wire.md §3
step 1, §1 limits) and read a chunked body.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.asgi import get_asgi_application
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.api.edge import CommandEdge
from tests.factories import World, mission_body
from tests.live_server import LiveServer, uvicorn_server

from .asgi_calls import Headers, asgi_call
from .http import head_sequence
from .raw_http import chunked, connect, flood_chunks, json_from, request_head, response_of

__all__ = ["uvicorn_server"]

CONTENT_TYPES = [
    None,
    "application/json",
    "application/json; charset=utf-8",
    "Application/JSON;charset=UTF-8",
    "*/*",
    "application/*",
    "text/plain",
    "application/json; charset=latin-1",
    "application/json; version=2",
    "multipart/form-data; boundary=x",
    "application/jsonx",
]


def _essence(status: int, body: bytes) -> tuple[int, object]:
    """What must be equal: the status, and the error code of a refusal or the whole answer."""
    document = json.loads(body)
    if status >= 400:
        return status, document["error"]["code"]
    return status, document


#: the property tests: every example sends its request through both doors
BOTH_DOORS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _command_headers(token: str, body: bytes) -> Headers:
    """A command request's headers from ``token`` for ``body``."""
    return [
        (b"host", b"127.0.0.1"),
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]


def _authorizations(world: World) -> list[str | None]:
    """``Authorization`` values the property tests draw from: none, malformed, unknown, an
    agent's session, a member's and a staff user's API tokens."""
    return [
        None,
        "",
        "Bearer",
        "Basic abc",
        "Bearer mwps_unknown",
        f"Bearer {world.w1.token}",
        f"Bearer {world.olga.token}",
        f"Bearer {world.alice.token}",
    ]


@pytest.fixture(scope="module")
def doors() -> tuple[Any, Any]:
    django_app = get_asgi_application()
    return CommandEdge(django_app), django_app


@pytest.mark.django_db(transaction=True)
@BOTH_DOORS
@given(data=st.data())
def test_the_edge_answers_every_request_as_django_does(
    world: World, doors: tuple[Any, Any], data: st.DataObject
) -> None:
    """Any token, media type, body and endpoint: the same status and the same error code or
    answer from both doors; an accepted command is a replay the second time (wire.md §3)."""
    edge, django_app = doors
    endpoint = data.draw(st.sampled_from(["commands", "commands:batch"]), label="endpoint")
    group = data.draw(st.sampled_from([world.group, "g-unknown"]), label="group")
    authorization = data.draw(st.sampled_from(_authorizations(world)), label="authorization")
    content_type = data.draw(st.sampled_from(CONTENT_TYPES), label="content_type")
    envelope = world.w1.command(world.group, "mission.create", mission_body())
    document = {"commands": [envelope]} if endpoint == "commands:batch" else envelope
    body = data.draw(
        st.one_of(
            st.just(json.dumps(document).encode()),
            st.just(b""),
            st.binary(max_size=64),
            st.sampled_from([b"{}", b"[]", b"null", b'{"commands": 5}', b'{"id": "x"}']),
            st.text(max_size=64).map(str.encode),
        ),
        label="body",
    )
    headers: Headers = [(b"host", b"127.0.0.1")]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode()))
    if content_type is not None:
        headers.append((b"content-type", content_type.encode()))
    headers.append((b"content-length", str(len(body)).encode()))
    path = f"/api/v1/groups/{group}/{endpoint}"
    first, second = data.draw(st.permutations([edge, django_app]), label="order")

    status_1, _, body_1 = asyncio.run(asgi_call(first, path, headers, body))
    status_2, _, body_2 = asyncio.run(asgi_call(second, path, headers, body))

    assert _essence(status_1, body_1) == _essence(status_2, body_2)


@pytest.mark.django_db(transaction=True)
def test_an_answer_carries_the_headers_django_would_set(
    world: World, doors: tuple[Any, Any]
) -> None:
    """Security headers, ``Vary``, ``Allow``, the replay marker and, on 401, the challenge."""
    edge, django_app = doors
    envelope = world.w1.command(world.group, "mission.create", mission_body())
    body = json.dumps(envelope).encode()
    headers = _command_headers(world.w1.token, body)
    path = f"/api/v1/groups/{world.group}/commands"
    compared = (
        "content-type", "x-content-type-options", "referrer-policy",
        "cross-origin-opener-policy", "x-frame-options", "vary", "allow",
    )  # fmt: skip

    status, accepted, _ = asyncio.run(asgi_call(edge, path, headers, body))
    status_django, replayed_by_django, answer = asyncio.run(
        asgi_call(django_app, path, headers, body)
    )
    _, replayed_by_edge, _ = asyncio.run(asgi_call(edge, path, headers, body))
    _, refused, _ = asyncio.run(asgi_call(edge, path, headers[:1], body))

    assert (status, status_django) == (201, 201), answer
    assert {name: accepted.get(name) for name in compared} == {
        name: replayed_by_django.get(name) for name in compared
    }
    assert "idempotent-replayed" not in accepted
    assert replayed_by_edge["idempotent-replayed"] == replayed_by_django["idempotent-replayed"]
    assert refused["www-authenticate"] == 'Bearer realm="missionweave"'


@pytest.mark.django_db(transaction=True)
def test_a_host_not_allowed_is_a_json_refusal(world: World, doors: tuple[Any, Any]) -> None:
    """wire.md §8: the §8 document under /api/, where Django's stack answers an HTML 400."""
    edge, _ = doors
    before = head_sequence(world.group)
    headers: Headers = [
        (b"host", b"evil.example"),
        (b"authorization", f"Bearer {world.w1.token}".encode()),
        (b"content-type", b"application/json"),
    ]
    envelope = world.w1.command(world.group, "mission.create", mission_body())

    status, _, body = asyncio.run(
        asgi_call(
            edge, f"/api/v1/groups/{world.group}/commands", headers, json.dumps(envelope).encode()
        )
    )

    assert (status, json.loads(body)["error"]["code"]) == (400, "MALFORMED")
    assert head_sequence(world.group) == before


QUERY_VALUES = ["0", "1", "2", "5", "", "-1", "abc", "\uff11", "\u0661", "1000", "5000", "9" * 19]


@pytest.mark.django_db(transaction=True)
@BOTH_DOORS
@given(data=st.data())
def test_the_edge_serves_event_pages_as_django_does(
    world: World, doors: tuple[Any, Any], data: st.DataObject
) -> None:
    """``GET …/events``: any token, group and ``after``/``limit`` (fullwidth and Arabic-Indic
    digits, signs, 19 digits, repeats): the same status and error code or the same page."""
    edge, django_app = doors
    group = data.draw(st.sampled_from([world.group, "g-unknown"]), label="group")
    authorization = data.draw(st.sampled_from(_authorizations(world)), label="authorization")
    pairs = data.draw(
        st.lists(
            st.tuples(st.sampled_from(["after", "limit", "other"]), st.sampled_from(QUERY_VALUES)),
            max_size=3,
        ),
        label="query",
    )
    query = urlencode(pairs).encode()
    headers: Headers = [(b"host", b"127.0.0.1")]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode()))
    path = f"/api/v1/groups/{group}/events"

    answers = [
        asyncio.run(asgi_call(door, path, headers, b"", method="GET", query=query))
        for door in (edge, django_app)
    ]

    (status_1, _, body_1), (status_2, _, body_2) = answers
    assert _essence(status_1, body_1) == _essence(status_2, body_2)


@pytest.mark.django_db(transaction=True)
def test_a_remembered_token_of_a_replaced_session_reads_no_events(
    world: World, doors: tuple[Any, Any]
) -> None:
    """R11.3-10 for reads: once a newer session exists, the old token is ``STALE_SESSION``
    (checked in the page's round trip), also before a malformed query is judged."""
    edge, django_app = doors
    path = f"/api/v1/groups/{world.group}/events"
    old = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {world.w1.token}".encode())]
    first, first_headers, page = asyncio.run(asgi_call(edge, path, old, b"", method="GET"))
    _, django_headers, django_page = asyncio.run(
        asgi_call(django_app, path, old, b"", method="GET")
    )

    world.w1.open_session()
    stale = asyncio.run(asgi_call(edge, path, old, b"", method="GET", query=b"after=0"))
    stale_bad_query = asyncio.run(asgi_call(edge, path, old, b"", method="GET", query=b"after=x"))

    assert first == 200
    assert page == django_page
    assert first_headers["allow"] == django_headers["allow"]
    for status, _, body in (stale, stale_bad_query):
        assert (status, json.loads(body)["error"]["code"]) == (401, "STALE_SESSION")


@pytest.mark.django_db(transaction=True)
def test_a_remembered_token_of_a_replaced_session_is_stale_even_for_a_replay(
    world: World, doors: tuple[Any, Any]
) -> None:
    """R11.3-10: the edge judges a known session token from memory (``SessionCallers``); once
    a newer session exists, the old token is ``STALE_SESSION`` under the lock, before the
    idempotency record could answer it. The new session's token still gets the replay of a
    command sent before (an offline resend, wire.md §3 step 5)."""
    edge, _ = doors
    path = f"/api/v1/groups/{world.group}/commands"
    envelope = world.w1.command(world.group, "mission.create", mission_body())
    body = json.dumps(envelope).encode()
    old_token = world.w1.token
    accepted, _, _ = asyncio.run(asgi_call(edge, path, _command_headers(old_token, body), body))

    world.w1.open_session()
    stale, _, refusal = asyncio.run(asgi_call(edge, path, _command_headers(old_token, body), body))
    again, headers, _ = asyncio.run(
        asgi_call(edge, path, _command_headers(world.w1.token, body), body)
    )

    assert accepted == 201
    assert (stale, json.loads(refusal)["error"]["code"]) == (401, "STALE_SESSION")
    assert (again, headers["idempotent-replayed"]) == (201, "true")


# --- under a server that streams bodies ---------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("endpoint", ["commands", "commands:batch"])
def test_no_token_is_refused_before_a_declared_512_mib_body(
    uvicorn_server: LiveServer, world: World, endpoint: str
) -> None:
    """wire.md §3 step 1: headers alone are answered 401; not a byte of the body is sent."""
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                f"/api/v1/groups/{world.group}/{endpoint}",
                {"Content-Type": "application/json", "Content-Length": str(512 * 1024 * 1024)},
            )
        )
        status, headers, document = response_of(sock)

    assert (status, document["error"]["code"]) == (401, "UNAUTHENTICATED")
    assert headers["connection"] == "close"


@pytest.mark.django_db(transaction=True)
def test_a_declared_length_over_the_limit_is_413_before_the_body(
    uvicorn_server: LiveServer, world: World
) -> None:
    """wire.md §1: a command body is at most 1 MiB; the declared length is enough to refuse."""
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                f"/api/v1/groups/{world.group}/commands",
                json_from(world.w1.token, **{"Content-Length": str(2 * 1024 * 1024)}),
            )
        )
        status, _, document = response_of(sock)

    assert (status, document["error"]["code"]) == (413, "TOO_LARGE")
    assert document["error"]["details"] == {"limit": 1024 * 1024}


@pytest.mark.django_db(transaction=True)
def test_a_chunked_command_is_read_and_accepted(uvicorn_server: LiveServer, world: World) -> None:
    """A body without Content-Length is parsed as it arrives, not taken for an empty one."""
    before = head_sequence(world.group)
    envelope = world.w1.command(world.group, "mission.create", mission_body())
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                f"/api/v1/groups/{world.group}/commands",
                json_from(world.w1.token, **{"Transfer-Encoding": "chunked"}),
            )
            + chunked(json.dumps(envelope).encode(), 100)
        )
        status, _, document = response_of(sock)

    assert status == 201, document
    assert document["command_id"] == envelope["id"]
    assert head_sequence(world.group) > before


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_past_the_limit_is_cut_at_413(
    uvicorn_server: LiveServer, world: World
) -> None:
    """Counted as it arrives: refused once past 1 MiB, nothing appended."""
    before = head_sequence(world.group)
    with connect(uvicorn_server) as sock:
        sock.sendall(
            request_head(
                f"/api/v1/groups/{world.group}/commands",
                json_from(world.w1.token, **{"Transfer-Encoding": "chunked"}),
            )
        )
        flood_chunks(sock)
        status, headers, document = response_of(sock)

    assert (status, document["error"]["code"]) == (413, "TOO_LARGE")
    assert headers["connection"] == "close"
    assert head_sequence(world.group) == before
