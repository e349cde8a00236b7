"""What the end-to-end delivery tests share (issue 36; R10.2-06): the public address the
links are built on, the base environment of the test Celery worker, and waiting for a
condition that a worker process makes true."""

from __future__ import annotations

import time
from collections.abc import Callable

PUBLIC_URL = "http://mw.example.test"
#: long enough for a worker on a busy machine; a passing test waits only as long as it must
WAIT_S = 40.0


def settle(check: Callable[[], bool], *, timeout: float = WAIT_S) -> bool:
    """Poll ``check`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def delivery_env(**more: str) -> dict[str, str]:
    """The worker's environment: links on ``PUBLIC_URL``, notifications produced every half
    second, plus ``more``."""
    return {"MWP_PUBLIC_URL": PUBLIC_URL, "MWP_NOTIFY_INTERVAL_S": "0.5", **more}
