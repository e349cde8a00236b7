"""Fixtures shared by the WorkItem API tests: the work world and a wire client of its group."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
from rest_framework.test import APIClient

from .work_http import Wire, WorkWorld, build_work_world

Commit = Callable[..., AbstractContextManager[Any]]


@pytest.fixture
def ww(db: None) -> WorkWorld:
    """The personas of ``build_work_world`` in ``g-research`` (w1 coordinates, w2 works)."""
    return build_work_world()


@pytest.fixture
def wire(api: APIClient, ww: WorkWorld) -> Wire:
    """Commands and reads in the work world's group, read as the mission owner olga."""
    return Wire(api, ww.group, ww.olga)


@pytest.fixture
def commit(django_capture_on_commit_callbacks: Commit) -> Callable[[], Iterator[Any]]:
    """Run what a command does after commit (follow-ups, hints) at the block's end."""

    @contextmanager
    def run() -> Iterator[Any]:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            yield callbacks

    return run
