"""The WorkItem page's Attempts card (issue 37 §4): every offer and its answer, every lease and
how it ended, every attempt with its number and outcome, and a retry waiting for its backoff
with the last failure — brought about by real commands through the one write path.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.dashboard.attempts import attempts_card, duration_words, failure_words
from apps.work.models import WorkItem
from missionweave.protocol.examples import example_contract
from missionweave.protocol.work.items import Offer
from missionweave.protocol.work.items import WorkItem as WorkItemState
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.dashboard.plain_words import JARGON, visible_text
from tests.factories import World, now_text, unique

#: backoff before the second attempt (the authority's clock is the database's: a test waits it out)
BACKOFF_S = 1
FAILURE = "the source site answered 503 three times"


def contract(backoff_s: int = BACKOFF_S) -> dict[str, Any]:
    retry = {
        "max_attempts": 3,
        "initial_backoff_s": backoff_s,
        "backoff_multiplier": 2.0,
        "max_backoff_s": 600,
    }
    return example_contract(deadline=now_text(30 * 86400), retry=retry)


def offer_to_w2(world: World, item: str) -> str:
    offer_id = unique("o")
    body = {
        "work_item": item,
        "offers": [{"offer": offer_id, "worker": world.w2.principal, "expires_at": now_text(600)}],
        "mode": "urgent",
        "selection_basis": wf.SELECTION_BASIS,
    }
    wf.submit(world.w1, world.group, "work.offer", body)
    return offer_id


def decline(world: World, item: str, offer_id: str) -> None:
    body = {"work_item": item, "offer": offer_id, "reason": "capacity", "detail": ""}
    wf.submit(world.w2, world.group, "work.reject_offer", body)


def fail(world: World, item: str, lease: str) -> str:
    """w2 fails its attempt with evidence saying why; returns the retry's time."""
    evidence = wf.evidence(world.w2.principal, verdict="fail")
    evidence["result"]["summary"] = FAILURE
    body = {"work_item": item, "lease_id": lease, "evidence": [evidence]}
    outcome = wf.submit(world.w2, world.group, "work.fail", body)
    assert outcome.body["result"]["outcome"] == "work.retry_scheduled"
    row = WorkItem.objects.get(group_id=world.group, work_item_id=item)
    retry_at = row.to_state().retry_at
    assert retry_at is not None
    return retry_at


def page_of(dash: Dashboard, item: str) -> str:
    response = logged_in(dash.maria).get(f"/groups/{dash.world.group}/work-items/{item}/")
    assert response.status_code == 200
    return response.content.decode()


def card_of(dash: Dashboard, item: str) -> str:
    return element(element(page_of(dash, item), "id", "work-item-body"), "id", "attempts")


def attr(html: str, name: str) -> str:
    match = re.search(rf'{name}="([^"]*)"', html)
    assert match is not None, f"no {name} in {html[:200]}"
    return match.group(1)


def after_backoff() -> None:
    time.sleep(BACKOFF_S + 0.1)


def declined_then_failed(world: World) -> tuple[str, str, str, str, str]:
    """Offered, declined, offered again, accepted, leased and failed: a retry is pending."""
    item = wf.authorize(world, wf.mission(world), contract=contract())
    first_offer = offer_to_w2(world, item)
    decline(world, item, first_offer)
    second_offer = offer_to_w2(world, item)
    wf.accept(world, item, second_offer)
    lease = wf.start(world, item)
    retry_at = fail(world, item, lease)
    return item, first_offer, second_offer, lease, retry_at


@pytest.mark.django_db
def test_the_card_tells_offers_leases_attempts_and_a_pending_retry_in_words(
    dash: Dashboard,
) -> None:
    """Issue 37 §4, R10.2-03..05, R11.3-03, R11.4-08: offered, declined, offered again,
    leased, failed — the card shows the retry waiting for its backoff (attempt 2 of 3, the
    time it may start as a countdown ``countdown.js`` ticks) and the last failure in plain
    words; once the backoff has passed, a second lease and a submission end attempt 2,
    and the card lists both attempts with their numbers, leases and outcomes, and both
    offers with their answers. Names, not principals; event types only in the collapsed
    technical details."""
    world = dash.world
    item, first_offer, second_offer, lease, retry_at = declined_then_failed(world)

    card = card_of(dash, item)

    pending = element(card, "data-field", "pending-retry")
    assert text(element(pending, "data-field", "last-failure")) == FAILURE
    assert f"Attempt 1 failed: {FAILURE}" in text(pending)
    assert "Attempt 2 of 3 may start from" in text(pending)
    countdown = element(pending, "data-field", "backoff-countdown")
    assert attr(countdown, "data-countdown") == retry_at
    assert attr(countdown, "data-passed-text") == "due now"
    assert attr(countdown, "role") == "timer"
    assert f'datetime="{retry_at}"' in pending
    assert text(element(card, "data-field", "attempts-used")) == "1 of 3"
    failed = element(card, "data-attempt", "1")
    assert attr(failed, "data-outcome") == "failed"
    assert text(element(failed, "data-field", "reason")) == FAILURE
    ended = element(failed, "data-lease", lease)
    assert attr(ended, "data-ended") == "revoked"
    assert "Lease held by w2 for" in text(ended)
    assert "revoked: the attempt failed" in text(ended)

    after_backoff()
    second_lease = wf.start(world, item)
    wf.submit_result(world, item, second_lease)

    body = element(page_of(dash, item), "id", "work-item-body")
    card = element(body, "id", "attempts")
    assert 'data-field="pending-retry"' not in card
    assert text(element(card, "data-field", "attempts-used")) == "2 of 3"
    attempts = element(card, "data-field", "attempt-list")
    assert re.findall(r'data-attempt="(\d+)"', attempts) == ["2", "1"]
    second = element(attempts, "data-attempt", "2")
    assert attr(second, "data-outcome") == "submitted"
    assert text(element(second, "data-field", "outcome")) == "submitted"
    completed = element(second, "data-lease", second_lease)
    assert attr(completed, "data-ended") == "completed"
    assert "completed: the result was submitted" in text(completed)
    first = element(attempts, "data-attempt", "1")
    assert "Failed" in text(element(first, "data-field", "attempt-words"))
    assert FAILURE in text(first)

    offers = element(card, "data-field", "offer-list")
    assert re.findall(r'data-offer="([^"]+)"', offers) == [first_offer, second_offer]
    declined = element(offers, "data-offer", first_offer)
    assert attr(declined, "data-status") == "declined"
    assert "Offered to w2" in text(declined)
    assert text(element(declined, "data-field", "offer-words")) == "declined: no capacity"
    accepted = element(offers, "data-offer", second_offer)
    assert text(element(accepted, "data-field", "offer-words")) == "accepted"

    # plain words: no principal, code or event type outside the collapsed details
    visible = visible_text(card)
    assert [name for name, pattern in JARGON.items() if pattern.search(visible)] == []
    assert not re.search(r"\b(work|lease)\.[a-z]", visible)
    assert 'data-field="attempts-capped"' not in card
    # the live section carries the card too (the page swaps it in when events arrive)
    section = logged_in(dash.maria).get(f"/groups/{world.group}/work-items/{item}/section/")
    assert 'id="attempts"' in section.content.decode()


@pytest.mark.django_db
def test_a_start_after_a_checkpoint_resumes_its_attempt_rather_than_counting_a_new_one(
    dash: Dashboard,
) -> None:
    """docs/protocol.md "What counts as an attempt" (issue 35): a checkpoint that releases the
    lease is how a worker preempts itself; the start after it continues attempt 1, so the card
    shows one attempt with two leases — the first released at a checkpoint — not two."""
    world = dash.world
    item = wf.queued(world, wf.mission(world), contract=contract())
    first = wf.start(world, item)
    wf.checkpoint(world, item, first, ref="draft-1")

    card = card_of(dash, item)
    paused = element(card, "data-attempt", "1")
    assert attr(paused, "data-outcome") == "preempted"
    assert "the next start resumes from it" in text(paused)

    second = wf.start(world, item)
    card = card_of(dash, item)
    assert re.findall(r'data-attempt="(\d+)"', card) == ["1"]
    attempt = element(card, "data-attempt", "1")
    assert attr(attempt, "data-outcome") == "running"
    assert "resumed once from where it stopped" in text(attempt)
    released = element(attempt, "data-lease", first)
    assert attr(released, "data-ended") == "released"
    assert "released at a checkpoint" in text(released)
    held = element(attempt, "data-lease", second)
    assert attr(held, "data-ended") == "active"
    timer = element(held, "role", "timer")  # its expiry counts down
    assert attr(timer, "data-countdown") == attr(timer, "datetime")
    assert text(element(card, "data-field", "attempts-used")) == "1 of 3"


@pytest.mark.django_db
def test_the_card_reads_a_bounded_number_of_queries_however_many_attempts(
    dash: Dashboard,
) -> None:
    """Bounded reads (issue 37 §4): the card is built from the item's projection and the
    events it lists, already read for the history, so a page with three attempts, many
    renewals and two offers costs no more queries than one with a single attempt."""
    world = dash.world
    client = logged_in(dash.maria)
    one = wf.queued(world, wf.mission(world), contract=contract())
    wf.start(world, one)
    many, *_ = declined_then_failed(world)
    after_backoff()
    lease = wf.start(world, many)
    for _ in range(5):
        wf.renew(world, many, lease)
    wf.checkpoint(world, many, lease)
    wf.start(world, many)
    client.get(f"/groups/{world.group}/work-items/{one}/")  # warm the session and caches

    counts = []
    for item in (one, many):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(f"/groups/{world.group}/work-items/{item}/")
        assert response.status_code == 200
        counts.append(len(queries))
    assert counts[1] <= counts[0], counts


@pytest.mark.django_db
def test_an_item_whose_past_is_longer_than_its_kept_events_says_earlier_ones_are_not_shown(
    world: World,
) -> None:
    """The projection keeps an item's latest events only (``HISTORY_LIMIT``): the card never
    reads further back, and says so."""
    item = wf.queued(world, wf.mission(world), contract=contract())
    state = WorkItem.objects.get(group_id=world.group, work_item_id=item).to_state()
    card = attempts_card(state, [], complete=False)
    assert card.capped
    assert card.offers == ()
    assert card.attempts == ()
    assert (card.attempts_used, card.max_attempts) == (0, 3)


def test_plain_words_for_durations_and_failures() -> None:
    """A held lease reads "4 min", a failure reads as its evidence summaries."""
    assert duration_words(40) == "40 s"
    assert duration_words(4 * 60 + 59) == "4 min"
    assert duration_words(2 * 3600 + 5 * 60) == "2 h 5 min"
    assert duration_words(5 * 86400) == "5 days"
    evidence = [
        {"result": {"verdict": "pass", "summary": "c2 fine"}},
        {"result": {"verdict": "fail", "summary": "timed  out"}},
    ]
    assert failure_words({"evidence": evidence}) == "timed out"
    assert failure_words({"evidence": []}) == "no reason given"


def _event(sequence: int, type_: str, at: str, **payload: Any) -> dict[str, Any]:
    return {"sequence": sequence, "type": type_, "recorded_at": at, "payload": payload}


def test_an_unanswered_offer_expires_and_an_expired_lease_ends_its_attempt_reassigned() -> None:
    """R10.2-05, R11.3-09, R11.5-01, pure shaping: an offer nobody answered before the next
    round reads "expired unanswered"; a lease that ran out reads "expired", and the attempt it
    held ends "reassigned" because its lease expired."""
    item = WorkItemState(
        id="wi-1",
        mission="m-1",
        state="offered",
        revision=1,
        contract=contract(),
        depends_on=(),
        authorized_by="agent:w1",
        attempts=1,
        offers=(
            Offer("o1", "agent:w2", "2026-01-01T10:05:00Z", "urgent", 0, 1, "superseded"),
            Offer("o2", "agent:w3", "2026-01-01T10:20:00Z", "urgent", 0, 1, "accepted"),
        ),
    )
    lease = {
        "lease_id": "l1",
        "agent": "agent:w3",
        "started_at": "2026-01-01T10:12:00Z",
        "expires_at": "2026-01-01T10:17:00Z",
    }
    documents = [
        _event(1, "work.authorized", "2026-01-01T10:00:00Z", work_item="wi-1"),
        _event(
            2,
            "work.offered",
            "2026-01-01T10:00:00Z",
            offers=[{"offer": "o1", "worker": "agent:w2", "expires_at": "2026-01-01T10:05:00Z"}],
        ),
        _event(
            3,
            "work.offered",
            "2026-01-01T10:10:00Z",
            offers=[{"offer": "o2", "worker": "agent:w3", "expires_at": "2026-01-01T10:20:00Z"}],
        ),
        _event(4, "work.offer_accepted", "2026-01-01T10:11:00Z", offer="o2", worker="agent:w3"),
        _event(5, "work.started", "2026-01-01T10:12:00Z", lease=lease, attempt=1),
        _event(6, "lease.expired", "2026-01-01T10:18:00Z", lease_id="l1"),
        _event(7, "work.reassigned", "2026-01-01T10:18:00Z", reason="lease_expired"),
    ]

    card = attempts_card(item, documents, complete=True)

    assert [(o.worker, o.words) for o in card.offers] == [
        ("agent:w2", "expired unanswered"),
        ("agent:w3", "accepted"),
    ]
    [attempt] = card.attempts
    assert (attempt.number, attempt.outcome, attempt.reason) == (
        1,
        "reassigned",
        "its lease expired",
    )
    [held] = attempt.leases
    assert (held.ended, held.words, held.held_for) == (
        "expired",
        "expired without a renewal",
        "6 min",
    )
    assert card.pending is None
    assert not card.capped
    assert card.principals == {"agent:w2", "agent:w3"}
