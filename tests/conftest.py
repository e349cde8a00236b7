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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long proofs (marked ``proof``, see ``tests/proofs.py``) first, in their order.

    With ``--dist loadfile --no-loadscope-reorder`` xdist hands out whole files in collection
    order, two pending per worker. Started first, the long files run side by side while the
    short ones fill in; left to xdist's default (most tests first), the one-test long files
    came last and one worker ran them alone while the other idled.
    """
    items.sort(key=lambda item: item.get_closest_marker("proof") is None)
