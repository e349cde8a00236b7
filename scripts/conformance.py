"""Generate ``docs/conformance.md``: each R-ID → the code that cites it and the tests that prove it.

The table is derived, not hand-kept, so it cannot drift: code cites the rule it enforces in a
comment or docstring (``# R11.3-05: …``), tests put the R-ID in their docstring.
``tests/test_conformance_doc.py`` fails when the committed page differs from a fresh run.

    python scripts/conformance.py            # rewrite docs/conformance.md
    python scripts/conformance.py --check    # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC_DIR = ROOT / "docs" / "spec"
SPEC = SPEC_DIR / "MWP-requirements.md"
WIRE_CONTRACT = SPEC_DIR / "wire.md"
OUTPUT = ROOT / "docs" / "conformance.md"
RID = re.compile(r"R(?:0|1[0-9](?:\.[0-9])?)-[0-9]{2}")
WIRE = re.compile(r"wire(?:\.md )?§[0-9]+")
WIRE_HEADING = re.compile(r"^## ([0-9]+)\. (.+)$")
STATEMENT = re.compile(r"^- \*\*(R[0-9.]+-[0-9]{2})\*\*\s*(.*)$")
TABLE_ROW = re.compile(r"^\| (R10\.2-[0-9]{2}) \| (.*)$")

# Where each rule that nothing cites yet is to be built: the open issue that owns it.
WORKER_RUNTIME = "issue 14 (worker runtime)"
PLANNED = [
    # the global scheduler that must not read confidential content is the worker runtime's
    ("R13.3-08", WORKER_RUNTIME),
    ("R0-", WORKER_RUNTIME),
    ("R11.1-", WORKER_RUNTIME),
    ("R11.2-", WORKER_RUNTIME),
    ("R11.3-11", WORKER_RUNTIME),
    ("R11.3-12", WORKER_RUNTIME),
    ("R10.3-08", WORKER_RUNTIME),
    ("R10.3-10", WORKER_RUNTIME),
    ("R11.4-03", WORKER_RUNTIME),
    ("R11.4-07", WORKER_RUNTIME),
    ("R16-13", WORKER_RUNTIME),
    ("R", "not cited yet"),
]


def wire_sections(contract: Path) -> dict[str, str]:
    """``wire§N`` → the heading of section N of the wire contract, in document order."""
    sections: dict[str, str] = {}
    for line in contract.read_text(encoding="utf-8").splitlines():
        match = WIRE_HEADING.match(line)
        if match:
            sections[f"wire§{match.group(1)}"] = match.group(2).strip()
    return sections


def requirements(spec: Path) -> list[tuple[str, str]]:
    """(R-ID, its text shortened) in document order."""
    found: list[tuple[str, str]] = []
    for line in spec.read_text(encoding="utf-8").splitlines():
        match = STATEMENT.match(line) or TABLE_ROW.match(line)
        if match:
            text = re.sub(r"\*\*|`|\[ambiguous:.*?\]", "", match.group(2)).strip(" |")
            text = re.sub(r"\s*\|\s*", " · ", text)
            text = re.sub(r"\(MWP-WRK-\d+\)\s*|\(no keyword\)\s*|\*", "", text).strip()
            found.append((match.group(1), text[:110] + ("…" if len(text) > 110 else "")))
    return found


def code_citations(roots: list[Path], pattern: re.Pattern[str] = RID) -> dict[str, list[str]]:
    cited: dict[str, set[str]] = defaultdict(set)
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            relative = path.relative_to(ROOT).as_posix()
            for rid in set(pattern.findall(path.read_text(encoding="utf-8"))):
                cited[rid.replace(".md ", "")].add(relative)
    return {rid: sorted(paths) for rid, paths in cited.items()}


def citing_tests(root: Path, pattern: re.Pattern[str] = RID) -> dict[str, list[str]]:
    """R-ID → ``path::test`` for every test function whose name or docstring cites it."""
    cited: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        relative = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                text = node.name + " " + (ast.get_docstring(node) or "")
                for rid in sorted({found.replace(".md ", "") for found in pattern.findall(text)}):
                    cited[rid].append(f"{relative}::{node.name}")
    return cited


def planned(rid: str) -> str:
    return next(where for prefix, where in PLANNED if rid.startswith(prefix))


def unknown_citations(spec: Path, contract: Path) -> list[str]:
    """Citations in code or tests of an R-ID or wire section the spec does not have (a typo
    or a renumbering would otherwise leave a rule silently unproven)."""
    known = {rid for rid, _ in requirements(spec)} | set(wire_sections(contract))
    found: list[str] = []
    for pattern in (RID, WIRE):
        code = code_citations([ROOT / "missionweave", ROOT / "apps"], pattern)
        tests = citing_tests(ROOT / "tests", pattern)
        for rid in sorted(set(code) | set(tests)):
            if rid not in known:
                where = [*code.get(rid, []), *tests.get(rid, [])]
                found.append(f"{rid}: {', '.join(where[:3])}")
    return found


def render(spec: Path, contract: Path = WIRE_CONTRACT) -> str:
    code = code_citations([ROOT / "missionweave", ROOT / "apps"])
    tests = citing_tests(ROOT / "tests")
    rows = requirements(spec)
    enforced = sum(1 for rid, _ in rows if rid in code and rid in tests)
    lines = [
        "# Conformance: each requirement → code → tests",
        "",
        "Generated by `python scripts/conformance.py` from `docs/spec/MWP-requirements.md`,",
        "the sections of `docs/spec/wire.md`, the R-IDs",
        "cited in `missionweave/` and `apps/`, and the R-IDs in test names and docstrings under",
        "`tests/`.",
        "`tests/test_conformance_doc.py` keeps it current. Rules of the wire contract that have no",
        "R-ID are cited as `wire§N`; `docs/protocol.md` describes them.",
        "",
        f"{enforced} of {len(rows)} requirements are cited by code and proven by tests so far.",
        "",
        "| R-ID | rule | code | tests |",
        "|---|---|---|---|",
    ]
    for rid, text in rows:
        code_cell = "<br>".join(f"`{path}`" for path in code.get(rid, [])) or f"— ({planned(rid)})"
        test_list = tests.get(rid, [])
        shown = test_list[:6]
        test_cell = "<br>".join(f"`{name}`" for name in shown) or "—"
        if len(test_list) > len(shown):
            test_cell += f"<br>… and {len(test_list) - len(shown)} more"
        lines.append(f"| {rid} | {text.replace('|', '/')} | {code_cell} | {test_cell} |")
    lines += [
        "",
        "## The wire contract",
        "",
        "| section | rule | code | tests |",
        "|---|---|---|---|",
    ]
    wire_code = code_citations([ROOT / "missionweave", ROOT / "apps"], WIRE)
    wire_tests = citing_tests(ROOT / "tests", WIRE)
    for section, text in wire_sections(contract).items():
        code_cell = "<br>".join(f"`{path}`" for path in wire_code.get(section, [])) or "—"
        test_list = wire_tests.get(section, [])
        test_cell = (
            f"{len(test_list)} tests, e.g. " + "<br>".join(f"`{name}`" for name in test_list[:4])
            if test_list
            else "—"
        )
        lines.append(f"| {section} | {text} | {code_cell} | {test_cell} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is out of date")
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--wire", type=Path, default=WIRE_CONTRACT)
    args = parser.parse_args()
    page = render(args.spec, args.wire)
    if args.check:
        unknown = unknown_citations(args.spec, args.wire)
        if unknown:
            print("cited, but not in docs/spec/:\n  " + "\n  ".join(unknown))
            return 1
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != page:
            print("docs/conformance.md is out of date: run python scripts/conformance.py")
            return 1
        return 0
    OUTPUT.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
