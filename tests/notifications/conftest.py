"""Fixtures for the notification tests: real Celery processes (``tests/celery_processes.py``)
and pointing this process's hints at them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from missionweave.celery import app
from tests.celery_processes import CeleryProcesses, start_celery

__all__ = ["CeleryProcesses", "hints_to", "start_celery"]


@pytest.fixture
def hints_to(monkeypatch: pytest.MonkeyPatch) -> Callable[[CeleryProcesses], None]:
    """The hints this process sends after commit go to the test worker's queue."""

    def point(processes: CeleryProcesses) -> None:
        monkeypatch.setitem(app.conf, "task_default_queue", processes.queue)

    return point
