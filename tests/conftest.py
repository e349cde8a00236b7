"""Shared fixtures. The suite runs on PostgreSQL (``DATABASE_URL``, set by ``make test``)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from tests.factories import World, build_world

# CI explores the same examples on every run, so a red build is reproducible and a green one
# is not luck; developers' runs keep exploring new examples (and keep the ones that failed).
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


@pytest.fixture
def world(db) -> World:
    return build_world()


@pytest.fixture
def api() -> APIClient:
    return APIClient()
