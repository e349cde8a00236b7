"""The demo's coordinator and reviewer agents decide from the group's log and act through the
write path (``missionweave/demo/coordinator.py``, ``reviewer.py``), driven in-process
(``harness.py``): what they send, and that the authority accepts it."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from apps.demo import cast, story
from apps.work import reviews
from apps.work.models import Mission, WorkItem
from apps.work.tasks import STORE
from missionweave.demo import coordinator, reviewer
from missionweave.demo.contracts import OUTPUT
from missionweave.demo.organisation import GROUP, LAB, workers_of
from missionweave.protocol.missions.model import Mission as MissionState
from missionweave.protocol.work.items import WorkItem as WorkItemState
from tests.demo import harness

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path) -> cast.DemoWorld:
    built = cast.demo_seed(keys_dir=tmp_path, password="pw")
    story.seed_work(built)
    return built


def states(group: str = GROUP) -> dict[str, str]:
    return dict(WorkItem.objects.filter(group_id=group).values_list("work_item_id", "state"))


def play(world, beats: int, capture, seed: int = 3) -> list[tuple[object, str]]:
    rng = random.Random(seed)
    sent = []
    for _ in range(beats):
        with capture(execute=True):  # the cross-group follow-ups run after each commit
            sent += harness.beat(world, rng)
    return sent


def test_open_work_whose_dependencies_are_verified_is_offered_to_the_groups_workers(world):
    """R10.3-01, R10.4-03: the seed's CHILD_ITEM (no dependency) is offered to g-demo's
    workers one at a time; PROOFREAD waits for TRANSLATE; nothing is refused."""
    sent = harness.beat(world, random.Random(1))

    offers = [step for step, _answer in sent if step.type == "work.offer"]
    assert [step.target for step in offers] == [story.CHILD_ITEM]
    body = offers[0].body
    assert body["mode"] == "sequential"
    assert {o["worker"] for o in body["offers"]} == {f"agent:{w.id}" for w in workers_of(GROUP)}
    assert set(body["selection_basis"]) == {  # the six keys of wire.md §4 (R10.3-11)
        "capability_match", "authorization_eligibility", "availability_estimate",
        "expected_cost", "reliability_evidence", "policy_rules",
    }  # fmt: skip
    assert all(answer.startswith("ok") for _step, answer in sent), sent
    assert states()[story.PROOFREAD] == "open"


def test_results_waiting_for_a_person_are_never_judged_by_the_coordinator(world):
    """R13.2-03 step 5: EXPORT has a human_review criterion: no step of the coordinator
    names it, however many beats pass."""
    for seed in range(5):
        steps = coordinator.plan(harness.scene(random.Random(seed)))
        assert story.EXPORT not in {step.target for step in steps}


def test_missions_arrive_when_work_runs_low_and_every_other_one_spans_both_groups(
    world, django_capture_on_commit_callbacks
):
    """R10.2-15..18: a plain mission (gather, then write) and a DAG across two groups: its
    gather is delegated to a child mission in the lab, whose two fetches run in parallel
    and feed its compile step; the parent's gather is blocked until a person approves the
    child. R10.2-06: while the seed's items wait for approval, no new item is gated."""
    sent = play(world, 12, django_capture_on_commit_callbacks)

    assert all(answer.startswith("ok") for _step, answer in sent), sent
    missions = set(Mission.objects.filter(group_id=GROUP).values_list("mission_id", flat=True))
    plain = sorted(m for m in missions if m.startswith(coordinator.MISSION_PREFIX))
    cross = sorted(m for m in missions if m.startswith(coordinator.CROSS_PREFIX))
    assert plain, missions
    assert cross, missions
    gather = WorkItem.objects.get(group_id=GROUP, work_item_id=f"{plain[0]}-gather").data
    write = WorkItem.objects.get(group_id=GROUP, work_item_id=f"{plain[0]}-write").data
    assert write["depends_on"] == [f"{plain[0]}-gather"]
    assert gather["state"] == "offered"
    parent = WorkItem.objects.get(group_id=GROUP, work_item_id=f"{cross[0]}-gather").data
    assert (parent["state"], parent["child"]["status"]) == ("blocked", "running")
    child = Mission.objects.get(group_id=LAB, mission_id=f"{cross[0]}-lab")
    assert child.parent == f"{GROUP}/{cross[0]}"
    lab = {
        row.work_item_id: row.data
        for row in WorkItem.objects.filter(group_id=LAB, mission=child.mission_id)
    }
    prefix = f"{cross[0]}-lab"
    assert lab[f"{prefix}-compile"]["depends_on"] == [f"{prefix}-fetch-a", f"{prefix}-fetch-b"]
    assert {lab[f"{prefix}-fetch-a"]["state"], lab[f"{prefix}-fetch-b"]["state"]} == {"offered"}
    lab_offers = [o["worker"] for o in lab[f"{prefix}-fetch-a"]["offers"]]
    assert set(lab_offers) == {f"agent:{w.id}" for w in workers_of(LAB)}
    gated = [
        data
        for data in (row.data for row in WorkItem.objects.filter(group_id__in=(GROUP, LAB)))
        if data["contract"]["risk"]["requires_execution_approval"]
    ]
    assert {data["id"] for data in gated} == {story.COLLECT, story.REVOKE}


def test_each_planned_mission_gets_its_context_package_once(
    world, django_capture_on_commit_callbacks
):
    """R13.3-01..04: once a mission's WorkItems are in the log, the coordinator publishes its
    context package (version 1, signed by the authority), naming those WorkItems and a range
    of events that exist; later beats publish no second version."""
    sent = play(world, 12, django_capture_on_commit_callbacks)

    assert all(answer.startswith("ok") for _step, answer in sent), sent
    published = [step for step, _answer in sent if step.type == "context.publish"]
    assert published
    ids = [step.body["package"]["id"] for step in published]
    assert len(ids) == len(set(ids))  # once per mission
    package = published[0].body["package"]
    mission = package["mission"]
    items = set(
        WorkItem.objects.filter(group_id=published[0].group, mission=mission).values_list(
            "work_item_id", flat=True
        )
    )
    assert set(package["work_items"]) == items
    assert package["event_range"][0] == 1 <= package["event_range"][1]


def test_no_new_mission_while_enough_finished_ones_wait_for_a_person(
    world, django_capture_on_commit_callbacks, monkeypatch
):
    """R10.2-22: a finished mission waits for a person's final approval, which no agent
    gives; at ``READY_WAITING_MAX`` of them waiting the coordinator plans no more (here the
    limit is set to the count there is, none)."""
    monkeypatch.setattr(coordinator, "READY_WAITING_MAX", 0)
    sent = play(world, 12, django_capture_on_commit_callbacks)
    assert all(answer.startswith("ok") for _step, answer in sent), sent
    assert "mission.create" not in {step.type for step, _answer in sent}
    assert not Mission.objects.filter(mission_id__startswith=coordinator.MISSION_PREFIX).exists()


def test_a_mission_waits_for_final_approval_once_its_every_work_item_has_ended():
    """Only the coordinator's own active missions count, once nothing in them is
    unfinished: the seed's missions and one still running do not."""

    def item(name: str, state: str) -> WorkItemState:
        return WorkItemState(
            id=name, mission=name.rsplit("-", 1)[0], state=state, revision=1, contract={},
            depends_on=(), authorized_by="agent:c", owner=None,
        )  # fmt: skip

    def mission(name: str, state: str = "active", items: tuple[str, ...] = ()) -> MissionState:
        return MissionState(
            id=name, state=state, goal="g", limits={}, used={}, parent=None, children=(),
            work_items=items, created_by="agent:c", created_sequence=1, link=None,
        )  # fmt: skip

    class View:
        def __init__(self, missions: list[MissionState], items: list[WorkItemState]) -> None:
            self._missions, self._items = missions, {i.id: i for i in items}

        def missions(self):
            return iter(self._missions)

        def work_item(self, name: str) -> WorkItemState | None:
            return self._items.get(name)

    done = [item("m-a-gather", "verified"), item("m-a-write", "failed")]
    running = [item("m-b-gather", "verified"), item("m-b-write", "active")]
    view = View(
        [
            mission("m-a", items=("m-a-gather", "m-a-write")),  # waits
            mission("m-b", items=("m-b-gather", "m-b-write")),  # still running
            mission("m-c", "completed", items=("m-a-gather",)),  # approved already
            mission("demo-m-x", items=("m-a-gather",)),  # the seed's
            mission("mx-d"),  # not planned yet
        ],
        [*done, *running],
    )
    lab = View([mission("mx-e-lab", items=("m-a-gather",))], done)
    scene = coordinator.Scene("agent:c", {GROUP: view, LAB: lab}, datetime.now(UTC), None)
    assert coordinator.waiting_for_final_approval(scene) == 2


def submitted(world, work_item: str) -> None:
    """A g-demo WorkItem authorised, offered, done by worker 1 and submitted with its report;
    the authority has checked it and asked the reviewer agent (R13.2-03 steps 1-3)."""
    seed = story.Seeder(world, story._seed_deadline())
    seed.authorize(work_item, "demo-m-incidents", f"Summarise {work_item}")
    seed.offer_to(work_item, "sequential", world.workers[0].principal)
    seed.submit_report(world.workers[0].principal, work_item)


@pytest.mark.parametrize(
    ("report", "verdict", "outcome"),
    [
        (b'{"status": "complete", "coverage": 0.9, "findings": ["x"]}', "pass", "verified"),
        (b'{"status": "draft", "coverage": 0.5, "findings": []}', "fail", "failed"),
    ],
)
def test_the_reviewer_reads_the_report_and_the_coordinator_follows_its_verdict(
    world, report, verdict, outcome
):
    """R13.2-03 steps 3-4, R13.2-01: the reviewer agent records its own verdict on the
    criterion it was asked about, from the report it read; the coordinator then accepts
    the result, or fails it naming the criterion that did not pass."""
    submitted(world, "wi-judged")
    state = harness.state_of(GROUP)
    item = state.work_item("wi-judged")
    me = world.reviewer.principal
    assert reviewer.open_requests(item, me) == ["c2"]

    world.reviewer.open_session()
    steps = reviewer.review_steps(GROUP, item, me, {OUTPUT: report})
    answers = [harness.run(world.reviewer, step) for step in steps]
    assert answers == ["ok evidence.recorded"]
    assert steps[0].body["result"]["verdict"] == verdict
    assert steps[0].body["submission"] == item.review["submission"]

    sent = harness.beat(world, random.Random(0))
    judged = [(s.type, a) for s, a in sent if s.target == "wi-judged"]
    expected = "work.accept_result" if verdict == "pass" else "work.fail"
    assert [t for t, _a in judged] == [expected], sent
    assert states()["wi-judged"] == outcome
    if verdict == "fail":
        review = WorkItem.objects.get(work_item_id="wi-judged").data["review"]
        assert review["criteria"]["c2"]["status"] == "fail"


def test_a_claim_nobody_was_asked_to_review_is_asked_of_a_reviewer_after_a_while(world):
    """R13.2-03 step 3: when the authority asked no reviewer (none was a member then), the
    coordinator asks one, but only after ``REVIEW_PATIENCE``: the authority asks first."""
    cast._ensure_member(
        cast._admin_user("pw"), world.reviewer.principal, ["observer"], GROUP
    )  # no reviewer in g-demo: the authority's request finds nobody
    submitted(world, "wi-unasked")
    reviews.review_owing(STORE)
    cast._ensure_member(cast._admin_user("pw"), world.reviewer.principal, ["reviewer"], GROUP)
    claimed_since: dict = {}

    first = coordinator.plan(harness.scene(random.Random(0), claimed_since=claimed_since))
    assert "wi-unasked" not in {s.target for s in first}
    for key in claimed_since:
        claimed_since[key] -= coordinator.REVIEW_PATIENCE
    later = coordinator.plan(harness.scene(random.Random(0), claimed_since=claimed_since))

    asks = [s for s in later if s.target == "wi-unasked"]
    assert [(s.type, s.body["reviewer"], s.body["criteria"]) for s in asks] == [
        ("review.request", world.reviewer.principal, ["c2"])
    ]
    assert harness.run(world.coordinator, asks[0]) == "ok review.requested"


def reviewed(world, work_item: str) -> None:
    """Submitted, checked by the authority and passed by the reviewer agent: the coordinator
    would accept it next beat."""
    submitted(world, work_item)
    item = harness.state_of(GROUP).work_item(work_item)
    world.reviewer.open_session()
    report = b'{"status": "complete", "coverage": 0.9, "findings": ["x"]}'
    for step in reviewer.review_steps(GROUP, item, world.reviewer.principal, {OUTPUT: report}):
        assert harness.run(world.reviewer, step) == "ok evidence.recorded"


def test_the_coordinator_waits_while_a_person_holds_the_review_then_decides(world):
    """Issue 34, R13.2-03: rita reserved the review — the coordinator neither accepts nor
    fails the item (it does not race her), however many beats pass; once she releases it,
    the coordinator's next beat accepts it."""
    reviewed(world, "wi-held")
    reserve = {"work_item": "wi-held"}
    cast.submit_as_admin("rita", "review.reserve", reserve, command_id="t-rita-reserve")
    for seed in range(3):
        sent = harness.beat(world, random.Random(seed))
        assert "wi-held" not in {step.target for step, _answer in sent}, sent
    assert states()["wi-held"] == "submitted"

    cast.submit_as_admin("rita", "review.release", reserve, command_id="t-rita-release")
    sent = harness.beat(world, random.Random(0))
    judged = [(step.type, answer) for step, answer in sent if step.target == "wi-held"]
    assert judged == [("work.accept_result", "ok work.result_accepted")], sent
    assert states()["wi-held"] == "verified"


def test_the_coordinator_waits_for_the_authoritys_checks(world, monkeypatch):
    """Issue 34, R13.2-03 steps 1–2: while the authority still owes its checks, the
    coordinator takes no decision on the submission; once they pass and the reviewer agent
    answered, it accepts."""
    with monkeypatch.context() as held_back:  # the Celery task has not run yet
        held_back.setattr(story.reviews, "review_submission", lambda *args: None)
        submitted(world, "wi-unchecked")
    assert WorkItem.objects.get(work_item_id="wi-unchecked").data["review"]["pending_checks"]
    for seed in range(3):
        sent = harness.beat(world, random.Random(seed))
        assert "wi-unchecked" not in {step.target for step, _answer in sent}, sent

    reviews.review_submission(STORE, GROUP, "wi-unchecked")
    item = harness.state_of(GROUP).work_item("wi-unchecked")
    world.reviewer.open_session()
    report = b'{"status": "complete", "coverage": 0.9, "findings": ["x"]}'
    for step in reviewer.review_steps(GROUP, item, world.reviewer.principal, {OUTPUT: report}):
        assert harness.run(world.reviewer, step) == "ok evidence.recorded"
    sent = harness.beat(world, random.Random(0))
    judged = [(step.type, answer) for step, answer in sent if step.target == "wi-unchecked"]
    assert judged == [("work.accept_result", "ok work.result_accepted")], sent


def test_a_refused_item_is_left_for_a_corrected_contract(world):
    """R10.2-06, issue 34: after a mission owner refuses an item's execution, the coordinator
    neither offers it again nor counts it as waiting for an approval."""
    refused = next(
        row
        for row in WorkItem.objects.filter(group_id=GROUP, state="queued")
        if row.data["contract"]["risk"]["requires_execution_approval"] and not row.data["refusal"]
    )
    decision = {"work_item": refused.work_item_id, "contract_revision": 1, "comment": "no"}
    cast.submit_as_admin("omar", "approval.refuse_execution", decision, command_id="t-omar-no")
    scene = harness.scene(random.Random(0))
    item = scene.views[GROUP].work_item(refused.work_item_id)
    assert item is not None
    assert item.refusal is not None
    assert coordinator.next_for(scene, GROUP, item) == []
    assert not coordinator._in_hand(item, scene.now)


def blocked(world, work_item: str) -> None:
    """A g-demo WorkItem started by worker 1, which then blocked for an answer (R11.4-04)."""
    seed = story.Seeder(world, story._seed_deadline())
    seed.authorize(work_item, "demo-m-incidents", f"Summarise {work_item}")
    worker = world.workers[0].principal
    seed.offer_to(work_item, "sequential", worker)
    lease = seed.start(worker, work_item)
    checkpoint = {"ref": f"{work_item}/e1/c1", "state_digest": "sha256:" + "0" * 64}
    body = {
        "work_item": work_item,
        "lease_id": lease,
        "required_resolution": "Which quarter should the sources cover?",
        "checkpoint": {**checkpoint, "artifacts": []},
    }
    seed.step(worker, work_item, "block", "work.block", body)


def test_a_blocked_worker_gets_its_answer_after_a_while_and_its_item_is_queued_again(world):
    """R11.4-04, R11.4-06, R10.2-10 (issue 35, the demo uses blocking): the coordinator
    leaves a blocked item alone for ``BLOCK_PATIENCE`` — long enough to be seen on the
    dashboard — then unblocks it back to its owner's queue, where it resumes from its
    checkpoint."""
    blocked(world, "wi-blocked")
    assert states()["wi-blocked"] == "blocked"
    waited: dict = {}
    scene = harness.scene(random.Random(0), claimed_since=waited)
    item = scene.views[GROUP].work_item("wi-blocked")
    assert coordinator.next_for(scene, GROUP, item) == []  # it has only just blocked

    for key in waited:
        waited[key] -= coordinator.BLOCK_PATIENCE
    steps = coordinator.next_for(scene, GROUP, item)
    assert [(step.type, step.body) for step in steps] == [
        ("work.unblock", {"work_item": "wi-blocked", "to": "queued"})
    ]
    world.coordinator.open_session()
    assert harness.run(world.coordinator, steps[0]) == "ok work.unblocked"
    row = WorkItem.objects.get(group_id=GROUP, work_item_id="wi-blocked")
    assert (row.state, row.owner) == ("queued", world.workers[0].principal)


def test_a_workers_question_waits_for_a_person_then_the_coordinator_answers_it(world):
    """R10.1-02..04 (issue 35, the demo uses questions): a worker asks an essential question
    about an offer; the coordinator leaves it to a person for ``QUESTION_PATIENCE``, then
    answers it itself, which settles it and lets the worker accept."""
    seed = story.Seeder(world, story._seed_deadline())
    seed.authorize("wi-asked", "demo-m-incidents", "Summarise wi-asked")
    worker = world.workers[0].principal
    offer = story.offer_body("wi-asked", [worker], mode="sequential", expires_at=seed.deadline)
    seed.step(seed.coordinator, "wi-asked", "offer", "work.offer", offer)
    ask = {"work_item": "wi-asked", "text": "Anonymous or named?", "essential": True}
    seed.step(worker, "wi-asked", "ask", "work.message", ask)
    waited: dict = {}
    scene = harness.scene(random.Random(0), claimed_since=waited)
    item = scene.views[GROUP].work_item("wi-asked")
    assert item.open_questions
    assert coordinator.next_for(scene, GROUP, item) == []  # a person may answer first

    for key in waited:
        waited[key] -= coordinator.QUESTION_PATIENCE
    steps = coordinator.next_for(scene, GROUP, item)
    assert [step.type for step in steps] == ["work.message"]
    assert steps[0].body["in_reply_to"] == item.open_questions[0]
    world.coordinator.open_session()
    assert harness.run(world.coordinator, steps[0]) == "ok work.message_posted"
    assert harness.state_of(GROUP).work_item("wi-asked").open_questions == ()


def test_a_mission_owners_change_request_is_answered_with_a_replacement(world):
    """Issue 36 §5 (R10.2-21, R13.2-03 step 5): olivia asks for changes to the verified
    SUMMARY; the coordinator's next beat authorises ``<id>-r1`` replacing it — the same
    contract terms with the note added to its goal, the same dependencies — which closes the
    request; the beat after does not replace it again."""
    note = "Add the incidents of the last week of November."
    body = {"mission": "demo-m-incidents", "work_items": [story.SUMMARY], "note": note}
    cast.submit_as_admin("olivia", "mission.request_changes", body, command_id="t-olivia-ch")
    original = WorkItem.objects.get(group_id=GROUP, work_item_id=story.SUMMARY).data

    sent = harness.beat(world, random.Random(0))
    replacing = [(s, a) for s, a in sent if s.type == "work.authorize" and "replaces" in s.body]
    [(step, answer)] = replacing
    assert answer == "ok work.authorized,work.replaced"
    new_id = f"{story.SUMMARY}-r1"
    assert (step.body["work_item"], step.body["replaces"]) == (new_id, story.SUMMARY)
    assert step.body["depends_on"] == original["depends_on"]
    contract_ = step.body["contract"]
    assert contract_["goal"] == f"{original['contract']['goal']} — changes asked: {note}"
    same = {k: v for k, v in original["contract"].items() if k != "goal"}
    assert {k: contract_[k] for k in same} == same
    old = WorkItem.objects.get(group_id=GROUP, work_item_id=story.SUMMARY)
    assert (old.state, old.data["replaced_by"]) == ("verified", new_id)
    assert states()[new_id] in {"open", "offered"}

    again = harness.beat(world, random.Random(0))
    assert not [s for s, _a in again if s.type == "work.authorize" and "replaces" in s.body]
