"""The demo's coordinator agent: it plans missions, offers their work and judges results.

Every beat it reads what happened in both groups (``GroupView``) and decides, for each
WorkItem, the next step that is the coordinator's to take — the workers, the reviewer and the
people take theirs:

- **planning** (R10.2-15..18): when too little work can move, a new mission arrives in the
  main group. Every other one is a DAG across both groups: its ``gather`` WorkItem is
  delegated to a child mission in the research lab (``mission.create_child``), which fetches
  two sources in parallel and compiles them; once a person approves the child mission,
  ``gather`` is verified and the main group's ``write`` (which depends on it) can start;
- **offers** (R10.3-01..12): open work whose dependencies are verified goes to the group's
  workers — urgent work to all at once, other work one at a time — and again when every
  offer was turned down or ran out, or a failed attempt may be retried (R10.2-20);
- **judging** (R13.2-03 step 4): once the authority's checks and the reviewer agent have
  answered, the coordinator accepts the result or fails it with the criteria that did not
  pass. A result with a ``human_review`` criterion is never the coordinator's: a person
  accepts it at the review screen (step 5). A person's running reservation holds the
  decision for them, and acceptance waits for the authority's checks: the coordinator asks
  the protocol's own ``acceptance_refusal`` / ``decision_refusal`` and waits while they say
  ``REVIEW_RESERVED`` or ``CHECKS_PENDING`` (issue 34), rather than racing the person;
- **questions** (R10.1-02..04): a worker's essential question waits for a person (a mission
  owner answers it on the WorkItem page); after a minute the coordinator answers it itself;
- **blockers** (R11.4-04, R11.4-06, R10.2-10): a worker that blocked for an answer gets it
  after a while: the item goes back to its owner's queue and resumes from its checkpoint;
- **changes asked** (R10.2-21, issue 36 §5): for each WorkItem a mission owner's open change
  request names, a replacement on the same terms with the note added to its goal
  (``change_requests``), so the mission goes round again;
- **refused execution** (R10.2-06): a revision a mission owner refused waits for a corrected
  contract or a cancel — a person's call — so the coordinator neither offers it again nor
  counts it as waiting for an approval.

To keep the dashboard worth visiting, one WorkItem at a time waits for a person's execution
approval (R10.2-06) and one result at a time for a person's review; no new mission is planned
while ``READY_WAITING_MAX`` of its finished missions wait for a person's final approval.
Nothing here decides what is allowed: the authority does, and a refusal is a line in the log
and a new decision next beat. Time and dice come in as arguments, so the plan is a pure
function of the views.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from missionweave.client import AgentClient
from missionweave.protocol import states as S
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.assessment import (
    ACCEPT_RESULT,
    FAIL,
    decision_refusal,
    live_reservation,
)
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import Offer, WorkItem

from .change_requests import answer_change_requests
from .contracts import (
    authorize_body,
    contract,
    failure_evidence,
    mission_body,
    offer_body,
    review_body,
    source_bytes,
)
from .organisation import GROUP, LAB
from .steps import Step, send
from .view import GroupState, GroupView

#: a live contract's deadline
HORIZON = timedelta(days=7)
OFFER_TTL = timedelta(minutes=2)
#: a failed WorkItem is offered again until it has been started this many times
MAX_ATTEMPTS = 3
#: a new mission arrives when fewer WorkItems than this can move
MOVING_TARGET = 4
#: and while fewer of the coordinator's finished missions than this wait for a person's final
#: approval: a coordinator that kept planning would bury the mission owners in missions to
#: approve (the demo told each of them of ten in its first five minutes)
READY_WAITING_MAX = 3
#: how long a claim may wait for the authority to ask a reviewer before the coordinator does
REVIEW_PATIENCE = timedelta(seconds=30)
#: how long a worker's blocker waits for the coordinator's answer (long enough to see it)
BLOCK_PATIENCE = timedelta(seconds=20)
#: how long a worker's essential question waits for a person before the coordinator answers
QUESTION_PATIENCE = timedelta(seconds=60)
ANSWER = "Keep them anonymous: name the kind of customer, never the customer."
URGENT_SHARE = 0.25
HUMAN_REVIEW_SHARE = 0.35
MISSION_PREFIX = "m-"
#: a mission whose ``gather`` is delegated to a child mission in the lab
CROSS_PREFIX = "mx-"
GOALS = (
    "Triage the new support tickets",
    "Draft release notes for the next version",
    "Check the nightly benchmark results for regressions",
    "Summarise this week's customer interviews",
    "Review the open pull requests for security issues",
    "Collect the citations for the research memo",
    "Plan the data migration of the archive",
)
#: (suffix, goal, depends on) of a main-group mission and of a lab child mission
MAIN_PLAN = (("gather", "Gather the sources: {goal}", ()), ("write", "Write it up: {goal}", (0,)))
LAB_PLAN = (
    ("fetch-a", "Fetch the first half of the sources: {goal}", ()),
    ("fetch-b", "Fetch the second half of the sources: {goal}", ()),
    ("compile", "Compile the sources: {goal}", (0, 1)),
)


@dataclass(frozen=True)
class Scene:
    """What one beat sees: the coordinator, both groups' views, the time and the dice."""

    me: str
    views: Mapping[str, GroupState]
    now: datetime
    rng: random.Random
    #: when the coordinator first saw each WorkItem's claim unreviewed (kept across beats)
    claimed_since: dict[str, datetime] = field(default_factory=dict)

    def later(self, delta: timedelta) -> str:
        return format_timestamp(self.now + delta)

    def items(self, group: str) -> list[WorkItem]:
        return sorted(self.views[group].work_items(), key=lambda item: item.id)


def plan(scene: Scene) -> list[Step]:
    """Every step the coordinator takes this beat, in order."""
    steps: list[Step] = []
    moving = 0
    for group in scene.views:
        for item in scene.items(group):
            next_steps = next_for(scene, group, item)
            moving += bool(next_steps) or _in_hand(item, scene.now)
            steps += next_steps
        steps += authorize_new_missions(scene, group)
        # issue 36 §5: a mission owner's change request is answered with replacements
        steps += answer_change_requests(
            group,
            scene.views[group],
            lambda item: item.authorized_by == scene.me,
            now=scene.now,
            fresh_deadline=scene.later(HORIZON),
        )
        steps += summarise_missions(scene, group)
    if (
        moving < MOVING_TARGET
        and not steps
        and waiting_for_final_approval(scene) < READY_WAITING_MAX
    ):
        steps += new_mission(scene)
    return steps


def waiting_for_final_approval(scene: Scene) -> int:
    """The coordinator's active missions, in either group, whose every WorkItem has ended:
    each waits for a person's final approval (R10.2-22), which no agent gives."""
    waiting = 0
    for view in scene.views.values():
        for mission in view.missions():
            if mission.state != "active" or not mission.work_items or not _ours(mission.id):
                continue
            items = [view.work_item(item) for item in mission.work_items]
            waiting += all(item is not None and item.state not in S.UNFINISHED for item in items)
    return waiting


def _in_hand(item: WorkItem, now: datetime) -> bool:
    """Work the workers, the authority or the reviewer are moving now (the coordinator waits
    for it) — not work that waits for a person (a review, a reservation, an approval, a
    corrected contract)."""
    if item.state == S.SUBMITTED:
        return not _needs_a_person(item) and live_reservation(item, now) is None
    if item.state == S.QUEUED:
        return item.refusal is None and len(item.approvals) >= approvals_required(item)
    return item.state in (S.OFFERED, S.ACTIVE)


def _needs_a_person(item: WorkItem) -> bool:
    return any(c["method"] == "human_review" for c in item.contract["acceptance_criteria"])


def next_for(scene: Scene, group: str, item: WorkItem) -> list[Step]:
    if item.refusal is not None:
        return []  # R10.2-06: it waits for a corrected contract or a cancel, a person's call
    if item.open_questions and item.state in (S.OPEN, S.OFFERED):
        answers = answer_questions(scene, group, item)
        if answers or (item.state == S.OFFERED and live_offers(item, scene.now)):
            return answers
    if item.state == S.OPEN and item.child is None and _dependencies_met(scene, group, item):
        return offer(scene, group, item)
    if item.state == S.OFFERED and not live_offers(item, scene.now):
        return offer(scene, group, item)  # every offer was turned down or ran out
    if item.state == S.FAILED and item.attempts < MAX_ATTEMPTS:
        return offer(scene, group, item)  # a failure leaves only through a new offer
    if item.state == S.SUBMITTED:
        return judge(scene, group, item)
    if item.state == S.BLOCKED and item.child is None:
        return unblock(scene, group, item)
    return []


def answer_questions(scene: Scene, group: str, item: WorkItem) -> list[Step]:
    """A worker's essential question (R10.1-02..04) is a person's to answer first: a mission
    owner sees it on the WorkItem page. Nobody did after ``QUESTION_PATIENCE``: the
    coordinator answers it, and the worker accepts the offer."""
    steps = []
    for question in item.open_questions:
        key = f"{group}/{item.id}/{question}"
        if scene.now - scene.claimed_since.setdefault(key, scene.now) < QUESTION_PATIENCE:
            continue
        del scene.claimed_since[key]
        body = {"work_item": item.id, "text": ANSWER, "in_reply_to": question}
        steps.append(Step(group, "work.message", body))
    return steps


def unblock(scene: Scene, group: str, item: WorkItem) -> list[Step]:
    """A worker blocked for the coordinator's answer (R11.4-04, R11.4-06): after a while, the
    answer is given and the item goes back to its owner's queue (R10.2-10); it resumes from
    the checkpoint it blocked at."""
    key = f"{group}/{item.id}/blocked"
    if scene.now - scene.claimed_since.setdefault(key, scene.now) < BLOCK_PATIENCE:
        return []
    del scene.claimed_since[key]
    return [Step(group, "work.unblock", {"work_item": item.id, "to": S.QUEUED})]


def offer(scene: Scene, group: str, item: WorkItem) -> list[Step]:
    """Urgent work to every worker of the group at once (R10.3-05), other work one worker
    at a time in a shuffled order; a worker that cannot honour it says so (R10.3-08)."""
    workers = scene.views[group].members("worker")
    if not workers:
        return []
    urgent = item.contract.get("urgency") in ("high", "critical")
    body = offer_body(
        item.id,
        scene.rng.sample(workers, len(workers)),
        mode="urgent" if urgent else "sequential",
        expires_at=scene.later(OFFER_TTL),
        first=len(item.offers) + 1,
        group=group,
    )
    return [Step(group, "work.offer", body)]


def judge(scene: Scene, group: str, item: WorkItem) -> list[Step]:
    """R13.2-03 step 4: once nothing is still being checked or reviewed, accept when every
    criterion passed, fail with those that did not. Never a ``human_review`` result, nor one
    a person has reserved, nor one the authority still owes a check (issue 34)."""
    if _needs_a_person(item) or item.review is None:
        return []
    status = {name: entry["status"] for name, entry in item.review["criteria"].items()}
    if "claimed" in status.values():
        return ask_reviewer(scene, group, item, status)
    if any(value in ("checking", "awaiting_review") for value in status.values()):
        return []  # the authority or the reviewer has not answered yet
    failing = sorted(name for name, value in status.items() if value in ("fail", "inconclusive"))
    command = FAIL if failing else ACCEPT_RESULT
    if decision_refusal(item, scene.me, scene.now, command) is not None:
        return []  # a person's reservation holds it, or the checks are owed: wait (issue 34)
    if failing:
        body = {
            "work_item": item.id,
            "evidence": failure_evidence(item.contract, failing, scene.me),
        }
        return [Step(group, "work.fail", body)]
    return [Step(group, "work.accept_result", review_body(item.id, item.contract))]


def ask_reviewer(scene: Scene, group: str, item: WorkItem, status: Mapping[str, str]) -> list[Step]:
    """Only the worker's claim on an ``agent_review`` criterion and, ``REVIEW_PATIENCE``
    after the coordinator first saw it, still nobody asked (the group had no default reviewer
    then): the coordinator asks one (R13.2-03 step 3). The wait leaves the authority, which
    asks right after its checks, the first word. Any other claimed criterion waits for a
    person."""
    review = item.review or {}
    methods = {c["id"]: c["method"] for c in item.contract["acceptance_criteria"]}
    claimed = [n for n, v in status.items() if v == "claimed" and methods.get(n) == "agent_review"]
    reviewers = [r for r in scene.views[group].members("reviewer") if r != item.owner]
    if not claimed or review.get("requests") or not reviewers:
        return []
    key = f"{group}/{item.id}/{review.get('submission')}"
    if scene.now - scene.claimed_since.setdefault(key, scene.now) < REVIEW_PATIENCE:
        return []
    body = {
        "work_item": item.id,
        "reviewer": reviewers[0],
        "criteria": claimed,
        "submission": review["submission"],
    }
    return [Step(group, "review.request", body)]


def authorize_new_missions(scene: Scene, group: str) -> list[Step]:
    """The WorkItems of each mission of this coordinator that has none yet: a new main-group
    mission, or a child mission the lab just received (its ``mission.created`` comes from
    the authority's follow-up, so it is planned on the beat after it arrives)."""
    steps: list[Step] = []
    gate = not _awaiting_people(scene)
    for mission in sorted(scene.views[group].missions(), key=lambda m: m.created_sequence):
        if mission.work_items or mission.state != "active" or not _ours(mission.id):
            continue
        steps += authorize_plan(scene, group, mission.id, mission.goal, gate=gate)
        gate = False
    return steps


def _ours(mission: str) -> bool:
    return mission.startswith((MISSION_PREFIX, CROSS_PREFIX))


def authorize_plan(scene: Scene, group: str, mission: str, goal: str, *, gate: bool) -> list[Step]:
    """The mission's plan, each WorkItem depending on those it names; with ``gate`` the
    first asks a person for execution approval (R10.2-06). In a cross-group mission
    ``gather`` becomes a child mission in the lab (R10.2-15)."""
    layout = LAB_PLAN if group == LAB else MAIN_PLAN
    human = group == GROUP and not _review_waiting(scene)
    human = human and scene.rng.random() < HUMAN_REVIEW_SHARE
    ids = [f"{mission}-{suffix}" for suffix, _goal, _deps in layout]
    steps: list[Step] = []
    for index, (_suffix, item_goal, deps) in enumerate(layout):
        text = item_goal.format(goal=goal)
        terms = contract(
            text,
            scene.later(HORIZON),
            urgency="high" if scene.rng.random() < URGENT_SHARE else "normal",
            approval=gate and index == 0,
            human_review=human and index == len(layout) - 1,
        )
        body = authorize_body(ids[index], mission, terms, [ids[d] for d in deps])
        steps.append(Step(group, "work.authorize", body, uploads=(source_bytes(text),)))
    if group == GROUP and mission.startswith(CROSS_PREFIX):
        child = {
            "mission": f"{mission}-lab",
            "group": LAB,
            "goal": f"Research for: {goal}",
            "budgets": mission_body("", goal)["budgets"],
        }
        body = {"work_item": ids[0], "child": child, "failure_policy": "block_parent"}
        steps.append(Step(group, "mission.create_child", body))
    return steps


def summarise_missions(scene: Scene, group: str) -> list[Step]:
    """R13.3: once a mission's plan is in the log, its context package (version 1): the
    WorkItems, the plan as a decision, the deadline as a constraint — what an agent joining
    the work reads instead of the whole history; the mission page lists it."""
    view = scene.views[group]
    steps: list[Step] = []
    for mission in view.missions():
        package_id = f"ctx-{mission.id}"
        if not _ours(mission.id) or mission.state != "active" or view.has_context(package_id):
            continue
        items = sorted(item.id for item in view.work_items() if item.mission == mission.id)
        if not items:
            continue
        package = {
            "id": package_id,
            "version": 1,
            "mission": mission.id,
            "work_items": items,
            "event_range": [1, view.sequence],
            "artifacts": [],
            "decisions": [f"Plan: {', then '.join(_plan_words(group))}."],
            "constraints": [f"Finish within {HORIZON.days} days."],
            "open_questions": [],
            "generator": scene.me,
            "created_at": format_timestamp(scene.now),
        }
        steps.append(Step(group, "context.publish", {"package": package}))
    return steps


def _plan_words(group: str) -> list[str]:
    layout = LAB_PLAN if group == LAB else MAIN_PLAN
    return [goal.split(":")[0].lower() for _suffix, goal, _deps in layout]


def new_mission(scene: Scene) -> list[Step]:
    """A new mission in the main group; a cross-group one unless the lab is still busy
    with the last (its child mission waits for a person's approval)."""
    count = sum(1 for m in scene.views[GROUP].missions() if _ours(m.id))
    lab_busy = any(m.state == "active" for m in scene.views[LAB].missions())
    prefix = CROSS_PREFIX if count % 2 == 1 and not lab_busy else MISSION_PREFIX
    goal = f"{GOALS[count % len(GOALS)]} (#{count + 1})"
    mission = f"{prefix}{uuid.UUID(int=scene.rng.getrandbits(128)).hex[:12]}"
    return [Step(GROUP, "mission.create", mission_body(mission, goal))]


# --- reading the views --------------------------------------------------------------------


def _dependencies_met(scene: Scene, group: str, item: WorkItem) -> bool:
    view = scene.views[group]
    return all(
        (dep := view.work_item(name)) is not None and dep.state == S.VERIFIED
        for name in item.depends_on
    )


def live_offers(item: WorkItem, now: datetime) -> list[Offer]:
    """Open, unexpired offers of the current round, in rank order."""
    return sorted(
        (
            o
            for o in item.offers
            if o.status == "open"
            and o.revision == item.revision
            and parse_timestamp(o.expires_at) > now
        ),
        key=lambda o: o.rank,
    )


def _awaiting_people(scene: Scene) -> bool:
    """Whether some WorkItem already waits for a person's execution approval (a refused one
    waits for a corrected contract instead)."""
    return any(
        item.state in S.UNFINISHED
        and item.refusal is None
        and len(item.approvals) < approvals_required(item)
        for view in scene.views.values()
        for item in view.work_items()
    )


def _review_waiting(scene: Scene) -> bool:
    """Whether some unfinished WorkItem has a criterion only a person may judge."""
    return any(
        item.state in S.UNFINISHED and _needs_a_person(item)
        for item in scene.views[GROUP].work_items()
    )


class Coordinator:
    """The coordinator's process: one beat every ``interval`` seconds (``python -m
    missionweave.demo coordinator``)."""

    def __init__(self, client: AgentClient, groups: tuple[str, ...], rng: random.Random) -> None:
        self.client = client
        self.views = {group: GroupView(client, group) for group in groups}
        self.rng = rng
        self.claimed_since: dict[str, datetime] = {}

    def beat(self) -> list[str]:
        for view in self.views.values():
            view.refresh()
        now = datetime.now(UTC)
        scene = Scene(self.client.principal, self.views, now, self.rng, self.claimed_since)
        return [send(self.client, step) for step in plan(scene)]
