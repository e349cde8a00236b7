"""Every dashboard screen in plain words (issue 34 §6): signed in as the admin, a mission owner
and a reviewer of the demo's world, no page a person reads shows an R-ID, a ``wire§``
section, an UPPER_CASE error code, the protocol's ``epoch`` or a raw ``user:``/``agent:``
principal outside its collapsed technical details.

The walk covers every route of ``apps/dashboard/urls.py``: a route the walk does not know
how to fill fails the test, so a new screen is walked from the day it is added.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, get_resolver, reverse

from apps.artifacts.models import GroupArtifact
from apps.dashboard.accounts import create_token
from apps.demo import cast, story
from apps.ledger.write_path import Caller, submit_as_human
from apps.registry.models import ApiToken, Membership
from apps.work.models import Mission, WorkItem
from tests.dashboard.plain_words import jargon_in, visible_text

pytestmark = pytest.mark.django_db

#: routes that answer no page to a GET: forms' POST targets, downloads, raw bytes (a POST
#: target not named here answers 405 to the walk's GET, which skips it)
NOT_PAGES = frozenset(
    {
        "logout",
        "work-item-approve",
        "mission-approve",
        "mission-cancel",
        "approval-refuse",
        "review-decide",
        "review-reserve",
        "review-release",
        "account-password",
        "account-token-create",
        "account-sessions-end",
        "members-grant",
        "members-export",  # a JSON download
        "artifact-raw",  # the artifact's own bytes, sandboxed
        "reviews-next",  # a redirect to the next review
    }
)


def _dashboard_routes() -> dict[str, URLPattern]:
    resolver = get_resolver()
    for pattern in resolver.url_patterns:
        if getattr(pattern, "namespace", None) == "dashboard":
            return {p.name: p for p in pattern.url_patterns if p.name}
    raise AssertionError("no dashboard namespace")


def _refuse_one(world: cast.DemoWorld) -> None:
    """A refused execution: olivia refuses the two-approval item (it then waits for a
    corrected contract, shown on the inbox, the group and the item's pages)."""
    item = WorkItem.objects.get(group_id=cast.GROUP, work_item_id=story.REVOKE)
    outcome = submit_as_human(
        caller=Caller(principal="user:olivia", kind="user", is_staff=False),
        group_id=cast.GROUP,
        type_="approval.refuse_execution",
        body={
            "work_item": item.work_item_id,
            "contract_revision": item.data["revision"],
            "comment": "It writes to production accounts; scope it to one account first.",
        },
        command_id="walk-refuse",
    )
    assert outcome.status == 201, outcome.body


#: the query a confirmation page asks for: who is to be revoked
QUERIES = {"members-revoke": "?principal=user:omar"}


def _args(name: str, pattern: URLPattern, group: str, user: object) -> Iterator[list[str]]:
    """Every way to fill the route's parameters from the demo group's rows."""
    keys = list(pattern.pattern.converters)
    if not keys:
        yield []
        return
    values: dict[str, list[str]] = {
        "group": [group],
        "work_item": list(
            WorkItem.objects.filter(group_id=group).values_list("work_item_id", flat=True)
        ),
        "mission": list(
            Mission.objects.filter(group_id=group).values_list("mission_id", flat=True)
        ),
        "digest": list(
            GroupArtifact.objects.filter(group_id=group).values_list("digest", flat=True)[:6]
        ),
        "agent": [  # the group's agents (issue 37 §3)
            principal.removeprefix("agent:")
            for principal in Membership.objects.filter(
                group_id=group, active=True, principal__startswith="agent:"
            ).values_list("principal", flat=True)
        ],
        "person": [  # the group's people, by username (issue 37 §3)
            principal.removeprefix("user:")
            for principal in Membership.objects.filter(
                group_id=group, active=True, principal__startswith="user:"
            ).values_list("principal", flat=True)
        ],
        "token": [
            str(pk) for pk in ApiToken.objects.filter(user=user).values_list("pk", flat=True)
        ],
    }
    unknown = [key for key in keys if key not in values]
    assert not unknown, f"the walk cannot fill {unknown} of dashboard:{name}"
    for combo in itertools.product(*(values[key] for key in keys)):
        yield list(combo)


def _walk(client: Client, group: str, user: object) -> Iterator[tuple[str, str, str]]:
    """(route name, address, page) of every page the client may open."""
    for name, pattern in sorted(_dashboard_routes().items()):
        if name in NOT_PAGES or name == "login":
            continue
        for args in _args(name, pattern, group, user):
            url = reverse(f"dashboard:{name}", args=args) + QUERIES.get(name, "")
            response = client.get(url)
            assert response.status_code in {200, 302, 403, 404, 405}, (url, response.status_code)
            if response.status_code == 200 and "html" in response.get("Content-Type", ""):
                yield name, url, response.content.decode()


@pytest.fixture
def demo(tmp_path: Path) -> cast.DemoWorld:
    built = cast.demo_seed(keys_dir=tmp_path, password="pw")
    story.seed_work(built)
    _refuse_one(built)
    return built


def test_every_route_is_walked_or_named_as_not_a_page() -> None:
    """A new route is walked (or named in NOT_PAGES) from the day it is added."""
    routes = _dashboard_routes()
    assert routes.keys() >= NOT_PAGES
    for name, pattern in routes.items():
        keys = set(pattern.pattern.converters)
        assert keys <= {"group", "work_item", "mission", "digest", "token", "agent", "person"}, name


@pytest.mark.parametrize("username", ["admin", "olivia", "rita"])
def test_no_screen_shows_protocol_words_to_a_person(demo: cast.DemoWorld, username: str) -> None:
    """Issue 34 §6: admin, a mission owner and a reviewer read no R-ID, wire§, error code,
    epoch or raw principal on any screen outside the collapsed technical details."""
    user = get_user_model().objects.get(username=username)
    create_token(user, "walk")
    client = Client()
    client.force_login(user)
    found: dict[str, set[tuple[str, str]]] = {}
    pages = 0
    for name, url, html in _walk(client, cast.GROUP, user):
        pages += 1
        for kind, context in jargon_in(html):
            found.setdefault(name, set()).add((kind, f"{url}: …{context}…"))
    assert pages > 20
    assert not found, "\n".join(
        f"{name}: {kind}: {context}"
        for name, items in sorted(found.items())
        for kind, context in sorted(items)[:8]
    )


def test_the_login_page_is_plain_too(db: None) -> None:
    html = Client().get(reverse("dashboard:login")).content.decode()
    assert not jargon_in(html)
    assert "Log in" in visible_text(html) or "Sign in" in visible_text(html)
