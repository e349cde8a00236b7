"""``SUBSCRIBE`` below the online floor (wire.md §7; R16-08, R16-10).

After ``archive through S`` a subscriber asking for events after N < S gets
``{"op": "ERROR", "code": "CURSOR_TOO_OLD", "group", "snapshot": {sequence, digest, url}}``
and no events; one asking from S on is served from the online log and then live. Driven
through ``missionweave.asgi.application`` against real PostgreSQL, like
``test_ack_cursors.py`` (transactional: the consumer's database work runs in other threads).
"""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from apps.ledger.archive import archive
from apps.ledger.models import GroupLog
from apps.ledger.snapshots import take_as_authority
from apps.ledger.write_path import submit_command
from missionweave.protocol.snapshots import url_of
from tests.factories import World, mission_body
from tests.stream.sockets import connected as _connected
from tests.stream.sockets import frames as _frames

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@database_sync_to_async
def _create_mission(world: World, mission_id: str) -> None:
    document = world.w1.command(world.group, "mission.create", mission_body(mission_id))
    submit_command(group_id=world.group, document=document, caller=world.w1.caller)


@database_sync_to_async
def _snapshot_and_archive(world: World) -> dict[str, Any]:
    """Snapshot at the head S (snapshot.created lands at S + 1), archive through S."""
    taken = take_as_authority(world.group).snapshot
    assert archive(world.group, taken.sequence) == taken.sequence
    return {
        "sequence": taken.sequence,
        "digest": taken.digest,
        "url": url_of(world.group, taken.sequence),
    }


@database_sync_to_async
def _head(world: World) -> int:
    return GroupLog.objects.get(group_id=world.group).head_sequence


async def test_subscribe_below_the_floor_is_cursor_too_old_with_the_snapshot(
    world: World,
) -> None:
    """wire§7, R16-10: afterSequence N < archived_through → ERROR CURSOR_TOO_OLD naming the
    snapshot, and no EVENT; the socket stays usable, and SUBSCRIBE from the snapshot's
    sequence replays the online tail and then follows live events."""
    await _create_mission(world, "m-1")
    await _create_mission(world, "m-2")
    reference = await _snapshot_and_archive(world)
    floor = reference["sequence"]
    socket = await _connected(world.w2.token)

    for after in (0, floor - 1):
        await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": after})
        assert await _frames(socket, 1) == [
            {"op": "ERROR", "code": "CURSOR_TOO_OLD", "group": world.group, "snapshot": reference}
        ]
    assert await socket.receive_nothing(timeout=0.3)

    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": floor})
    head = await _head(world)
    tail = await _frames(socket, head - floor)
    assert [f["event"]["sequence"] for f in tail] == list(range(floor + 1, head + 1))
    assert tail[0]["event"]["type"] == "snapshot.created"
    await _create_mission(world, "m-3")
    (live,) = await _frames(socket, 1)
    assert live["op"] == "EVENT"
    assert live["event"]["sequence"] == head + 1
    await socket.disconnect()
