"""A clone of this repository needs nothing beside it: the spec it cites lives in docs/spec/.

A user's clone has no sibling folders, so a check that reads a file outside the repository
passes for us and fails for them. These tests run the spec-reading checks from a copy of the
repository that has nothing beside it.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
# Spelled in two parts so that this file does not match its own search.
OUTSIDE = ("../" + "shared", "shared" + "/spec")
# Files that may say where the spec came from without reading it from there.
PROVENANCE = {"docs/spec/README.md", "tests/test_self_contained.py"}


def _repository_files() -> list[str]:
    """What a clone holds: the tracked files, plus new ones not yet committed (not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    names = [name for name in listed.stdout.decode().split("\0") if name]
    return [name for name in names if (ROOT / name).is_file()]


def _load_script(name: str) -> ModuleType:
    """A module of scripts/ (not a package: the scripts run as files)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _copy_alone(destination: Path) -> Path:
    """A copy of the repository in a folder that holds nothing else."""
    copy = destination / "missionweave"
    for name in _repository_files():
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return copy


def test_the_spec_reading_checks_pass_in_a_copy_with_nothing_beside_it(tmp_path: Path) -> None:
    """The conformance check (which reads docs/spec/) passes in a copy whose parent folder has
    nothing but the copy: no shared/ spec to fall back on."""
    copy = _copy_alone(tmp_path)
    assert sorted(path.name for path in copy.parent.iterdir()) == ["missionweave"]
    assert (copy / "docs/spec/MWP-requirements.md").is_file()
    assert (copy / "docs/spec/wire.md").is_file()

    result = subprocess.run(
        [sys.executable, "scripts/conformance.py", "--check"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr


def test_no_file_of_the_repository_reads_the_spec_from_outside_it() -> None:
    """Code, tests, scripts and docs cite docs/spec/, never a folder beside the clone."""
    offenders = []
    for name in _repository_files():
        if name in PROVENANCE:
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [f"{name}: {marker}" for marker in OUTSIDE if marker in text]

    assert offenders == []


def test_every_requirement_and_wire_section_cited_exists_in_the_repository_spec() -> None:
    """A citation of an R-ID or wire§N that docs/spec/ does not define fails the check: a
    typo must not leave a rule silently unproven."""
    conformance = _load_script("conformance")

    assert conformance.unknown_citations(conformance.SPEC, conformance.WIRE_CONTRACT) == []
