"""The evidence review screens: the queue and one submission judged criterion by criterion
(issue 12 §3; R13.2-01..05, R10.2-12, R10.2-13).

Real PostgreSQL; every command through the one write path, the authority's checks run by
the same review service the Celery task calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html import unescape

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from apps.artifacts.models import Blob
from apps.ledger.models import Event
from apps.registry import services
from apps.work import reviews
from apps.work.models import WorkItem
from apps.work.tasks import STORE
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in, with_password
from tests.dashboard.html import element, text
from tests.factories import HumanPersona, grant, human

pytestmark = pytest.mark.django_db


@dataclass
class Scene:
    dash: Dashboard
    rita: HumanPersona  # reviewer only
    item: str
    mission: str

    @property
    def group(self) -> str:
        return self.dash.world.group

    def url(self, suffix: str = "") -> str:
        return f"/groups/{self.group}/work-items/{self.item}/review/{suffix}"


def submitted_item(dash: Dashboard) -> tuple[str, str]:
    """A WorkItem of the example contract, submitted by w2 with evidence on c1 and c2 and
    its summary artifact, after the authority's own checks (R13.2-03 steps 1–2)."""
    world = dash.world
    mission = wf.mission(world)
    item = wf.queued(world, mission)
    lease = wf.start(world, item)
    wf.submit_result(world, item, lease, artifact=b"# Summary\n\nAll eleven incidents.\n")
    reviews.review_submission(STORE, world.group, item)
    return mission, item


@pytest.fixture
def scene(dash: Dashboard) -> Scene:
    rita = with_password(human("rita"))
    grant(dash.world.alice, dash.world.group, rita, "reviewer")
    mission, item = submitted_item(dash)
    return Scene(dash, rita, item, mission)


def events_of(group: str, type_: str) -> list[dict[str, object]]:
    return [
        json.loads(text)
        for text in Event.objects.filter(group_id=group, type=type_)
        .order_by("sequence")
        .values_list("document", flat=True)
    ]


def verdicts(**chosen: str) -> dict[str, str]:
    fields = {}
    for criterion, verdict in chosen.items():
        fields[f"verdict-{criterion}"] = verdict
        fields[f"note-{criterion}"] = f"note on {criterion}: {verdict}"
    return fields


def flash(html: str) -> str:
    found = re.search(r'<div class="flash-list" id="flash">(.*?)</div>', html, re.S)
    return re.sub(r"\s+", " ", found.group(1)) if found else ""


# --- the queue -------------------------------------------------------------------------------


def test_the_queue_lists_submissions_with_mission_progress_for_those_who_judge(
    scene: Scene,
) -> None:
    html = logged_in(scene.dash.world.olga).get("/reviews/").content.decode()
    assert scene.item in html
    assert "Start reviewing the oldest" in html
    assert "0 of 1 verified" in html  # progress per mission
    assert f'href="/groups/{scene.group}/work-items/{scene.item}/review/"' in html


def test_an_observer_has_an_empty_queue_that_says_which_roles_see_submissions(
    scene: Scene,
) -> None:
    html = logged_in(scene.dash.maria).get("/reviews/").content.decode()
    assert scene.item not in html
    assert "Nothing is waiting for your review" in html
    assert "reviewer, a coordinator or a mission owner" in html


# --- one submission --------------------------------------------------------------------------


def test_the_review_page_shows_each_criterion_with_its_evidence_and_the_authority_checks(
    scene: Scene,
) -> None:
    """R13.2-01: the worker's own evidence is shown as its claim; R13.2-03: the authority's
    integrity check is shown before anyone judges."""
    html = logged_in(scene.dash.world.olga).get(scene.url()).content.decode()
    for shown in ("Covers every report", "Accurate and neutral", "human review", "deterministic"):
        assert shown in html
    assert "the worker&#x27;s own claim" in html or "the worker's own claim" in html
    assert "Automatic checks by the authority" in html
    for control in (
        'name="verdict-c1"',
        'name="verdict-c2"',
        'id="accept-result"',
        'id="send-back"',
    ):
        assert control in html
    assert "Criterion 1 of 2" in html
    assert "<kbd>j</kbd>" in html


def test_a_mission_owner_accepts_with_the_verdicts_and_their_notes(scene: Scene) -> None:
    """R10.2-12: ``work.accept_result`` carries every criterion's verdict and note."""
    client = logged_in(scene.dash.world.olga)
    response = client.post(
        scene.url("decide/"),
        {"action": "accept", "summary": "good work", **verdicts(c1="pass", c2="pass")},
        follow=True,
    )
    assert (  # by its goal, as people know it
        "Accepted the result of “Summarise the incident reports of November”: both criteria "
        "pass. It is verified."
    ) in text(flash(response.content.decode()))
    assert wf.state_of(scene.group, scene.item) == "verified"
    accepted = events_of(scene.group, "work.result_accepted")[-1]["payload"]
    assert accepted["review"]["summary"] == "good work"  # type: ignore[index]
    assert {v["criterion"]: v["note"] for v in accepted["review"]["verdicts"]} == {  # type: ignore[index]
        "c1": "note on c1: pass",
        "c2": "note on c2: pass",
    }
    # the notes are shown wherever the decision is: its review page and the WorkItem page
    for path in (scene.url(), f"/groups/{scene.group}/work-items/{scene.item}/"):
        shown = client.get(path).content.decode()
        assert "Result accepted" in shown
        assert "note on c2: pass" in shown
        assert "good work" in shown


def not_sent(html: str) -> str:
    return text(element(html, "id", "not-sent"))


def test_accepting_with_a_failing_verdict_is_refused_before_anything_is_sent(
    scene: Scene,
) -> None:
    """Issue 34 §3: the answer is the page again, the reason in words, the verdicts kept."""
    client = logged_in(scene.dash.world.olga)
    before = wf.head(scene.group)
    response = client.post(
        scene.url("decide/"), {"action": "accept", **verdicts(c1="pass", c2="fail")}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "send it back instead" in not_sent(html)
    assert 'value="fail" checked' in element(html, "id", "criterion-c2")
    assert "note on c2: fail</textarea>" in html
    assert wf.head(scene.group) == before
    assert wf.state_of(scene.group, scene.item) == "submitted"


def test_a_missing_verdict_is_refused_and_names_the_criterion(scene: Scene) -> None:
    client = logged_in(scene.dash.world.olga)
    before = wf.head(scene.group)
    response = client.post(scene.url("decide/"), {"action": "accept", **verdicts(c1="pass")})
    assert response.status_code == 400
    html = response.content.decode()
    assert "missing: c2" in not_sent(html)
    assert "note on c1: pass</textarea>" in html
    assert wf.head(scene.group) == before


def test_sending_back_fails_the_item_with_the_verdicts_as_evidence(scene: Scene) -> None:
    """R10.2-13: the failure carries evidence — the reviewer's verdicts, notes included."""
    client = logged_in(scene.dash.world.olga)
    response = client.post(
        scene.url("decide/"),
        {"action": "send_back", **verdicts(c1="pass", c2="needs_changes")},
        follow=True,
    )
    assert (
        "Sent “Summarise the incident reports of November” back: 1 of 2 criteria did not pass."
    ) in text(flash(response.content.decode()))
    assert wf.state_of(scene.group, scene.item) == "failed"
    failed = events_of(scene.group, "work.failed")[-1]
    evidence = {e["criterion"]: e for e in failed["payload"]["evidence"]}  # type: ignore[index]
    assert evidence["c2"]["result"]["verdict"] == "fail"
    assert evidence["c2"]["result"]["data"] == {"review_verdict": "needs_changes"}
    assert evidence["c2"]["result"]["summary"] == "note on c2: needs_changes"
    assert evidence["c2"]["producer"] == scene.dash.world.olga.principal
    shown = client.get(f"/groups/{scene.group}/work-items/{scene.item}/").content.decode()
    assert "Sent back" in shown
    assert "note on c2: needs_changes" in shown


def test_a_reviewer_who_may_not_accept_records_verdicts_as_evidence(scene: Scene) -> None:
    """R13.2-04: a reviewer's verdicts become evidence items with the reviewer as producer
    and each criterion's own method; the page says why they cannot accept."""
    client = logged_in(scene.rita)
    html = client.get(scene.url()).content.decode()
    assert 'id="record-verdicts"' in html
    assert 'id="accept-result"' not in html
    assert "You cannot accept the result" in html
    client.post(scene.url("decide/"), {"action": "record", **verdicts(c1="pass", c2="fail")})
    recorded = [
        e["payload"]
        for e in events_of(scene.group, "evidence.recorded")
        if e["actor"] == scene.rita.principal
    ]
    assert {(p["criterion"], p["method"], p["result"]["verdict"]) for p in recorded} == {  # type: ignore[index]
        ("c1", "deterministic", "pass"),
        ("c2", "human_review", "fail"),
    }
    assert wf.state_of(scene.group, scene.item) == "submitted"
    # the mission owner now sees the reviewer's verdicts beside the others
    owner_page = logged_in(scene.dash.world.olga).get(scene.url()).content.decode()
    assert "note on c2: fail" in owner_page


def test_an_observer_sees_the_evidence_and_why_they_cannot_judge(scene: Scene) -> None:
    html = logged_in(scene.dash.maria).get(scene.url()).content.decode()
    assert "Covers every report" in html
    assert 'name="verdict-c1"' not in html
    assert "You cannot judge this submission" in html


def test_a_resubmitted_review_form_is_replayed_not_repeated(scene: Scene) -> None:
    """wire§3 step 5: the page's command id makes a double submit one command."""
    client = logged_in(scene.rita)
    fields = {
        "action": "record",
        "command_id": "dash-review-twice",
        **verdicts(c1="pass", c2="pass"),
    }
    client.post(scene.url("decide/"), fields)
    head = wf.head(scene.group)
    client.post(scene.url("decide/"), fields)
    assert wf.head(scene.group) == head


# --- reservations ----------------------------------------------------------------------------


def test_opening_a_review_reserves_it_and_others_see_who_holds_it(scene: Scene) -> None:
    olga = logged_in(scene.dash.world.olga)
    response = olga.post(scene.url("reserve/"), HTTP_ACCEPT="application/json")
    assert response.json() == {"reserved": True}
    assert "Reserved for you" in olga.get(scene.url()).content.decode()
    other = logged_in(scene.rita)
    reservation = text(element(other.get(scene.url()).content.decode(), "id", "reservation"))
    assert reservation.startswith("olga is reviewing this submission until")
    refused = other.post(scene.url("reserve/"), HTTP_ACCEPT="application/json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "ILLEGAL_TRANSITION"
    queue = other.get("/reviews/").content.decode()
    assert "is-held" in queue
    assert "Every waiting submission is being reviewed by someone else" in queue


def test_start_reviewing_reserves_the_oldest_free_submission_and_opens_it(scene: Scene) -> None:
    client = logged_in(scene.rita)
    response = client.post("/reviews/next/")
    assert response.status_code == 302
    assert response["Location"] == scene.url()
    assert "Reserved for you" in client.get(scene.url()).content.decode()


def test_skip_releases_the_reservation_and_says_when_nothing_is_left(scene: Scene) -> None:
    client = logged_in(scene.rita)
    client.post("/reviews/next/")
    response = client.post("/reviews/next/", {"group": scene.group, "work_item": scene.item})
    assert response["Location"] == "/reviews/"
    olga = logged_in(scene.dash.world.olga)
    assert "is reviewing" not in olga.get(scene.url()).content.decode()


def page_token(html: str) -> str:
    data = json.loads(
        unescape(element(html, "id", "review-data").split(">", 1)[1].rsplit("<", 1)[0])
    )
    return str(data["page_token"])


def test_only_the_page_holding_the_reservation_gives_it_back_as_it_leaves(scene: Scene) -> None:
    """Issue 34 §2, with leaving the page giving the reservation back: a reload draws a new
    page while the old one's release is on its way. The new page, drawn while olga holds the
    reservation, holds it now: the old page's release arriving late is not sent (the agent
    cannot decide under her); the holding page's release is."""
    olga = logged_in(scene.dash.world.olga)
    first = page_token(olga.get(scene.url()).content.decode())
    assert olga.post(scene.url("reserve/"), {"page": first}).status_code == 302
    reloaded = page_token(olga.get(scene.url()).content.decode())  # drawn while she holds it
    assert reloaded != first

    late = olga.post(scene.url("release/"), {"page": first}, HTTP_ACCEPT="application/json")
    assert late.json() == {"released": False}
    assert "Reserved for you" in olga.get(scene.url()).content.decode()
    assert events_of(scene.group, "review.released") == []

    newest = page_token(olga.get(scene.url()).content.decode())
    left = olga.post(scene.url("release/"), {"page": newest}, HTTP_ACCEPT="application/json")
    assert left.json() == {"released": True}
    assert len(events_of(scene.group, "review.released")) == 1
    assert "is reviewing" not in logged_in(scene.rita).get(scene.url()).content.decode()


# --- who may see what ------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "section/"])
def test_non_members_get_404_for_every_review_page(scene: Scene, suffix: str) -> None:
    client = logged_in(scene.dash.nina)
    assert client.get(scene.url(suffix)).status_code == 404
    assert scene.item not in client.get("/reviews/").content.decode()


@pytest.mark.parametrize("suffix", ["decide/", "reserve/", "release/"])
def test_non_members_get_404_for_every_review_form(scene: Scene, suffix: str) -> None:
    before = wf.head(scene.group)
    response = logged_in(scene.dash.nina).post(
        scene.url(suffix), {"action": "accept", **verdicts(c1="pass", c2="pass")}
    )
    assert response.status_code == 404
    assert wf.head(scene.group) == before


def test_a_work_item_never_submitted_has_no_review_page(dash: Dashboard) -> None:
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    response = logged_in(world.olga).get(f"/groups/{world.group}/work-items/{item}/review/")
    assert response.status_code == 404


def test_a_review_post_without_the_csrf_token_is_refused(scene: Scene) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=scene.dash.world.olga.username))
    before = wf.head(scene.group)
    response = client.post(
        scene.url("decide/"), {"action": "accept", **verdicts(c1="pass", c2="pass")}
    )
    assert response.status_code == 403
    assert wf.head(scene.group) == before


# --- what holds a decision, in words; nothing typed is lost (issue 34 §1–3, §6, §7) ----------


def outside_details(html: str) -> str:
    """The visible text of ``html`` without its collapsed technical details and scripts."""
    html = re.sub(r'<details class="technical-details">.*?</details>', " ", html, flags=re.S)
    html = re.sub(r"<script\b.*?</script>", " ", html, flags=re.S)
    return unescape(text(html))


#: what a person never reads outside technical details (issue 34 §6)
JARGON = re.compile(r"\bR\d+\.\d+-\d+\b|wire§|\b[A-Z]{2,}(?:_[A-Z]+)+\b|\b(?:user|agent):[a-z]")


@dataclass
class FailingStore:
    """The artifact store as the authority reads it, with every stored object corrupted."""

    def intact(self, digest: str) -> bool:
        return False

    def read(self, digest: str, limit: int) -> bytes | None:
        return STORE.read(digest, limit)


def unchecked_item(dash: Dashboard) -> str:
    """Submitted, the authority's checks not run yet (they are owed: R13.2-03)."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    lease = wf.start(world, item)
    wf.submit_result(world, item, lease, artifact=b"# Summary\n\nNot checked yet.\n")
    return item


def test_accept_waits_disabled_while_the_authority_still_checks_and_says_so(
    dash: Dashboard,
) -> None:
    """R13.2-03, issue 34 §1: while a check is owed, Accept is on the page but disabled with
    the reason in words (the core's ``acceptance_refusal``); sending back stays possible;
    the code is only in the collapsed technical details."""
    item = unchecked_item(dash)
    html = page_html(logged_in(dash.world.olga), dash.world.group, item)
    assert "disabled" in element(html, "id", "accept-result")
    assert "disabled" not in element(html, "id", "send-back").split(">")[0]
    why = outside_details(element(html, "id", "decision-why"))
    assert why.startswith(
        "The authority is still checking the artifacts' integrity and output schemas"
    )
    assert "CHECKS_PENDING" in element(html, "id", "decision-why")  # in the details only
    assert not JARGON.search(outside_details(html)), JARGON.findall(outside_details(html))


def test_accept_waits_disabled_once_a_check_failed_and_the_failed_check_is_named(
    dash: Dashboard,
) -> None:
    """R13.2-03, issue 34 §1: a check the authority failed holds the acceptance; the page
    names it and points to sending the result back, which stays possible."""
    item = unchecked_item(dash)
    reviews.review_submission(FailingStore(), dash.world.group, item)  # type: ignore[arg-type]
    html = page_html(logged_in(dash.world.olga), dash.world.group, item)
    assert "disabled" in element(html, "id", "accept-result")
    why = outside_details(element(html, "id", "decision-why"))
    assert "check of the artifacts' integrity and output schemas failed" in why
    assert "send it back instead" in why


def test_the_failed_integrity_check_reads_as_a_sentence_not_a_list(dash: Dashboard) -> None:
    """R13.2-03: the authority's failed check names the corrupted artifact in words
    ("corrupted: sha256:…; invalid outputs: none"), where it once printed a Python list."""
    item = unchecked_item(dash)
    reviews.review_submission(FailingStore(), dash.world.group, item)  # type: ignore[arg-type]
    html = page_html(logged_in(dash.world.olga), dash.world.group, item)
    said = outside_details(html)
    assert re.search(r"corrupted: sha256:[0-9a-f]{64}; invalid outputs: none", said), said
    assert "['" not in said


def page_html(client: Client, group: str, item: str) -> str:
    return client.get(f"/groups/{group}/work-items/{item}/review/").content.decode()


def test_someone_elses_reservation_holds_the_decision_and_a_stale_post_keeps_the_notes(
    scene: Scene,
) -> None:
    """Issue 34 §2, §3: while olga's reservation runs, rita's page names olga and the time,
    and shows her Record button disabled; a post anyway answers 409 with the page, the reason
    in words and rita's verdicts and notes; nothing is appended."""
    olga = logged_in(scene.dash.world.olga)
    olga.post(scene.url("reserve/"), HTTP_ACCEPT="application/json")
    rita = logged_in(scene.rita)
    html = rita.get(scene.url()).content.decode()
    assert "disabled" in element(html, "id", "record-verdicts")
    why = outside_details(element(html, "id", "decision-why"))
    assert why.startswith("olga is reviewing this submission until")
    assert "<time datetime=" in element(html, "id", "decision-why")
    before = wf.head(scene.group)
    response = rita.post(scene.url("decide/"), {"action": "record", **verdicts(c1="pass")})
    assert response.status_code == 400  # c2 has no verdict: refused before anything is sent
    response = rita.post(
        scene.url("decide/"), {"action": "record", **verdicts(c1="pass", c2="fail")}
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "Nothing was recorded." in not_sent(html)
    assert "Someone else is reviewing this submission now" in not_sent(html)
    assert "note on c2: fail</textarea>" in html
    assert wf.head(scene.group) == before


def test_a_submission_decided_by_someone_else_says_who_and_when_and_keeps_the_verdicts(
    scene: Scene,
) -> None:
    """Issue 34 §3, §7: olga accepts first; rita's post (her page was stale) answers with the
    page: who decided, when, the criteria as the accepted review judged them, and rita's
    verdicts and notes as unsent — never a bare 404, never lost."""
    olga = logged_in(scene.dash.world.olga)
    olga.post(scene.url("decide/"), {"action": "accept", **verdicts(c1="pass", c2="pass")})
    response = logged_in(scene.rita).post(
        scene.url("decide/"), {"action": "record", **verdicts(c1="pass", c2="needs_changes")}
    )
    assert response.status_code == 409
    html = response.content.decode()
    closed = text(element(html, "id", "review-closed"))
    assert closed.startswith("This submission is no longer waiting for review: it was accepted")
    assert "by olga" in closed
    assert "<time datetime=" in element(html, "id", "review-closed")
    unsent = element(html, "id", "unsent-draft")
    assert " hidden" not in unsent.split(">")[0]
    assert "c2 Needs changes — note on c2: needs_changes" in text(unsent)
    nav = element(html, "aria-label", "Acceptance criteria")
    assert text(nav).count("pass, accepted") == 2  # not the stale "claimed"
    assert "no longer waiting for review" in not_sent(html)


def test_a_note_over_its_limit_is_stated_as_a_limit_and_kept_whole(scene: Scene) -> None:
    """Issue 34 §6: "22,000 characters; at most 10,000", the whole text given back."""
    long_note = "x" * 22_000
    fields = {"action": "record", **verdicts(c1="pass", c2="pass"), "note-c1": long_note}
    response = logged_in(scene.rita).post(scene.url("decide/"), fields)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Your note on c1 is 22,000 characters; at most 10,000." in not_sent(html)
    assert f">{long_note}</textarea>" in html
    assert 'data-limit="10000"' in element(html, "id", "note-c1")


def test_a_former_member_gets_their_verdicts_back_on_a_page_not_a_bare_404(
    scene: Scene,
) -> None:
    """Issue 34 §3, wire.md §4: rita's membership is revoked while her page is open; her
    post is 404 (the group is not hers to see) with a page that says nothing was recorded
    and gives her notes back, naming nothing of the group."""
    services.membership_revoke(
        group_id=scene.group, admin=scene.dash.world.alice.caller, principal=scene.rita.principal
    )
    response = logged_in(scene.rita).post(
        scene.url("decide/"), {"action": "record", **verdicts(c1="pass", c2="fail")}
    )
    assert response.status_code == 404
    html = response.content.decode()
    assert "Nothing was recorded" in html
    assert "You are not a member of this group" in not_sent(html)
    assert "note on c2: fail</textarea>" in html
    assert scene.item not in outside_details(html)


def test_then_next_with_nothing_else_free_says_so_in_words_that_match_the_queue(
    scene: Scene,
) -> None:
    """Issue 34 §7: the one submission left waiting is the one rita just judged: the queue
    she lands on says "1 submission waiting", so the message may not say nothing waits."""
    client = logged_in(scene.rita)
    response = client.post(
        scene.url("decide/"),
        {"action": "record", "then_next": "on", **verdicts(c1="pass", c2="pass")},
    )
    assert response.status_code == 302
    assert response["Location"].startswith("/reviews/?sent=")
    queue = client.get(response["Location"]).content.decode()
    assert "No other submission is waiting: the one you left is the only one." in text(
        element(queue, "id", "flash")
    )
    assert "Nothing else is waiting" not in queue
    assert "1</strong> submission waiting" in queue


def test_a_passed_check_is_labelled_with_its_time_once_the_artifact_is_corrupted(
    scene: Scene,
) -> None:
    """Issue 34 §7, R13.1-05: the integrity check passed when it ran; once the stored bytes
    are found corrupted, the page says the pass describes the artifact as it was then."""
    submitted = WorkItem.objects.get(group_id=scene.group, work_item_id=scene.item)
    digests = submitted.to_state().submission["artifacts"]  # type: ignore[index]
    Blob.objects.filter(digest__in=digests).update(corrupted_at=timezone.now())
    html = logged_in(scene.dash.world.olga).get(scene.url()).content.decode()
    note = text(element(html, "data-field", "corrupted-since"))
    assert note.startswith("Since these checks ran, the stored bytes of 1 artifact")
    assert "checked " in text(element(html, "class", "card review-integrity"))
    assert "corrupted since" in text(element(html, "class", "card submitted-artifacts"))


def test_the_review_page_has_no_protocol_words_outside_technical_details(scene: Scene) -> None:
    """Issue 34 §6: names, not principals; no R-ID, wire§ or error code in what a person reads
    — for the reviewer, the owner and an observer alike."""
    for persona in (scene.rita, scene.dash.world.olga, scene.dash.maria):
        html = logged_in(persona).get(scene.url()).content.decode()
        found = JARGON.findall(outside_details(html))
        assert not found, (persona.username, found)
