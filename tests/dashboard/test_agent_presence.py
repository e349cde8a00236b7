"""Agents' Presence on the members screen, in words (R11.1-11): "2 of 3 slots free, seen
10 s ago", beside the agent's name; a person, or an agent that never reported, shows none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.dashboard.presence import presence_words
from apps.registry.models import AgentPresence
from apps.registry.presence import report_presence
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import text

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def test_presence_in_words_slots_then_each_resource_then_its_age() -> None:
    """R11.1-11: free of total, for the slots and each named resource; how old the report is."""
    report = {"slots": 3, "slots_free": 2, "resources": {"memory_gb": {"total": 64, "free": 8.5}}}
    assert presence_words(report, NOW - timedelta(seconds=10), NOW) == (
        "2 of 3 slots free, memory gb: 8.5 of 64 free, seen 10 s ago"
    )
    one = {"slots": 1, "slots_free": 0, "resources": {}}
    assert (
        presence_words(one, NOW - timedelta(minutes=3), NOW) == "0 of 1 slot free, seen 3 min ago"
    )


@pytest.mark.django_db
def test_the_members_screen_shows_each_reporting_agents_capacity(dash: Dashboard) -> None:
    """R11.1-11: the agent's latest report, on its row; nothing for one that never reported."""
    report_presence(
        "w2", {"slots": 3, "slots_free": 2, "resources": {"gpu": {"total": 1, "free": 0}}}
    )
    AgentPresence.objects.filter(agent_id="w2").update(
        reported_at=timezone.now() - timedelta(minutes=10)
    )
    page = logged_in(dash.world.alice).get(f"/groups/{dash.world.group}/members/")
    assert page.status_code == 200
    html = page.content.decode()
    w2 = html.split('data-principal="agent:w2"')[1].split("</li>")[0]
    assert "2 of 3 slots free, gpu: 0 of 1 free, seen 10 min ago" in text(w2)
    w1 = html.split('data-principal="agent:w1"')[1].split("</li>")[0]
    assert "slots free" not in text(w1)
