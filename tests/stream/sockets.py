"""Websocket helpers of the stream tests: a connected ``WebsocketCommunicator`` on the real
ASGI application, and reading frames off it."""

from __future__ import annotations

import json

from channels.testing import WebsocketCommunicator

from missionweave.asgi import application

PATH = "/ws/v1/stream"


async def connected(token: str) -> WebsocketCommunicator:
    """A socket authenticated with ``token`` at the handshake (wire.md §7)."""
    socket = WebsocketCommunicator(
        application, PATH, headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    accepted, _ = await socket.connect()
    assert accepted
    return socket


async def frames(socket: WebsocketCommunicator, count: int, within: float = 3) -> list[dict]:
    """The next ``count`` frames, each within ``within`` seconds."""
    return [json.loads(await socket.receive_from(timeout=within)) for _ in range(count)]
