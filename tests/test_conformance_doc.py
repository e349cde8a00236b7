"""docs/conformance.md is generated from the spec, the code and the tests; it must be current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_conformance_page_matches_the_code_and_tests() -> None:
    """docs/conformance.md maps each R-ID to the code and tests enforcing it, in every change."""
    result = subprocess.run(
        [sys.executable, "scripts/conformance.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
