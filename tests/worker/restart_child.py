"""A worker process for ``test_restarts``: it feeds the logs in a JSON file into its
``QueueStore`` through a noisy at-least-once transport, resuming after its durable cursors, until
every event is applied — or until the test kills it with SIGKILL.

``python -m tests.worker.restart_child <sqlite file> <logs.json> <seed> <worker>``
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import cast

from missionweave.client.agent import AgentClient
from missionweave.worker.local_store import QueueStore
from tests.worker.transport import Transport


def main(database: str, logs_file: str, seed: str, worker: str, pace_s: str = "0") -> None:
    logs = json.loads(Path(logs_file).read_text())
    store = QueueStore(database, worker=worker)
    # the feeds never call the authority here: events come from the transport below
    feeds = {group: store.feed(cast(AgentClient, None), group) for group in logs}
    transport = Transport(logs, random.Random(int(seed)))
    transport.subscribe(store.cursors())  # SUBSCRIBE afterSequence = the durable cursor
    print("ready", flush=True)
    for group, event in transport:
        feeds[group].deliver(event)
        # a floor on the run's length, so the parent's kill lands mid-run on a fast disk too
        time.sleep(float(pace_s))
    store.close()
    print("done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
