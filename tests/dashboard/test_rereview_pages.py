"""Re-review: the review page of a resubmitted WorkItem says what changed since the previous
submission, output by output, and how that submission was decided (issue 37 §6; R13.2-03,
R10.2-13, R10.2-03).

Real PostgreSQL; every command through the one write path: w2 submits, a person (or the
coordinator agent) sends it back, the coordinator offers it again, w2 submits changed outputs.
"""

from __future__ import annotations

from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.dashboard import resubmission_reads
from apps.work.models import WorkItem
from tests.dashboard import resubmissions as story
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import store_bytes

pytestmark = pytest.mark.django_db


def review_url(group: str, item: str) -> str:
    return f"/groups/{group}/work-items/{item}/review/"


def test_a_first_submission_shows_no_changes_card(dash: Dashboard) -> None:
    world = dash.world
    _mission, item = story.first_submission(world)
    html = logged_in(world.olga).get(review_url(world.group, item)).content.decode()
    assert "Automatic checks by the authority" in html  # the page itself is there
    assert 'id="review-changes"' not in html
    assert "What changed since the last submission" not in html


def test_a_resubmission_sent_back_by_a_person_shows_the_decision_and_each_outputs_change(
    dash: Dashboard,
) -> None:
    """R10.2-13 → R10.2-03 → R10.2-11: olga sends the result back on the review page, the
    coordinator offers the item again, w2 submits a changed summary and changed findings;
    the new review page names olga's decision with her notes, shows the summary's lines and
    the findings' values by path, and the card sits above the evidence."""
    world = dash.world
    _mission, item = story.first_submission(world)
    client = logged_in(world.olga)
    sent = client.post(
        review_url(world.group, item) + "decide/",
        {
            "action": "send_back",
            "verdict-c1": "pass",
            "note-c1": "",
            "verdict-c2": "needs_changes",
            "note-c2": "Count the DNS outage too",
        },
    )
    assert sent.status_code == 302
    assert wf.state_of(world.group, item) == "failed"
    story.resubmit(world, item)
    assert wf.state_of(world.group, item) == "submitted"

    html = client.get(review_url(world.group, item)).content.decode()
    card = element(html, "id", "review-changes")
    words = unescape(text(card))
    assert "What changed since the last submission" in words
    assert "was sent back by you" in words
    assert "Count the DNS outage too" in words
    assert "needs changes" in words
    # the summary: a line diff, collapsed
    summary = element(card, "data-output", "summary")
    assert 'data-change="changed"' in summary
    diff = element(summary, "data-field", "text-diff")
    assert diff.startswith("<details")
    assert " open" not in diff.split(">", 1)[0]
    assert "+2" in text(diff)
    assert "−1" in text(diff)
    assert "Eleven incidents in November." in unescape(diff)
    assert "Ten incidents in November." in unescape(diff)
    # the findings: values by path
    findings = unescape(text(element(card, "data-output", "findings")))
    assert '$.findings[2] changed: "expired certificate" → became "expired TLS certificate"' in (
        findings
    )
    assert '$.findings[3] added: "DNS outage"' in findings
    assert "$.count changed: 10 → became 11" in findings
    # digests only in the technical details
    item_row = WorkItem.objects.get(group_id=world.group, work_item_id=item).to_state()
    now = item_row.submission["outputs"]["summary"]
    assert now in element(summary, "class", "technical-details")
    assert now not in summary.split('<details class="technical-details">')[0].replace(
        f"/artifacts/{now}/", ""
    )
    # above the evidence, and the old send-back is not shown a second time as this one's
    assert html.index('id="review-changes"') < html.index("Automatic checks by the authority")
    assert 'id="review-outcome"' not in html


def test_a_send_back_by_the_coordinator_agent_is_named_and_unchanged_outputs_are_listed(
    dash: Dashboard,
) -> None:
    """The coordinator agent's ``work.fail`` of a submitted item (R10.2-13); a resubmission
    that keeps one output's bytes lists it as unchanged, and only the other as changed."""
    world = dash.world
    _mission, item = story.first_submission(world)
    wf.submit(
        world.w1,
        world.group,
        "work.fail",
        {"work_item": item, "evidence": story.send_back_evidence(world.w1.principal)},
    )
    wf.accept(world, item, wf.offer(world, item))
    lease = wf.start(world, item, epoch=2)
    story.submit_outputs(world, item, lease, story.SUMMARY_BEFORE, story.FINDINGS_AFTER)
    html = logged_in(world.olga).get(review_url(world.group, item)).content.decode()
    card = unescape(text(element(html, "id", "review-changes")))
    assert "was sent back by w1" in card  # the coordinator agent, by its name
    assert "Count the DNS outage too" in card
    assert "Unchanged: summary." in card
    assert 'data-output="summary"' not in html
    assert 'data-output="findings"' in html


def test_a_binary_output_only_says_its_bytes_differ_and_an_extra_artifact_is_new(
    dash: Dashboard,
) -> None:
    world = dash.world
    _mission, item = story.first_submission(world)
    wf.submit(
        world.w1,
        world.group,
        "work.fail",
        {"work_item": item, "evidence": story.send_back_evidence(world.w1.principal)},
    )
    wf.accept(world, item, wf.offer(world, item))
    lease = wf.start(world, item, epoch=2)
    png = store_bytes(world.w2.principal, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-chart")
    summary = store_bytes(world.w2.principal, b"\x00\x01 not text")
    findings = store_bytes(world.w2.principal, b'{"findings": []}')
    body = {
        "work_item": item,
        "lease_id": lease,
        "artifacts": [summary, findings, png],
        "outputs": {"summary": summary, "findings": findings},
        "evidence": [wf.evidence(world.w2.principal, c) for c in ("c1", "c2")],
    }
    wf.submit(world.w2, world.group, "work.submit", body)
    html = logged_in(world.olga).get(review_url(world.group, item)).content.decode()
    card = element(html, "id", "review-changes")
    words = unescape(text(element(card, "data-output", "summary")))
    assert "Its bytes differ from the previous submission" in words
    assert "not text" in words
    extra = element(card, "data-change", "new")
    assert "not in the previous submission" in text(extra)
    assert png in extra


def test_a_large_output_is_not_diffed_and_the_card_says_so(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded work: a side over the comparison limit is never read for a diff."""
    world = dash.world
    _mission, item = story.first_submission(world)
    wf.submit(
        world.w1,
        world.group,
        "work.fail",
        {"work_item": item, "evidence": story.send_back_evidence(world.w1.principal)},
    )
    wf.accept(world, item, wf.offer(world, item))
    lease = wf.start(world, item, epoch=2)
    big = b"# Summary\n\n" + b"A long line of the report.\n" * 12_000  # ~320 KiB
    story.submit_outputs(world, item, lease, big, story.FINDINGS_BEFORE)
    reads: list[str] = []
    real = resubmission_reads.previews.verified_head

    def counted(digest: str, keep: int, *, principal: str) -> tuple[bytes, int]:
        reads.append(digest)
        return real(digest, keep, principal=principal)

    monkeypatch.setattr(resubmission_reads.previews, "verified_head", counted)
    html = logged_in(world.olga).get(review_url(world.group, item)).content.decode()
    words = unescape(text(element(html, "data-output", "summary")))
    assert "not compared: over 256 KiB: too large to compare here" in words
    row = WorkItem.objects.get(group_id=world.group, work_item_id=item).to_state()
    assert row.submission["outputs"]["summary"] not in reads


def test_the_card_costs_a_bounded_number_of_queries(dash: Dashboard) -> None:
    """The previous submission is found on the projection, its events read by sequence: the
    card adds a fixed handful of queries, whatever the group's log holds."""
    world = dash.world
    _mission, item = story.first_submission(world)
    wf.submit(
        world.w1,
        world.group,
        "work.fail",
        {"work_item": item, "evidence": story.send_back_evidence(world.w1.principal)},
    )
    story.resubmit(world, item)
    row = WorkItem.objects.get(group_id=world.group, work_item_id=item).to_state()
    with CaptureQueriesContext(connection) as queries:
        card = resubmission_reads.changes_since_previous(
            world.group, row, int(row.submission["sequence"]), principal=world.olga.principal
        )
    assert card is not None
    assert len(queries) <= 3
    assert [o.name for o in card.changed] == ["summary", "findings"]
