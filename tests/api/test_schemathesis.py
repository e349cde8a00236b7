"""Schemathesis, every check, against a live server: the OpenAPI document is the truth
(issue 16 §6).

``st run`` reads ``GET /api/v1/schema`` from a real uvicorn on the test database and sends
what the document allows — and, in its negative mode, what it forbids — to every operation,
with every check it has: no 5xx, every status and content type and header documented, every
response matching its schema, data the document forbids refused and data it allows not
refused for its shape, unauthenticated requests refused, ``Allow`` headers true. The caller
is a staff human who is a member of the world's group, so the admin and member endpoints
are reached past their authorisation.

CI runs a deterministic, bounded number of examples per operation (``MAX_EXAMPLES``); a run
with more is ``MWP_PROOFS=full``. The three operations where the document once said other
than the server (``POST /groups`` ``name``, ``POST /agents`` ``capabilities[].version``,
``commands:batch``; issue 33 §7) reach their logic: the hooks give them the world's
organisation and group (``MWP_ST_ORGANIZATION``, ``MWP_ST_GROUP``), and their text fields get
values at the edges of the server's rule (``schemathesis.toml``). Any failure fails the test
with Schemathesis's report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import proofs
from tests.factories import build_world, grant
from tests.live_server import LiveServer, uvicorn_server

__all__ = ["uvicorn_server"]

pytestmark = [pytest.mark.e2e, pytest.mark.proof]

MAX_EXAMPLES = proofs.size(sample=12, full=200)
ST = Path(sys.executable).with_name("st")
HERE = Path(__file__).parent


def test_every_operation_passes_every_schemathesis_check(
    uvicorn_server: LiveServer, transactional_db: None, tmp_path: Path
) -> None:
    """Issue 16 §6; wire.md §8 (no 5xx, the §8 shape), §4 (every endpoint documented)."""
    world = build_world()
    grant(world.alice, world.group, world.alice, "mission_owner")
    command = [
        str(ST),
        "--config-file",
        str(HERE / "schemathesis.toml"),
        "run",
        f"{uvicorn_server.url}/api/v1/schema",
        "--checks",
        "all",
        "--header",
        f"Authorization: Bearer {world.alice.token}",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--generation-deterministic",
        "--workers",
        "1",
        "--no-color",
        "--output-truncate",
        "false",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path),
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": str(HERE / "schemathesis_hooks.py"),
        "MWP_ST_ORGANIZATION": world.org,
        "MWP_ST_GROUP": world.group,
    }
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        env=env,
        cwd=tmp_path,  # its crash cache goes there, not into the repository
    )
    output = result.stdout + result.stderr
    (tmp_path / "schemathesis.out").write_text(output)
    assert result.returncode == 0, output[-60000:]
