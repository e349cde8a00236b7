"""The live worker tests' organisation: two groups on a real uvicorn (``live_org.py``)."""

from __future__ import annotations

import pytest

from tests.live_server import LiveServer, uvicorn_server
from tests.worker.live_org import LiveOrg, build_live_org

__all__ = ["uvicorn_server"]


@pytest.fixture
def live_org(transactional_db: None, uvicorn_server: LiveServer) -> LiveOrg:
    """uvicorn, because artifact uploads stream their body (``tests/live_server.py``)."""
    return build_live_org(uvicorn_server)
