"""After-commit hints to stream consumers that a group's head moved.

A hint carries no event: the channel layer delivers at most once, so subscribers always read
the log by sequence. A lost hint only delays delivery until the consumer's next head poll.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import threading
from typing import Any

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings

logger = logging.getLogger(__name__)


def group_channel(group_id: str) -> str:
    """A channel-layer group name for a MWP group (ids may hold ``:``, which Channels refuses)."""
    return "mwp.g." + hashlib.sha256(group_id.encode("utf-8")).hexdigest()[:40]


def announce_head(group_id: str, sequence: int) -> None:
    """Tell consumers of ``group_id`` that its head is now ``sequence``; never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    channel = group_channel(group_id)
    message = {"type": "group.head", "group": group_id, "head": sequence}
    try:
        publisher = _publisher(layer)
        if publisher is not None:
            publisher.publish(channel, message)
        elif _main_thread_without_loop(layer):
            _MainThreadLoop.group_send(layer, channel, message)
        else:
            async_to_sync(layer.group_send)(channel, message)
    except Exception:  # a hint that cannot be sent is not an error of the command
        logger.warning("could not announce head of %s", group_id, exc_info=True)


class _SyncPublisher:
    """PUBLISH from any thread, loop or none, on one redis-py client per process.

    ``RedisPubSubChannelLayer.group_send`` is a Redis PUBLISH of the layer's serialised
    message on ``<prefix>__group__<group>``; its consumers, in every process, subscribe to
    that channel. Sent here synchronously it costs one round trip (~0.1 ms) from a Celery
    task, a management command, a benchmark thread or a sync view alike, where
    ``async_to_sync`` builds a loop and a connection per call from a thread without one
    (~2.5 ms, docs/benchmarks.md) — issue 15 §4. The message bytes are the layer's own
    ``serialize`` (so encryption keys and the serializer format still apply).
    """

    def __init__(self, layer: RedisPubSubChannelLayer, url: str, prefix: str) -> None:
        self.layer = layer
        self.prefix = prefix
        self.client = redis.Redis.from_url(url)
        self.pid = os.getpid()

    def publish(self, group: str, message: dict[str, Any]) -> None:
        self.client.publish(f"{self.prefix}__group__{group}", self.layer.serialize(message))


_publishers: dict[int, _SyncPublisher] = {}


def _publisher(layer: Any) -> _SyncPublisher | None:
    """The sync publisher for ``layer`` when it is the Redis pub/sub layer on one host given
    as a URL (our settings); ``None`` otherwise (the in-memory layer must publish on its
    consumers' loop; a sharded layer picks its shard by a hash of its own)."""
    if not isinstance(layer, RedisPubSubChannelLayer):
        return None
    found = _publishers.get(id(layer))
    if found is not None and found.layer is layer and found.pid == os.getpid():
        return found
    config = settings.CHANNEL_LAYERS.get("default", {}).get("CONFIG", {})
    hosts = config.get("hosts") or []
    if len(hosts) != 1 or not isinstance(hosts[0], str):
        return None
    _publishers[id(layer)] = publisher = _SyncPublisher(
        layer, hosts[0], config.get("prefix", "asgi")
    )
    return publisher


def _main_thread_without_loop(layer: Any) -> bool:
    """Whether the hint can go through the process's long-lived main-thread loop.

    From a thread with no event loop (a Celery task, a management command) ``async_to_sync``
    builds a new loop in a new thread for every call, and the Redis pub/sub layer, which keeps
    one connection per loop, connects anew: ~2-3 ms per commit (docs/benchmarks.md). A loop
    kept for the main thread costs ~0.1 ms. Only for the Redis pub/sub layer, which reaches
    every process through Redis whatever loop publishes: the in-memory layer must keep
    publishing on its consumers' own loop, which ``async_to_sync`` finds (under daphne the
    server's loop, whose connection is already open, so that path costs nothing to speak of).
    Only in the main thread, which lives as long as the process, so the loop and its
    connection are not left behind by short-lived threads.
    """
    if not isinstance(layer, RedisPubSubChannelLayer):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False  # a loop runs here: async_to_sync refuses it as before, and the hint is lost


class _MainThreadLoop:
    """One event loop for the main thread's hints, per process and per channel layer."""

    _loop: asyncio.AbstractEventLoop | None = None
    _layer: Any = None
    _pid: int = 0

    @classmethod
    def group_send(cls, layer: Any, channel: str, message: dict[str, Any]) -> None:
        if cls._loop is None or cls._layer is not layer or cls._pid != os.getpid():
            cls._renew(layer)
        assert cls._loop is not None
        cls._loop.run_until_complete(layer.group_send(channel, message))

    @classmethod
    def _renew(cls, layer: Any) -> None:
        old = cls._loop
        if old is not None and cls._pid == os.getpid() and not old.is_closed():
            # Settings changed the layer (tests do): closing the loop makes channels_redis
            # flush the old layer's connection for it. A loop inherited through fork is only
            # dropped: its sockets belong to the parent as well.
            old.close()
        cls._loop, cls._layer, cls._pid = asyncio.new_event_loop(), layer, os.getpid()
