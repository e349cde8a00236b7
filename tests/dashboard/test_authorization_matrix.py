"""The authorisation matrix over every screen and form of the dashboard (issue 12, "Must
hold"): role × own group × another group's ids.

- a person who is not an active member of the group gets 404 on every page and form of it,
  byte for byte the answer for a group that does not exist (wire.md §4);
- another group's ids under this group's URL are 404, and no byte of the other group's
  content reaches the page;
- a member whose role may not do what a form does gets 403 with the reason, and nothing is
  appended (wire.md §8, the command table's roles);
- a POST without the CSRF token is refused (403) and appends nothing;
- self-approval is refused in the UI (no form, the reason in words) and by the server
  (SELF_APPROVAL, R10.2-06, R13.2-01).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.ledger.models import Event
from apps.work import reviews
from apps.work.models import WorkItem
from apps.work.tasks import STORE
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import HumanPersona, World, grant, group, human, unique

pytestmark = pytest.mark.django_db

#: words only group B's content holds: they must never reach a page of group A
SECRET = "Quarterly payroll of the other group"


@dataclass
class Matrix:
    a: World  # olga mission_owner, maria observer (from ``dash``), rita reviewer
    b: World  # the same agents in another group, with bob its mission owner
    dash: Dashboard
    rita: HumanPersona
    bob: HumanPersona
    gated: str  # A: queued, waiting for two approvals
    submitted: str  # A: submitted, reviewed by the authority
    mission: str  # A: the mission of both
    artifact: str  # A: the digest of ``submitted``'s artifact
    b_item: str  # B: submitted, its artifact and goal hold SECRET
    b_mission: str
    b_artifact: str


def _submitted(
    world: World, mission: str, artifact: bytes, goal: str | None = None
) -> tuple[str, str]:
    contract = example_contract(goal=goal) if goal else None
    item = wf.queued(world, mission, contract=contract)
    lease = wf.start(world, item)
    wf.submit_result(world, item, lease, artifact=artifact)
    reviews.review_submission(STORE, world.group, item)
    row = WorkItem.objects.get(group_id=world.group, work_item_id=item)
    return item, row.to_state().submission["artifacts"][0]  # type: ignore[index]


@pytest.fixture
def matrix(dash: Dashboard) -> Matrix:
    a = dash.world
    rita = human("rita")
    grant(a.alice, a.group, rita, "reviewer")
    mission = wf.mission(a)
    gated = wf.queued(a, mission, contract=wf.gated_contract(2))
    submitted, artifact = _submitted(a, mission, b"# The summary of group A\n")

    b = dataclasses.replace(a, group=group(unique("g-other"), a.org))
    bob = human("bob")
    grant(a.alice, b.group, bob, "mission_owner")
    grant(a.alice, b.group, a.w1, "coordinator")
    grant(a.alice, b.group, a.w2, "worker")
    b_mission = wf.mission(b)
    b_item, b_artifact = _submitted(
        b, b_mission, f"# {SECRET}\n".encode(), goal=f"{SECRET}: summarise it"
    )
    return Matrix(
        a, b, dash, rita, bob, gated, submitted, mission, artifact, b_item, b_mission, b_artifact
    )


def pages(
    m: Matrix, group_id: str, *, item: str, gated: str, mission: str, digest: str
) -> list[str]:
    """Every GET page and partial of a group's screens, for these ids."""
    g = f"/groups/{group_id}"
    return [
        f"{g}/",
        f"{g}/approval-queue/",
        f"{g}/missions/",
        f"{g}/work-items/",
        f"{g}/live/mission-rows/?mission={mission}&work_item={item}",
        f"{g}/live/work-item-rows/?work_item={item}",
        f"{g}/work-items/{item}/",
        f"{g}/work-items/{item}/section/",
        f"{g}/work-items/{gated}/approval/",
        f"{g}/work-items/{gated}/approval/section/",
        f"{g}/work-items/{item}/review/",
        f"{g}/work-items/{item}/review/section/",
        f"{g}/missions/{mission}/",
        f"{g}/missions/{mission}/section/",
        f"{g}/missions/{mission}/graph/",
        f"{g}/missions/{mission}/final-approval/",
        f"{g}/artifacts/{digest}/",
        f"{g}/artifacts/{digest}/raw/",
    ]


def forms(
    group_id: str, *, item: str, gated: str, mission: str
) -> list[tuple[str, dict[str, str]]]:
    """Every form of a group's screens, with a body that would be valid for a person who may."""
    g = f"/groups/{group_id}"
    verdicts = {"verdict-c1": "pass", "verdict-c2": "pass", "note-c1": "", "note-c2": ""}
    return [
        (f"{g}/work-items/{gated}/approve/", {"contract_revision": "1", "comment": "ok"}),
        (f"{g}/work-items/{gated}/approval/refuse/", {"contract_revision": "1", "comment": "no"}),
        (f"{g}/work-items/{item}/review/decide/", {"action": "accept", **verdicts}),
        (f"{g}/work-items/{item}/review/reserve/", {}),
        (f"{g}/work-items/{item}/review/release/", {}),
        (f"{g}/missions/{mission}/approve/", {"comment": "done"}),
        (f"{g}/missions/{mission}/cancel/", {"reason": "stop"}),
    ]


def _unmasked(page: bytes) -> bytes:
    """A page without its CSRF token, which Django masks afresh on every rendering."""
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", page)


def own_pages(m: Matrix) -> list[str]:
    return pages(
        m, m.a.group, item=m.submitted, gated=m.gated, mission=m.mission, digest=m.artifact
    )


def own_forms(m: Matrix) -> list[tuple[str, dict[str, str]]]:
    return forms(m.a.group, item=m.submitted, gated=m.gated, mission=m.mission)


def heads(m: Matrix) -> tuple[int, int]:
    return wf.head(m.a.group), wf.head(m.b.group)


def test_members_reach_every_page_of_their_group(matrix: Matrix) -> None:
    """The matrix's other half: the observer, the reviewer and the owner see every page."""
    for persona in (matrix.dash.maria, matrix.rita, matrix.a.olga):
        client = logged_in(persona)
        for path in own_pages(matrix):
            assert client.get(path).status_code == 200, (persona.username, path)


def test_a_non_member_gets_the_404_of_a_group_that_does_not_exist_everywhere(
    matrix: Matrix,
) -> None:
    """wire§4: nina (no membership) and bob (group B only) learn nothing about group A."""
    missing = unique("g-missing")
    nowhere = pages(
        matrix,
        missing,
        item=matrix.submitted,
        gated=matrix.gated,
        mission=matrix.mission,
        digest=matrix.artifact,
    )
    for persona in (matrix.dash.nina, matrix.bob):
        client = logged_in(persona)
        for path, absent in zip(own_pages(matrix), nowhere, strict=True):
            response = client.get(path)
            assert response.status_code == 404, (persona.username, path)
            assert _unmasked(response.content) == _unmasked(client.get(absent).content), path
        before = heads(matrix)
        for path, body in own_forms(matrix):
            assert client.post(path, body).status_code == 404, (persona.username, path)
        assert heads(matrix) == before


def test_another_groups_ids_under_this_group_are_404_and_leak_nothing(matrix: Matrix) -> None:
    """Ids of group B's WorkItem, mission and artifact under group A's URLs, asked by a
    mission owner of A: 404 on every page and form, and B's words appear nowhere."""
    client = logged_in(matrix.a.olga)
    crossed = pages(
        matrix,
        matrix.a.group,
        item=matrix.b_item,
        gated=matrix.b_item,
        mission=matrix.b_mission,
        digest=matrix.b_artifact,
    )
    for path in crossed[6:]:  # the first six are the group's own lists and rows
        response = client.get(path)
        assert response.status_code == 404, path
        assert SECRET.encode() not in response.content, path
    before = heads(matrix)
    for path, body in forms(
        matrix.a.group, item=matrix.b_item, gated=matrix.b_item, mission=matrix.b_mission
    ):
        response = client.post(path, body)
        assert response.status_code == 404, path
    assert heads(matrix) == before
    # and the lists of A, the inbox and the review queue hold nothing of B
    a = f"/groups/{matrix.a.group}"
    lists = (
        f"{a}/",
        f"{a}/approval-queue/",
        f"{a}/missions/",
        f"{a}/work-items/",
        "/",
        "/reviews/",
    )
    for path in (
        *lists,
        f"{a}/missions/?q={matrix.b_mission}",
        f"{a}/live/mission-rows/?mission={matrix.b_mission}&work_item={matrix.b_item}",
        f"{a}/live/work-item-rows/?work_item={matrix.b_item}",
    ):
        response = client.get(path)
        assert SECRET.encode() not in response.content, path
        assert matrix.b_item.encode() not in response.content, path


@pytest.mark.parametrize(
    ("form", "who"),
    [
        ("approve", "maria"),
        ("approve", "rita"),
        ("refuse", "maria"),
        ("refuse", "rita"),
        ("decide", "maria"),
        ("reserve", "maria"),
        ("mission-approve", "maria"),
        ("mission-approve", "rita"),
        ("mission-cancel", "maria"),
        ("mission-cancel", "rita"),
    ],
)
def test_the_wrong_role_gets_403_with_the_reason_and_nothing_is_appended(
    matrix: Matrix, form: str, who: str
) -> None:
    """wire§9 roles, wire§8: an observer or a reviewer posting a form the page never offered
    them is refused by the write path: 403, the code and the rule shown, the log unchanged."""
    persona = matrix.dash.maria if who == "maria" else matrix.rita
    index = [
        "approve",
        "refuse",
        "decide",
        "reserve",
        "release",
        "mission-approve",
        "mission-cancel",
    ]
    path, body = own_forms(matrix)[index.index(form)]
    before = heads(matrix)
    response = logged_in(persona).post(path, body, HTTP_ACCEPT="text/html")
    assert response.status_code == 403, (path, response.status_code)
    assert heads(matrix) == before
    html = response.content.decode()
    assert "FORBIDDEN" in html or "NOT_A_MEMBER" in html
    assert "Nothing was recorded" in html


def test_every_form_without_the_csrf_token_is_refused(matrix: Matrix) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=matrix.a.olga.username))
    before = heads(matrix)
    for path, body in own_forms(matrix):
        assert client.post(path, body).status_code == 403, path
    assert heads(matrix) == before


def test_self_approval_is_refused_in_the_ui_and_by_the_server(matrix: Matrix) -> None:
    """R10.2-06: the mission owner who proposed a WorkItem sees why they cannot approve it,
    no form, and a forged POST is 403 SELF_APPROVAL with nothing appended."""
    a = matrix.a
    proposal = unique("p")
    wf.submit(a.olga, a.group, "work.propose", {"proposal": proposal, "title": "Please run it"})
    item = wf.queued(a, matrix.mission, contract=wf.gated_contract(2), proposal=proposal)
    client = logged_in(a.olga)
    html = client.get(f"/groups/{a.group}/work-items/{item}/approval/").content.decode()
    why = element(html, "data-field", "why-not")
    assert "SELF_APPROVAL" in why
    assert 'action="/groups/' not in element(html, "id", "decide").split("why-not")[0]
    before = wf.head(a.group)
    response = client.post(
        f"/groups/{a.group}/work-items/{item}/approve/",
        {"contract_revision": "1", "comment": "mine"},
    )
    assert response.status_code == 403
    assert "SELF_APPROVAL" in response.content.decode()
    assert wf.head(a.group) == before


def test_self_review_is_refused_by_the_server_and_never_queued(matrix: Matrix) -> None:
    """R13.2-01: the owner of a WorkItem never judges it. Its owner (the worker agent) is
    refused SELF_APPROVAL on ``evidence.record``; and a review queue never offers a person a
    submission of their own — the queue filters on the owner, as the server refuses it."""
    a = matrix.a
    grant(a.alice, a.group, a.w2, "worker", "reviewer")  # a reviewer too: the owner still may not
    before = wf.head(a.group)
    with pytest.raises(ProtocolError) as refused:
        wf.submit(
            a.w2,
            a.group,
            "evidence.record",
            {"work_item": matrix.submitted, **wf.evidence(a.w2.principal, "c2", "pass")},
        )
    assert refused.value.code.value == "SELF_APPROVAL"
    assert wf.head(a.group) == before
    assert (
        Event.objects.filter(
            group_id=a.group, type="evidence.recorded", actor=a.w2.principal
        ).count()
        == 0
    )


def test_the_reasons_are_words_on_the_page(matrix: Matrix) -> None:
    """Say what is possible: an observer's approval screen says who may decide."""
    html = (
        logged_in(matrix.dash.maria)
        .get(f"/groups/{matrix.a.group}/work-items/{matrix.gated}/approval/")
        .content.decode()
    )
    assert "mission owner" in text(element(html, "data-field", "why-not")).lower()
