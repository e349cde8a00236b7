"""What the forms that create and end work share (issue 36 §5): who may, in words, the
optional short id field, and a refusal's field paths turned into errors next to the fields
that caused them.

Create a mission, add a WorkItem from a contract, cancel a WorkItem and send work back at the
final approval each live in a module of their own; this one only holds the two questions
they all ask. Whether a person may is asked of the write path's own rules
(``preview.permitted``: the command table's roles, judged as the write path judges them),
never decided here; a refusal keeps its wire.md §8 code, R-ID and message for the collapsed
technical details.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django import forms
from django.http import HttpRequest

from apps.ledger import preview
from apps.ledger.write_path import Caller
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN

from .role_words import who_can

#: ``who_can`` lives in ``role_words`` (every screen words roles the same way); the forms
#: ask it of this module with the rest
__all__ = [
    "FieldProblem",
    "errors_by_field",
    "field_problems",
    "mark_fields",
    "may",
    "short_id_field",
    "who_can",
]


def may(request: HttpRequest, group: str, command: str) -> bool:
    """Whether the signed-in person's roles in ``group`` may issue ``command`` now, as the
    write path would judge them (a reason to show a form, never a permission)."""
    return command in preview.permitted(Caller.for_user(request.user), group, [command])


def short_id_field() -> forms.RegexField:
    """The optional short id a person may give what they create (a mission, a WorkItem):
    the protocol's identifier pattern (``ID_PATTERN``); left empty, the form makes one up."""
    return forms.RegexField(
        label="Short id (optional)",
        regex=ID_PATTERN,
        max_length=100,
        required=False,
        error_messages={"invalid": "use letters, digits, dots, dashes, underscores or colons"},
    )


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


def mark_fields(form: forms.Form, error: ProtocolError, fields: Mapping[str, str]) -> bool:
    """Put each of the refusal's problems that names one of ``fields`` beside that field of
    the bound ``form`` (``errors_by_field``); whether any was placed."""
    placed, _unplaced = errors_by_field(error, fields)
    for name, problems in placed.items():
        for problem in problems:
            form.add_error(name, problem)
    return bool(placed)
