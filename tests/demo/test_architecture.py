"""The demo's agents are agents: ``missionweave/demo`` loads no Django and no ``apps`` (issue
14 §8), so its processes are what an outside organisation would run with the SDK alone.
import-linter's "Agent-side code" contract checks the import statements; this checks what
actually gets loaded, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

MODULES = (
    "missionweave.demo.__main__",
    "missionweave.demo.coordinator",
    "missionweave.demo.reviewer",
    "missionweave.demo.work",
    "missionweave.demo.launch",
    "missionweave.demo.personas",
)
PROBE = f"""
import sys
import {", ".join(MODULES)}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("django", "apps", "rest_framework"))
print(",".join(loaded))
"""


def test_the_demo_agents_load_no_django_and_no_apps() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == ""
