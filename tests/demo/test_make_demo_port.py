"""``make demo PORT=8101`` (issue 38 §4): the demo serves on the port asked for, since 8000 is
often taken; without ``PORT`` it stays on 8000. ``make -n`` prints the recipe without running
it, so this reads what ``make demo`` would run, not a copy of the Makefile's text."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _demo_recipe(*arguments: str) -> str:
    return subprocess.run(
        ["make", "-n", "-o", "bootstrap", "demo", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_make_demo_passes_the_port_asked_for_to_the_demo_command() -> None:
    assert "manage.py demo --port 8101" in _demo_recipe("PORT=8101")


def test_make_demo_serves_on_8000_by_default() -> None:
    assert "manage.py demo --port 8000" in _demo_recipe()
