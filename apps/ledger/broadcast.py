"""After-commit hints to stream consumers that a group's head moved.

A hint carries no event: the channel layer delivers at most once, so subscribers always read
the log by sequence. A lost hint only delays delivery until the consumer's next head poll.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import itertools
import logging
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextvars import Context
from typing import Any

import redis
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings
from redis.connection import AbstractConnection

logger = logging.getLogger(__name__)

#: how long an exiting process waits for its last hints to reach Redis
EXIT_DRAIN_S = 2.0
#: the name of each process's hint connection in Redis's ``CLIENT LIST`` (with its pid)
HINTS_CLIENT_NAME = "mwp-hints"
_publisher_numbers = itertools.count(1)


def group_channel(group_id: str) -> str:
    """A channel-layer group name for a MWP group (ids may hold ``:``, which Channels refuses)."""
    return "mwp.g." + hashlib.sha256(group_id.encode("utf-8")).hexdigest()[:40]


def announce_head(group_id: str, sequence: int) -> None:
    """Tell consumers of ``group_id`` that its head is now ``sequence``; never raises and
    never waits for an event loop.

    The caller is often a request's thread under ASGI. It must not enter ``async_to_sync``:
    a client that goes away meanwhile cancels the request, asgiref then copies the thread's
    context, mid-call, into the request's, and Django's ``request_finished`` finds an
    executor that has quit ("CurrentThreadExecutor already quit or is broken", issue 34 §7).
    So the Redis pub/sub layer is published by its sender thread, the in-memory layer's
    ``group_send`` is started on the loops its listeners run on, and any other layer is sent
    from a thread of its own.
    """
    send_hint(group_channel(group_id), {"type": "group.head", "group": group_id, "head": sequence})


def send_hint(channel: str, message: dict[str, Any]) -> None:
    """Send ``message`` to the channel-layer group ``channel`` as :func:`announce_head` does
    (never raises, never waits). ``message["head"]`` must grow: hints still waiting for the
    sender are coalesced to the highest per channel (the notification bell's hints use it
    too, ``apps.notifications.live``)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        publisher = _publisher(layer)
        if publisher is not None:
            publisher.publish(channel, message)
        elif isinstance(layer, InMemoryChannelLayer):
            _start_on_listening_loops(layer, channel, message)
        else:
            _other_layers.submit(_send_from_this_thread, layer, channel, message)
    except Exception:  # a hint that cannot be sent is not an error of the command
        logger.warning("could not announce a hint on %s", channel, exc_info=True)


#: the loops of this process on which a stream tail listens to the in-memory layer; its
#: queues belong to those loops, so its ``group_send`` must run there
_listening_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
#: sends started on those loops and not finished (a task nobody holds may be collected)
_sending: set[asyncio.Task[None]] = set()
#: one thread sends hints on any other layer (its own loop per send, as async_to_sync makes)
_other_layers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mwp-hints")


def listen_on_this_loop() -> None:
    """Called by a stream tail as it joins the hints: the in-memory layer's hints for this
    process are started on the running loop from now on (it is forgotten once closed)."""
    _listening_loops.add(asyncio.get_running_loop())


def _start_on_listening_loops(layer: Any, channel: str, message: dict[str, Any]) -> None:
    for loop in list(_listening_loops):
        if not loop.is_closed():
            # an empty context: the send inherits nothing of the caller's request
            loop.call_soon_threadsafe(_start_send, layer, channel, message, context=Context())


def _start_send(layer: Any, channel: str, message: dict[str, Any]) -> None:
    task = asyncio.get_running_loop().create_task(layer.group_send(channel, message))
    _sending.add(task)
    task.add_done_callback(_sent)


def _sent(task: asyncio.Task[None]) -> None:
    _sending.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.warning("could not announce a head", exc_info=task.exception())


def _send_from_this_thread(layer: Any, channel: str, message: dict[str, Any]) -> None:
    try:
        async_to_sync(layer.group_send)(channel, message)
    except Exception:
        logger.warning("could not announce a head on %s", channel, exc_info=True)


class _SyncPublisher:
    """PUBLISH from any thread, loop or none, through one sender thread per process.

    ``RedisPubSubChannelLayer.group_send`` is a Redis PUBLISH of the layer's serialised
    message on ``<prefix>__group__<group>``; its consumers, in every process, subscribe to
    that channel. ``async_to_sync`` would build a loop and a connection per call from a thread
    without one (~2.5 ms, docs/benchmarks.md); a synchronous PUBLISH is still a Redis round
    trip (~0.5 ms of a command's wall time at one client). So the caller only records the
    hint, and a sender thread publishes it (issue 15 §4): a Celery task, a management
    command, a request thread pay microseconds. The message bytes are the layer's own
    ``serialize`` (so encryption keys and the serializer format still apply).

    Hints waiting for the sender are coalesced per group to the highest head: a hint only
    says "read the log up to here", so the latest one says everything the earlier ones did.
    Under load one write carries every group that moved meanwhile.

    The sender's connection is its own, told ``CLIENT REPLY OFF``: a PUBLISH is then one
    write to the socket and nothing to wait for or parse, where a pipelined round trip cost
    the sender ~130 µs of CPU and the callers' threads the GIL meanwhile (~150 µs of CPU and
    60–95 µs of wall time per command in process, docs/benchmarks.md). A hint needs no answer:
    the number of subscribers PUBLISH returns is of no use here. Should the server answer
    anyway (a proxy or server without ``CLIENT REPLY``), the first answer that arrives turns
    this publisher back to round trips, which read every answer.
    """

    def __init__(self, layer: RedisPubSubChannelLayer, url: str, prefix: str) -> None:
        self.layer = layer
        self.prefix = prefix
        self.client = redis.Redis.from_url(url)
        self.pid = os.getpid()
        #: its connection's name in ``CLIENT LIST``: the process, then which publisher of it
        self.client_name = f"{HINTS_CLIENT_NAME}-{self.pid}-{next(_publisher_numbers)}"
        #: the sender's own connection, answers off (``None``: not connected now)
        self._quiet: AbstractConnection | None = None
        #: the server answered despite ``CLIENT REPLY OFF``: publish in round trips
        self._answers_anyway = False
        self._pending: dict[str, dict[str, Any]] = {}
        self._sending = False
        self._changed = threading.Condition()
        self._sender: threading.Thread | None = None

    def publish(self, group: str, message: dict[str, Any]) -> None:
        """Queue ``message`` for the sender; keeps only the highest head per group."""
        with self._changed:
            waiting = self._pending.get(group)
            if waiting is None or waiting["head"] < message["head"]:
                self._pending[group] = message
            if self._sender is None:
                self._sender = threading.Thread(
                    target=self._send_forever, name="mwp-hint-sender", daemon=True
                )
                self._sender.start()
                atexit.register(self.drain, EXIT_DRAIN_S)
            self._changed.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait until every queued hint has been sent (or failed); ``False`` on timeout."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not self._pending and not self._sending, timeout=timeout
            )

    def _send_forever(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending))
                batch, self._pending = self._pending, {}
                self._sending = True
            try:
                self._send(batch)
            except Exception:  # a hint that cannot be sent is not an error of any command
                logger.warning(
                    "could not announce the heads of %d group(s)", len(batch), exc_info=True
                )
            finally:
                with self._changed:
                    self._sending = False
                    self._changed.notify_all()

    def _send(self, batch: dict[str, dict[str, Any]]) -> None:
        commands = [
            ("PUBLISH", f"{self.prefix}__group__{group}", self.layer.serialize(message))
            for group, message in batch.items()
        ]
        if not self._answers_anyway:
            try:
                sent = self._sent_quietly(commands)
            except redis.ConnectionError:  # closed since the last batch (a restart, a timeout)
                sent = self._sent_quietly(commands)
            if sent:
                return
        self._send_in_round_trips(commands)

    def _sent_quietly(self, commands: list[tuple[str, str, bytes]]) -> bool:
        """Write ``commands`` on the quiet connection; ``False`` (and round trips from now
        on) when an answer waits on it, which ``CLIENT REPLY OFF`` should have prevented.
        On an error the connection is dropped, so the next write connects afresh."""
        quiet = self._quiet_connection()
        try:
            if quiet.can_read(timeout=0):
                logger.info("Redis answers PUBLISH despite CLIENT REPLY OFF: reading answers")
                self._answers_anyway = True
                self._drop_quiet()
                return False
            quiet.send_packed_command(quiet.pack_commands(commands), check_health=False)
        except Exception:
            self._drop_quiet()
            raise
        return True

    def _send_in_round_trips(self, commands: list[tuple[str, str, bytes]]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        pipe.execute()

    def _quiet_connection(self) -> AbstractConnection:
        """The sender's connection, connected (handshake, AUTH and SELECT answered as usual),
        named for ``CLIENT LIST`` (``HINTS_CLIENT_NAME``), then told to answer nothing."""
        if self._quiet is None:
            quiet = self.client.connection_pool.make_connection()
            quiet.connect()
            quiet.send_command("CLIENT", "SETNAME", self.client_name)
            quiet.read_response()
            quiet.send_command("CLIENT", "REPLY", "OFF", check_health=False)
            self._quiet = quiet
        return self._quiet

    def _drop_quiet(self) -> None:
        if self._quiet is not None:
            self._quiet.disconnect()
            self._quiet = None


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
