"""The writers of the delivery tests, as a process of their own (``python -m``).

Appending 10,000 events costs CPU (each command is verified, decided, hashed and projected);
run in the test process, the writers would share one interpreter lock with the 50 clients
they are meant to race. Here they run beside them, as a deployment's writers would: each
writer a thread, appending ``mission.create`` commands in batches through the one write path
(``submit_batch``) into the test database the live server reads (``MWP_TEST_DB_NAME``), with
the same channel layer, so their after-commit hints reach the server's consumers.

Reads a JSON spec on stdin::

    {"writers": [{"agent", "seed", "group", "session_epoch", "membership_epoch", "count"}],
     "batch": 25}

and prints ``{"accepted": N, "refused": [...], "dropped_hints": K}`` where ``dropped_hints``
counts the channel layer's "over capacity" reports (the list-based Redis layer drops a hint
for a subscriber whose queue is full).
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import threading

import django


class _DroppedHints(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "over capacity" in record.getMessage():
            self.count += 1


def main() -> None:
    django.setup()
    # the writer imports the project's models, which exist only once Django is set up
    writers = importlib.import_module("tests.stream.load_writers")
    spec = json.load(sys.stdin)
    dropped = _DroppedHints()
    layer_log = logging.getLogger("channels_redis.core")
    layer_log.addHandler(dropped)
    layer_log.setLevel(logging.INFO)
    accepted: list[int] = []
    refused: list[str] = []
    threads = [
        threading.Thread(target=writers.write, args=(writer, spec["batch"], accepted, refused))
        for writer in spec["writers"]
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(
        json.dumps({"accepted": len(accepted), "refused": refused, "dropped_hints": dropped.count})
    )


if __name__ == "__main__":
    main()
