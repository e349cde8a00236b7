"""Fixtures for the ledger's tests: real Celery processes (``tests/celery_processes.py``)."""

from __future__ import annotations

from tests.celery_processes import CeleryProcesses, celery_processes, start_celery

__all__ = ["CeleryProcesses", "celery_processes", "start_celery"]
