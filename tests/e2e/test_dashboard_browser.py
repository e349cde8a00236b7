"""The dashboard in a real browser against a real server: log in, open a group, read its
verified Timeline, and watch an event appended by the write path arrive live over the
websocket, re-verified by the browser.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from playwright.sync_api import Page, expect

from apps.ledger.models import Event
from apps.ledger.write_path import submit_command
from missionweave.protocol.canonical import canonical_bytes
from tests.factories import HumanPersona, World, build_world, grant, human, mission_body
from tests.live_server import LiveServer, in_plain_thread, run_live_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"
LIVE_TIMEOUT_MS = 5_000


@dataclass
class People:
    world: World
    maria: HumanPersona  # observer of g-research
    nina: HumanPersona  # in no group


def with_password(persona: HumanPersona) -> HumanPersona:
    user = get_user_model().objects.get(username=persona.username)
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    return persona


@pytest.fixture
def people(transactional_db: None) -> People:
    """Committed, so the server process sees them."""
    world = build_world()
    maria = with_password(human("maria"))
    grant(world.alice, world.group, maria, "observer")
    return People(world, maria, with_password(human("nina")))


def log_in(page: Page, server: LiveServer, username: str) -> None:
    page.goto(f"{server.url}/")
    expect(page).to_have_url(f"{server.url}/login/?next=/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{server.url}/")


def append_mission(world: World) -> int:
    """A ``mission.create`` by the coordinator agent through the one write path, committed,
    from a thread without Playwright's event loop (so its after-commit hint is sent too)."""

    def submit() -> int:
        outcome = submit_command(
            group_id=world.group,
            document=world.w1.command(world.group, "mission.create", mission_body()),
            caller=world.w1.caller,
        )
        return outcome.body["events"][0]["sequence"]

    return in_plain_thread(submit)


def test_a_member_sees_the_verified_timeline_and_new_events_arrive_live(
    people: People, live_asgi_server: LiveServer, page: Page
) -> None:
    """wire§6, wire§7, R16-03, R16-09: the group page leads to the Timeline, which shows the
    log newest first with the chain verified by the server; an event appended afterwards
    arrives over the websocket at the top, in words, without a reload, and the browser
    re-checks it against its predecessor (issue 37 §1)."""
    server = live_asgi_server
    log_in(page, server, "maria")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Groups").click()
    expect(page).to_have_url(f"{server.url}/groups/")

    group_card = page.locator('li.group-card[data-group="g-research"]')
    expect(group_card).to_contain_text("4 events")
    group_card.get_by_role("link", name="g-research").click()
    expect(page).to_have_url(f"{server.url}/groups/g-research/")
    page.get_by_role("link", name="Timeline: every event, in words").click()
    expect(page).to_have_url(f"{server.url}/groups/g-research/timeline/")

    expect(page.locator("#chain-status")).to_contain_text("✓ Verified")
    events = page.locator("#timeline-lines > li.tl-line")
    expect(events).to_have_count(4)
    expect(events.first).to_have_attribute("data-sequence", "4")
    expect(events.first).to_have_attribute("data-verdict", "verified")

    first = page.locator('li.tl-line[data-sequence="1"]')
    payload = first.locator('[data-field="json"]')
    expect(payload).to_be_hidden()
    first.locator("summary").click()
    expect(payload).to_be_visible()
    expect(payload).to_contain_text('"principal": "user:olga"')

    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")

    sequence = append_mission(people.world)
    newest = events.first
    expect(newest).to_have_attribute("data-sequence", str(sequence), timeout=LIVE_TIMEOUT_MS)
    expect(newest).to_have_attribute("data-verdict", "verified")
    expect(newest).to_have_attribute("data-browser", "verified")
    expect(newest).to_contain_text("w1 created the mission")  # its card's name
    expect(newest.locator(".tl-line__words")).not_to_contain_text("agent:w1")
    expect(page.locator('[data-field="head"]')).to_have_text(str(sequence))

    # The next one links onto the live one, and the page was never reloaded.
    marker = page.evaluate("() => (window.__sameDocument = true)")
    assert marker is True
    following = append_mission(people.world)
    expect(events.first).to_have_attribute("data-sequence", str(following), timeout=LIVE_TIMEOUT_MS)
    expect(events.first).to_have_attribute("data-browser", "verified")
    expect(events).to_have_count(6)
    assert page.evaluate("() => window.__sameDocument") is True
    expect(page.locator("#timeline-live")).to_have_attribute("data-browser", "verified")
    expect(page.locator("#timeline-live")).to_contain_text("✓ 2 new events")


def test_a_non_member_sees_no_such_group(
    people: People, live_asgi_server: LiveServer, page: Page
) -> None:
    """wire§2, wire§4: nina belongs to no group: her list is empty and the group's page is a
    404, the same as for a group that does not exist."""
    server = live_asgi_server
    log_in(page, server, "nina")
    page.goto(f"{server.url}/groups/")
    expect(page.locator(".empty")).to_contain_text("not a member of any group")
    expect(page.locator('li.group-card[data-group="g-research"]')).to_have_count(0)

    response = page.goto(f"{server.url}/groups/g-research/")
    assert response is not None
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("Not found")
    missing = page.goto(f"{server.url}/groups/g-nowhere/")
    assert missing is not None
    assert missing.status == 404


# Values where a home-made canonicaliser usually goes wrong: number forms, -0, escapes,
# non-ASCII, and keys whose UTF-16 order differs from their code point order.
TRICKY_JSON = [
    '{"b": 1, "a": [1.5, -0.0, 1e21, 1e-7, 0.1, 100, 123456789012345, 5.0, 2e-6]}',
    '{"text": "line\\u2028sep \\u0000 \\"quoted\\" \\\\ tab\\t é 😀", "none": null, "t": true}',
    '{"\\uff61": 1, "\\ud83d\\ude00": 2, "€": 3, "a": 4, "A": 5, "": 6}',
    '[{"z": {"y": [], "x": {}}}, "", 0, -1.25e-300, 9007199254740991]',
]


def test_the_browser_canonical_form_and_hashes_match_the_authority(
    people: People, live_asgi_server: LiveServer, page: Page
) -> None:
    """wire§1, wire§6: the page's own RFC 8785 canonicaliser gives the authority's bytes, and
    its hash of a served event is the event's ``hash``."""
    documents = in_plain_thread(
        lambda: list(
            Event.objects.filter(group_id=people.world.group)
            .order_by("sequence")
            .values_list("document", flat=True)
        )
    )
    page.goto(f"{live_asgi_server.url}/login/")
    browser_side = page.evaluate(
        """async ([tricky, events]) => {
            const jcs = await import("/static/dashboard/canonical.js");
            return {
                canonical: tricky.map((text) => jcs.canonicalize(JSON.parse(text))),
                hashes: await Promise.all(events.map((text) => jcs.eventHash(JSON.parse(text)))),
            };
        }""",
        [TRICKY_JSON, documents],
    )
    expected = [canonical_bytes(json.loads(text)).decode("utf-8") for text in TRICKY_JSON]
    assert browser_side["canonical"] == expected
    assert browser_side["hashes"] == [json.loads(text)["hash"] for text in documents]


def test_the_page_reconnects_and_resumes_after_the_last_event_it_saw(
    people: People, page: Page, worker_id: str
) -> None:
    """wire§7, R16-09, R16-03: when the server goes away the page says so and retries with
    backoff; once it is back, the page resubscribes after the last sequence it saw and the
    event appended meanwhile arrives once, verified against its predecessor."""
    database = connection.settings_dict["NAME"]
    prefix = f"mwp-test-{worker_id}-reconnect"
    with run_live_server(database_name=database, channel_prefix=prefix) as first:
        log_in(page, first, "maria")
        page.goto(f"{first.url}/groups/g-research/timeline/")
        expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
        port = int(first.url.rsplit(":", 1)[1])

    connection_status = page.locator("#connection-status")
    expect(connection_status).to_have_attribute("data-state", re.compile("reconnecting|connecting"))
    expect(connection_status).to_contain_text(re.compile("reconnecting|connecting"))
    sequence = append_mission(people.world)  # while no server is up

    with run_live_server(database_name=database, channel_prefix=prefix, port=port):
        expect(connection_status).to_have_attribute("data-state", "live", timeout=20_000)
        newest = page.locator("#timeline-lines > li.tl-line").first
        expect(newest).to_have_attribute("data-sequence", str(sequence), timeout=LIVE_TIMEOUT_MS)
        expect(newest).to_have_attribute("data-verdict", "verified")
        expect(newest).to_have_attribute("data-browser", "verified")
        lines = page.locator("#timeline-lines > li.tl-line")
        expect(lines.and_(page.locator(f'[data-sequence="{sequence}"]'))).to_have_count(1)
        expect(lines).to_have_count(5)
