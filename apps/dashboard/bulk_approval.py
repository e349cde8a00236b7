"""Approving several missions at once from the inbox, with one comment (issue 37 §5).

Not a new command: each ticked mission gets its own ``mission.approve`` (R10.2-16,
R10.2-22), sent one after the other through the same door the final-approval screen uses
(``submit_as_human``), so each is authorised, decided and logged on its own and one refusal
stops nothing else. The result lists what passed and what was refused, the refusal in the
words the final-approval screen uses (``mission_reviews.refusal_sentence``).

Each command id is derived from the page's batch id and the mission: the same form posted
twice (a double click, a reload) replays every approval instead of repeating it (wire§3).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from django import forms

from apps.ledger.write_path import Caller, submit_as_human
from apps.registry.models import Membership
from apps.work.models import Mission
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN, is_id
from missionweave.protocol.memberships import Membership as MembershipState

from .decision_forms import TEXT_LIMIT
from .mission_reviews import refusal_sentence
from .triage import PAGE

APPROVE = "mission.approve"
#: at most one page of the section at once: the result page stays bounded too
MOST = PAGE


@dataclass(frozen=True)
class Pick:
    """A ticked mission: ``group|mission`` as the checkbox carries it."""

    group: str
    mission: str

    @property
    def value(self) -> str:
        return f"{self.group}|{self.mission}"

    @classmethod
    def parse(cls, value: str) -> Pick | None:
        group, _, mission = value.partition("|")
        return cls(group, mission) if is_id(group) and is_id(mission) else None


class BulkApproveForm(forms.Form):
    """One comment for every ticked mission, and the page's batch id (the ticked missions
    are read by :func:`picks_from`)."""

    comment = forms.CharField(required=False, max_length=TEXT_LIMIT, strip=False)
    batch = forms.RegexField(regex=ID_PATTERN, required=False)


def picks_from(values: Sequence[str]) -> tuple[list[Pick], str]:
    """The ticked missions, each once, or why they cannot be approved as posted."""
    if not values:
        return [], "Tick at least one mission to approve."
    picks = [Pick.parse(str(value)) for value in values]
    unique = list(dict.fromkeys(pick for pick in picks if pick is not None))
    if len(unique) != len(set(values)):
        return unique, "The page was out of date: reload it and tick the missions again."
    if len(unique) > MOST:
        return unique, f"Approve at most {MOST} missions at once."
    return unique, ""


@dataclass(frozen=True)
class Result:
    pick: Pick
    title: str
    #: the sentence for the person: what happened, or why not
    words: str
    error: ProtocolError | None = None

    @property
    def approved(self) -> bool:
        return self.error is None


def command_id(batch: str, pick: Pick) -> str:
    """The same ticked mission of the same page always gets the same command id."""
    digest = hashlib.sha256(f"{batch}|{pick.group}|{pick.mission}".encode()).hexdigest()
    return f"dash-bulk-{digest[:32]}"


def missions_approve(
    *, caller: Caller, picks: Sequence[Pick], comment: str, batch: str
) -> list[Result]:
    """``mission.approve`` for each of ``picks`` as ``caller``, one command each, in order."""
    memberships = {
        row.group_id: row.to_state()
        for row in Membership.objects.filter(
            principal=caller.principal, active=True, group_id__in={p.group for p in picks}
        )
    }
    titles = {
        (group, mission): goal
        for group, mission, goal in Mission.objects.filter(
            group_id__in={p.group for p in picks}, mission_id__in={p.mission for p in picks}
        ).values_list("group_id", "mission_id", "goal")
    }
    results = []
    for pick in picks:
        title = titles.get((pick.group, pick.mission), pick.mission)
        try:
            submit_as_human(
                caller=caller,
                group_id=pick.group,
                type_=APPROVE,
                body={"mission": pick.mission, "comment": comment},
                command_id=command_id(batch, pick),
            )
        except ProtocolError as error:
            words = _words(error, memberships.get(pick.group), pick.group)
            results.append(Result(pick, title, words, error))
            continue
        said = "Approved, with your comment." if comment.strip() else "Approved."
        results.append(Result(pick, title, said))  # under its goal: the id said nothing more
    return results


def _words(error: ProtocolError, membership: MembershipState | None, group_id: str) -> str:
    if membership is None:
        return "You are not a member of this mission's group (any more): nothing was recorded."
    return refusal_sentence(error, membership, group_id)
