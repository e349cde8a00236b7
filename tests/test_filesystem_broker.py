"""The embedded default's broker (``missionweave.filesystem_broker``): a message is never
seen half-written, however the producer and the consumer interleave."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kombu import Connection

TRANSPORT = "missionweave.filesystem_broker:Transport"
MESSAGES = 400


def _connection(folder: Path) -> Connection:
    options: dict[str, Any] = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "store_processed": False,
        "control_folder": str(folder.parent / "control"),
        "polling_interval": 0.001,
    }
    return Connection("filesystem://", transport=TRANSPORT, transport_options=options)


def test_every_message_written_while_a_consumer_drains_arrives_whole_once(tmp_path: Path) -> None:
    """kombu's own ``_put`` creates the file before writing it; a consumer polling the folder
    took such a file empty and the Celery worker died on the JSON error (issue 15, found by
    the demo's test). Written aside and renamed, each of 400 messages of ~20 KB, put while the
    consumer polls every millisecond, arrives whole and exactly once."""
    folder = tmp_path / "queue"
    folder.mkdir()
    pad = "x" * 20_000

    def produce() -> None:
        with _connection(folder) as connection:
            queue = connection.SimpleQueue("work")
            for n in range(MESSAGES):
                queue.put({"n": n, "pad": pad})
            queue.close()

    received: list[int] = []
    with _connection(folder) as connection:
        queue = connection.SimpleQueue("work")
        producer = threading.Thread(target=produce)
        producer.start()
        while len(received) < MESSAGES:
            message = queue.get(timeout=30)
            assert message.payload["pad"] == pad
            received.append(message.payload["n"])
            message.ack()
        producer.join()
        queue.close()

    assert sorted(received) == list(range(MESSAGES))
    assert not list(folder.glob("*.part"))
