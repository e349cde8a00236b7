"""What the forms that create and end work share (issue 36 §5): who may, in words, and a
refusal's field paths turned into errors next to the fields that caused them.

Create a mission, add a WorkItem from a contract, cancel a WorkItem and send work back at the
final approval each live in a module of their own; this one only holds the two questions
they all ask. Whether a person may is asked of the write path's own rules
(``preview.permitted``: the command table's roles, judged as the write path judges them),
never decided here; a refusal keeps its wire.md §8 code, R-ID and message for the collapsed
technical details.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.http import HttpRequest

from apps.ledger import preview
from apps.ledger.write_path import Caller
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ProtocolError

_ROLE_NAMES = {
    "admin": ("an admin", "admins"),
    "mission_owner": ("a mission owner", "mission owners"),
    "coordinator": ("a coordinator", "coordinators"),
    "worker": ("a worker", "workers"),
    "reviewer": ("a reviewer", "reviewers"),
    "observer": ("an observer", "observers"),
}


def _joined(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def who_can(command: str, doing: str, roles: Iterable[str]) -> str:
    """ "Only coordinators add WorkItems; you are a mission owner.", from the command table's
    roles (wire.md §9): the very roles the write path checks."""
    permitted = sorted(COMMANDS[command].roles)
    allowed = _joined([_ROLE_NAMES.get(r, ("", f"{r}s"))[1] for r in permitted])
    held = _joined([_ROLE_NAMES.get(r, (f"a {r}", ""))[0] for r in roles])
    return f"Only {allowed} {doing}; you are {held or 'not a member'}."


def may(request: HttpRequest, group: str, command: str) -> bool:
    """Whether the signed-in person's roles in ``group`` may issue ``command`` now, as the
    write path would judge them (a reason to show a form, never a permission)."""
    return command in preview.permitted(Caller.for_user(request.user), group, [command])


@dataclass(frozen=True)
class FieldProblem:
    """One bad field a refusal names: its JSON path and what is wrong with it."""

    path: str
    message: str
    #: the line of the typed text where the field is written, when a page can tell
    line: int | None = None


def field_problems(error: ProtocolError) -> list[FieldProblem]:
    """Every field the refusal names: ``CONTRACT_INVALID`` lists each bad field
    (``details.errors``), ``MALFORMED`` names one (``details.path``)."""
    details = error.details or {}
    listed = details.get("errors")
    if isinstance(listed, list):
        return [
            FieldProblem(str(item.get("path", "$")), str(item.get("message", "")))
            for item in listed
            if isinstance(item, Mapping)
        ]
    if isinstance(details.get("path"), str):
        return [FieldProblem(details["path"], error.message)]
    return []


def errors_by_field(
    error: ProtocolError, fields: Mapping[str, str]
) -> tuple[dict[str, list[str]], list[FieldProblem]]:
    """The refusal's problems placed next to the form's fields: ``fields`` maps a JSON path
    (``$.goal``) to a field name; what names no field is returned apart, to show above."""
    placed: dict[str, list[str]] = {}
    unplaced: list[FieldProblem] = []
    for problem in field_problems(error):
        name = fields.get(problem.path)
        if name is None:
            unplaced.append(problem)
        else:
            placed.setdefault(name, []).append(problem.message)
    return placed, unplaced
