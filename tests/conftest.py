"""Shared fixtures. The suite runs on PostgreSQL (``DATABASE_URL``, set by ``make test``)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from tests.factories import World, build_world

# visible everywhere, so that ``uvicorn_server`` can be the session's default server
from tests.live_server import live_asgi_server  # noqa: F401

# CI explores the same examples on every run, so a red build is reproducible and a green one
# is not luck; developers' runs keep exploring new examples (and keep the ones that failed).
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


#: the artifact folder this pytest process made (and removes when it ends), if any
_ARTIFACT_DIR_MADE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """Every process of the run keeps artifacts in one temporary folder, never the repository's
    ``var/artifacts``.

    A command may name only stored bytes (wire.md §9), so a test that uploads in this process
    and then drives a server (``tests/live_server.py``) or a Celery worker
    (``tests/celery_processes.py``) needs them to read the same folder. Those processes take
    ``os.environ`` as it is when they start, and xdist workers inherit it from the controller,
    whose ``pytest_configure`` runs before any of them exists: so the folder is chosen here,
    once, and put in the environment. This process read its settings before this hook (pytest-
    django loads them first), so its ``MWP_ARTIFACT_DIR`` is set to the same folder directly.
    A folder given explicitly in the environment is kept.
    """
    folder = os.environ.get("MWP_ARTIFACT_DIR")
    if not folder:
        folder = tempfile.mkdtemp(prefix="mwp-test-artifacts-")
        os.environ["MWP_ARTIFACT_DIR"] = folder
        config.stash[_ARTIFACT_DIR_MADE] = Path(folder)
    django_settings.MWP_ARTIFACT_DIR = Path(folder)
    # The hook tests' receivers listen on 127.0.0.1: let every process of the run reach them
    # (a deployment keeps hooks to public addresses; tests/notifications/test_hook_targets.py
    # turns this off again to prove it)
    os.environ["MWP_HOOK_ALLOW_PRIVATE"] = "1"
    django_settings.MWP_HOOK_ALLOW_PRIVATE = True


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_ARTIFACT_DIR_MADE, None)
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop("MWP_ARTIFACT_DIR", None)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: object) -> None:
    """The test database lets Django's flush ``TRUNCATE`` the log between transactional
    tests: the log's TRUNCATE trigger lets it through only where ``mwp.allow_truncate`` is
    ``on`` (migration ``ledger.0009_no_truncate``), which is set here on the test database
    alone, for the connections opened from now on (so the pool is started afresh)."""
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        if connection.vendor != "postgresql":
            return
        name = connection.ops.quote_name(connection.settings_dict["NAME"])
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER DATABASE {name} SET mwp.allow_truncate = 'on'")
        connection.close()
        if connection.pool is not None:
            connection.close_pool()


@pytest.fixture
def world(db) -> World:
    return build_world()


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long proofs and the fault tests (marked ``proof`` or ``chaos``, see
    ``tests/proofs.py``) first, in their order.

    With ``--dist loadfile --no-loadscope-reorder`` xdist hands out whole files in collection
    order, two pending per worker. Started first, the long files run side by side while the
    short ones fill in; left to xdist's default (most tests first), the one-test long files
    came last and one worker ran them alone while the other idled.
    """
    items.sort(
        key=lambda item: (
            item.get_closest_marker("proof") is None and item.get_closest_marker("chaos") is None
        )
    )
