"""The protocol core is pure Python: importing it never imports Django (STYLE.md)."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import missionweave.protocol as protocol

_PROBE = """
import importlib, json, pkgutil, sys
import missionweave.protocol as protocol
names = [f"missionweave.protocol.{m.name}" for m in pkgutil.iter_modules(protocol.__path__)]
for name in names:
    importlib.import_module(name)
django = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
print(json.dumps({"modules": names, "django": django}))
"""


def _submodules() -> set[str]:
    return {f"missionweave.protocol.{m.name}" for m in pkgutil.iter_modules(protocol.__path__)}


def _probe_report(probe: str) -> dict:
    """Run ``probe`` in a fresh interpreter without Django settings; its JSON report."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    root = Path(protocol.__file__).resolve().parents[2]
    completed = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=root,
        env={**env, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_importing_every_protocol_module_never_imports_django() -> None:
    """STYLE.md "Pure core": missionweave.protocol and all its submodules import no Django."""
    report = _probe_report(_PROBE)
    assert set(report["modules"]) == _submodules()
    assert len(report["modules"]) >= 10
    assert report["django"] == []


_CLIENT_PROBE = """
import importlib, json, pkgutil, sys
import missionweave.client as client
names = [f"missionweave.client.{m.name}" for m in pkgutil.iter_modules(client.__path__)]
for name in names:
    importlib.import_module(name)
django = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
print(json.dumps({"modules": names, "django": django}))
"""


def test_importing_the_agent_client_never_imports_django() -> None:
    """Issue 5 item 5: the agent client (``missionweave.client``) is pure Python, like the
    protocol core it reuses: an agent runs it without Django installed or configured."""
    report = _probe_report(_CLIENT_PROBE)
    assert {
        "missionweave.client.agent",
        "missionweave.client.feed",
        "missionweave.client.stream",
    } <= set(report["modules"])
    assert report["django"] == []
