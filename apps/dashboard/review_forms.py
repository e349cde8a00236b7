"""The review form: one verdict and note per acceptance criterion, a summary, and what to do
with them. It only shapes what a person typed; the write path judges the command.

The fields are named per criterion (``verdict-<id>``, ``note-<id>``), so the same form works
with scripts off (every criterion on one page) and on (one criterion at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import QueryDict

from missionweave.protocol.identifiers import is_id

from .decision_forms import TEXT_LIMIT, too_long
from .review import VERDICT_LABELS, VERDICTS

#: what the person does with their verdicts
ACTIONS = ("accept", "send_back", "record")
NOTE_LIMIT = TEXT_LIMIT


@dataclass(frozen=True)
class Verdict:
    criterion: str
    verdict: str
    note: str

    def as_wire(self) -> dict[str, str]:
        return {"criterion": self.criterion, "verdict": self.verdict, "note": self.note}


@dataclass(frozen=True)
class ReviewSubmission:
    action: str
    verdicts: tuple[Verdict, ...]
    summary: str
    command_id: str | None
    then_next: bool


def parse_review(data: QueryDict, criteria: list[str]) -> tuple[ReviewSubmission | None, str]:
    """The person's review of ``criteria``, or ``None`` and what is wrong, in words."""
    action = data.get("action", "")
    if action not in ACTIONS:
        return None, "Choose to accept the result, send it back, or record your verdicts."
    verdicts: list[Verdict] = []
    missing: list[str] = []
    for criterion in criteria:
        verdict = data.get(f"verdict-{criterion}", "")
        note = data.get(f"note-{criterion}", "").strip()
        if len(note) > NOTE_LIMIT:
            return None, too_long(f"Your note on {criterion}", len(note), NOTE_LIMIT)
        if verdict not in VERDICTS:
            missing.append(criterion)
            continue
        verdicts.append(Verdict(criterion, verdict, note))
    if missing:
        return None, f"Give a verdict on every criterion (missing: {', '.join(missing)})."
    if action == "accept":
        failing = [v for v in verdicts if v.verdict != "pass"]
        if failing:
            labels = ", ".join(f"{v.criterion}: {VERDICT_LABELS[v.verdict]}" for v in failing)
            return None, (
                f"Only a result that passes every criterion is accepted ({labels}): "
                "send it back instead."
            )
    if action == "send_back" and all(v.verdict == "pass" for v in verdicts):
        return None, (
            "Every criterion passes: accept the result, or change a verdict to send it back."
        )
    summary = data.get("summary", "").strip()
    if len(summary) > NOTE_LIMIT:
        return None, too_long("Your summary", len(summary), NOTE_LIMIT)
    command_id = data.get("command_id", "")
    return (
        ReviewSubmission(
            action=action,
            verdicts=tuple(verdicts),
            summary=summary,
            command_id=command_id if is_id(command_id) else None,
            then_next=data.get("then_next") == "on",
        ),
        "",
    )


def review_payload(submission: ReviewSubmission) -> dict[str, Any]:
    """``work.accept_result``'s ``review`` (wire.md §9)."""
    return {
        "verdicts": [v.as_wire() for v in submission.verdicts],
        "summary": submission.summary,
    }


@dataclass(frozen=True)
class Draft:
    """What the person typed into the review form, as posted: shown again when the server
    did not act on it (in the form while it can still succeed, else as unsent verdicts)."""

    verdicts: dict[str, str]
    notes: dict[str, str]
    summary: str
    then_next: bool

    @property
    def empty(self) -> bool:
        return not (self.verdicts or any(self.notes.values()) or self.summary)

    def lines(self, criteria: list[str]) -> list[tuple[str, str, str]]:
        """``(criterion, verdict label, note)`` for each criterion the person touched."""
        return [
            (c, VERDICT_LABELS.get(self.verdicts.get(c, ""), "no verdict"), self.notes.get(c, ""))
            for c in criteria
            if c in self.verdicts or self.notes.get(c)
        ]


def posted_draft(data: QueryDict, criteria: list[str]) -> Draft:
    """The review form's fields as the person typed them, whatever is wrong with them."""
    return Draft(
        verdicts={
            c: data[f"verdict-{c}"] for c in criteria if data.get(f"verdict-{c}") in VERDICTS
        },
        notes={c: data.get(f"note-{c}", "") for c in criteria if data.get(f"note-{c}")},
        summary=data.get("summary", ""),
        then_next=data.get("then_next") == "on",
    )
