"""Fixtures for the fault tests: real Celery processes (``tests/celery_processes.py``) and
the PostgreSQL and Redis of a test's own, to take away and bring back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.celery_processes import start_celery
from tests.faults.private_postgres import PrivatePostgres, private_postgres
from tests.faults.private_redis import PrivateRedis, private_redis

__all__ = ["start_celery"]


@pytest.fixture
def cluster(transactional_db: None) -> Iterator[PrivatePostgres]:
    """A PostgreSQL cluster of the test's own; the test copies the test database into it."""
    with private_postgres() as running:
        yield running


@pytest.fixture
def redis_server(transactional_db: None) -> Iterator[PrivateRedis]:
    """A Redis of the test's own."""
    with private_redis() as running:
        yield running
