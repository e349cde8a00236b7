"""The worker runtime imports no Django and no ``apps`` (R0-01 isolation; issue 14's
architecture rule): it runs on a machine that has no server code at all.

Every module under ``missionweave/worker`` is parsed, not imported, so the rule is checked
for every import statement — at module level, inside functions, and ``import_module`` calls
with a literal name — whether or not that code path ever runs in a test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import missionweave.worker as worker

PACKAGE = "missionweave.worker"
WORKER_DIR = Path(worker.__file__).resolve().parent
FORBIDDEN = ("django", "apps")
#: the only first-party packages the runtime may use (issue 14 §1)
ALLOWED_FIRST_PARTY = ("missionweave.protocol", "missionweave.client", PACKAGE)


def _modules() -> list[Path]:
    return sorted(WORKER_DIR.rglob("*.py"))


def _package_of(path: Path) -> str:
    relative = path.relative_to(WORKER_DIR).with_suffix("")
    parts = [PACKAGE, *relative.parts]
    if parts[-1] == "__init__":
        parts.pop()
    else:
        parts.pop()  # a module's relative imports start from its package
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    """Every module name ``path`` imports, relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path).split(".")
                base = base[: len(base) - (node.level - 1)]
                names.append(".".join([*base, node.module] if node.module else base))
            else:
                names.append(node.module or "")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.append(node.args[0].value)
    return names


def _top(name: str) -> str:
    return name.split(".", maxsplit=1)[0]


def test_the_worker_package_has_modules_to_check() -> None:
    """The walk sees the package (an empty walk would pass vacuously)."""
    paths = {path.name for path in _modules()}
    assert {"__init__.py", "queues.py", "local_store.py"} <= paths


def test_no_worker_module_imports_django_or_apps() -> None:
    """R0-01, issue 14 §1: no import of ``django`` or ``apps``, anywhere in the package."""
    offending = {
        f"{path.relative_to(WORKER_DIR)}: {name}"
        for path in _modules()
        for name in _imports(path)
        if _top(name) in FORBIDDEN
    }
    assert offending == set()


def test_worker_modules_use_only_the_protocol_core_and_the_client_of_missionweave() -> None:
    """Issue 14 §1: of missionweave itself, only ``missionweave.protocol``,
    ``missionweave.client`` and the worker's own modules (never settings, urls, celery...)."""
    offending = {
        f"{path.relative_to(WORKER_DIR)}: {name}"
        for path in _modules()
        for name in _imports(path)
        if _top(name) == "missionweave"
        and not any(name == ok or name.startswith(ok + ".") for ok in ALLOWED_FIRST_PARTY)
    }
    assert offending == set()


def test_the_import_walk_sees_relative_and_dynamic_imports(tmp_path: Path) -> None:
    """The checker itself: a relative import resolves into the package; a function-level
    import and a literal ``import_module`` are found."""
    probe = WORKER_DIR / "queues.py"
    assert "missionweave.client.errors" in _imports(probe)
    source = tmp_path / "probe.py"
    source.write_text(
        "def f():\n"
        "    import django.conf\n"
        "    import importlib\n"
        "    importlib.import_module('apps.ledger')\n"
    )
    assert [name for name in _imports(source) if _top(name) in FORBIDDEN] == [
        "django.conf",
        "apps.ledger",
    ]
