"""Shared fixtures. The suite runs on PostgreSQL (``DATABASE_URL``, set by ``make test``)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.factories import World, build_world


@pytest.fixture
def world(db) -> World:
    return build_world()


@pytest.fixture
def api() -> APIClient:
    return APIClient()
