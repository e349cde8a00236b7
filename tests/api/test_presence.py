"""``POST /presence``: an agent reports its current capacity (R11.1-11; wire.md §4)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.registry.presence import presences
from missionweave.protocol.timefmt import parse_timestamp
from tests.factories import World

from .http import error_of, json_of, post

pytestmark = pytest.mark.django_db

REPORT = {"slots": 3, "slots_free": 2, "resources": {"gpu": {"total": 1, "free": 0}}}


def test_an_agent_reports_its_capacity_and_the_latest_report_is_kept(
    api: APIClient, world: World
) -> None:
    """R11.1-11: Presence reports current capacity; a later report replaces the earlier."""
    first = json_of(post(api, "/presence", REPORT, world.w2.token), 200)
    assert first["agent"] == "agent:w2"
    assert (first["slots"], first["slots_free"]) == (3, 2)
    assert first["resources"] == {"gpu": {"total": 1, "free": 0}}
    parse_timestamp(first["reported_at"])
    json_of(post(api, "/presence", {"slots": 3, "slots_free": 0}, world.w2.token), 200)
    report, _ = presences(["w2"])["w2"]
    assert report == {"slots": 3, "slots_free": 0, "resources": {}}
    assert "w1" not in presences(["w1", "w2"])  # never reported


def test_presence_is_an_agents_and_a_bad_report_is_malformed(api: APIClient, world: World) -> None:
    """R11.1-11, wire.md §8: a person has no Presence (403); no token is 401; a report that
    says more slots free than it has, or names a group (R11.2-02), is 400 at its path."""
    error_of(post(api, "/presence", REPORT, world.olga.token), 403, "FORBIDDEN")
    error_of(post(api, "/presence", REPORT), 401, "UNAUTHENTICATED")
    bad = {"slots": 2, "slots_free": 3}
    error = error_of(post(api, "/presence", bad, world.w2.token), 400, "MALFORMED")
    assert error["details"]["path"] == "$.slots_free"
    error = error_of(
        post(api, "/presence", {**REPORT, "group": "g"}, world.w2.token), 400, "MALFORMED"
    )
    assert error["details"]["path"] == "$.group"
    assert presences(["w2"]) == {}
