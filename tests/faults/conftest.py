"""Fixtures for the fault tests: real Celery processes (``tests/celery_processes.py``)."""

from __future__ import annotations

from tests.celery_processes import start_celery

__all__ = ["start_celery"]
