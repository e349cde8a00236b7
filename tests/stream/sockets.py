"""Websocket helpers of the stream tests: a connected ``WebsocketCommunicator`` on the real
ASGI application, and reading frames off it."""

from __future__ import annotations

import json

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from apps.ledger.models import GroupLog
from apps.ledger.write_path import submit_command
from missionweave.asgi import application
from tests.factories import World, mission_body

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


@database_sync_to_async
def create_missions(world: World, count: int) -> None:
    """``count`` missions created by ``w1`` through the write path, one command each."""
    for _ in range(count):
        document = world.w1.command(world.group, "mission.create", mission_body())
        submit_command(group_id=world.group, document=document, caller=world.w1.caller)


@database_sync_to_async
def head_of(world: World) -> int:
    """The head sequence of the world's group."""
    return GroupLog.objects.get(group_id=world.group).head_sequence
