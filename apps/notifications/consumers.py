"""``/ws/notifications/``: the bell's live unread count (issue 36 §2).

A signed-in person's browser (its Django session, from an allowed origin: the stream's own
handshake check, ``apps.stream.auth``) joins the person's channel-layer group
(``live.person_channel``). On connect, on each hint and on a slow poll the socket reads the
person's unread count and sends ``{"unread": n, "shown": "n", "label": "n unread
notifications"}`` when it changed. Hints are at most once and, on the in-memory layer, reach
no other process: the poll (20 s; 5 s on the in-memory layer) bounds what a lost one
delays. Nothing is read from a frame the browser sends.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import InMemoryChannelLayer

from apps.ledger.broadcast import listen_on_this_loop

from . import bell
from .live import person_channel

#: seconds between reads of the count without a hint
POLL_S = 20.0
#: the same on the in-memory layer, whose hints never leave their process: the producer runs
#: in a Celery worker, so there (the embedded default, ``make demo``) the poll is the news
LOCAL_POLL_S = 5.0


@database_sync_to_async
def _state(user_id: int) -> dict[str, object]:
    return bell.state(user_id)


class BellConsumer(AsyncWebsocketConsumer):
    """One browser tab's bell."""

    #: ``None``: :data:`POLL_S`, or :data:`LOCAL_POLL_S` on the in-memory layer
    poll_s: float | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if self.scope.get("mwp_caller") is None or user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.user_id: int = user.pk
        self.channel_group = person_channel(self.user_id)
        self.last: dict[str, object] | None = None
        await self.accept()
        if self.channel_layer is not None:
            listen_on_this_loop()  # the in-memory layer's hints of this process reach us
            await self.channel_layer.group_add(self.channel_group, self.channel_name)
        await self._push()
        self.poller = asyncio.create_task(self._poll())

    async def disconnect(self, code: int) -> None:
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
        group = getattr(self, "channel_group", None)
        if group is not None and self.channel_layer is not None:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The browser has nothing to say; a frame changes nothing."""

    async def notifications_changed(self, message: dict[str, Any]) -> None:
        await self._push()

    async def _push(self) -> None:
        state = await _state(self.user_id)
        if state != self.last:
            self.last = state
            await self.send(text_data=json.dumps(state))

    async def _poll(self) -> None:
        local = self.channel_layer is None or isinstance(self.channel_layer, InMemoryChannelLayer)
        interval = self.poll_s or (LOCAL_POLL_S if local else POLL_S)
        while True:
            await asyncio.sleep(interval)
            await self._push()
