"""A client that closes while the server still owes it a frame (wire.md §7; R16-07).

Under an ASGI 2.4 server (uvicorn, the production server: docs/deploy.md) ``send()`` raises
once the peer has gone. Raised out of a frame's handler, that ended the consumer on the spot:
the frames the client sent before closing were never handled — its last ``ACK`` lost — and
``disconnect`` never ran, so the socket's poller, its place in the group's shared tail and its
channel-layer membership lived on in the server for good. Run against a real uvicorn.
"""

from __future__ import annotations

import json
import re

import httpx
import pytest
from websockets.sync.client import connect

from apps.ledger.head import committed_head
from apps.stream.models import Cursor
from tests.artifacts.helpers import eventually
from tests.factories import World
from tests.live_server import LiveServer, uvicorn_server

__all__ = ["uvicorn_server"]
pytestmark = pytest.mark.django_db(transaction=True)
SUBSCRIBERS = re.compile(r"^mwp_stream_subscribers (\S+)$", re.MULTILINE)


def _subscribers(server: LiveServer) -> float:
    """The server's open stream sockets, from its ``/metrics``."""
    match = SUBSCRIBERS.search(httpx.get(f"{server.url}/metrics", timeout=10).text)
    assert match is not None
    return float(match.group(1))


def _stored(principal: str, group: str) -> int | None:
    return (
        Cursor.objects.filter(principal=principal, group_id=group)
        .values_list("sequence", flat=True)
        .first()
    )


def test_frames_sent_before_a_close_are_handled_and_the_socket_is_let_go(
    uvicorn_server: LiveServer, world: World
) -> None:
    """wire§7, R16-07: a client sends ``ACK 1``, then ``ACK head``, and closes at once, so
    the ``ACKED`` owed for the first finds it gone: the second is stored all the same, and
    the socket stops counting as a subscriber (its cleanup ran)."""
    head = committed_head(world.group) or 0
    assert head > 1
    before = _subscribers(uvicorn_server)
    with connect(
        f"{uvicorn_server.ws_url}/ws/v1/stream",
        additional_headers={"Authorization": f"Bearer {world.w2.token}"},
    ) as socket:
        for sequence in (1, head):
            socket.send(json.dumps({"op": "ACK", "cursors": {world.group: sequence}}))
    assert eventually(lambda: _stored("agent:w2", world.group) == head, timeout_s=5)
    assert eventually(lambda: _subscribers(uvicorn_server) == before, timeout_s=5)
