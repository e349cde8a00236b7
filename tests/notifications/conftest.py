"""Fixtures for the notification tests: real Celery processes (``tests/celery_processes.py``)."""

from __future__ import annotations

from tests.celery_processes import CeleryProcesses, start_celery

__all__ = ["CeleryProcesses", "start_celery"]
