"""``GET /groups/{g}/contexts``: the packages of a group, and those in one mission's or
WorkItem's context (wire.md §4 addition, issue 35 §7; R13.3-02, R13.3-05)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from .test_contexts import (
    SOURCE,
    TARGET,
    ContextWorld,
    forward_body,
    package,
    publish,
    scoped,
)
from .work_http import authorized, contract

pytestmark = pytest.mark.django_db


@pytest.fixture
def cw(api: APIClient, db: None) -> ContextWorld:
    return ContextWorld(api)


def _listing(cw: ContextWorld, group: str = SOURCE, query: str = "") -> dict[str, Any]:
    return cw.read(cw.ww.w2, f"/groups/{group}/contexts{query}")


def test_the_listing_names_each_package_with_its_latest_version_signed(cw: ContextWorld) -> None:
    """R13.3-02, R13.3-04: each package once, its latest version whole (with the authority's
    signature and ``previous``), every version by number and digest."""
    head = scoped(cw)
    publish(cw, last=head)
    publish(cw, 2, last=head, decisions=["weekly digest"])
    listing = _listing(cw)
    assert listing["next_after"] is None
    (entry,) = listing["packages"]
    assert (entry["id"], entry["source_group"], entry["received_from"]) == ("ctx-1", SOURCE, None)
    assert entry["latest"]["version"] == 2
    assert entry["latest"]["package"]["decisions"] == ["weekly digest"]
    assert entry["latest"]["package"]["signature"]
    assert [v["version"] for v in entry["versions"]] == [1, 2]
    assert entry["latest"]["package"]["previous"] == entry["versions"][0]["digest"]


def test_the_listing_filters_by_mission_and_work_item(cw: ContextWorld) -> None:
    """R13.3-02: a mission's context holds the packages summarising it, a WorkItem's those
    whose scope names it."""
    head = scoped(cw)
    authorized(cw.source, cw.ww, "wi-9", mission="m-2", contract=contract(inputs=[]))
    publish(cw, last=head, work_items=["wi-1"])
    other = package(1, head, id="ctx-2", mission="m-2", work_items=["wi-9"])
    cw.source.ok(cw.ww.w1, "context.publish", {"package": other})

    def ids(query: str) -> list[str]:
        return [entry["id"] for entry in _listing(cw, query=query)["packages"]]

    assert ids("") == ["ctx-1", "ctx-2"]
    assert ids("?mission=m-1") == ["ctx-1"]
    assert ids("?mission=m-1&work_item=wi-1") == ["ctx-1"]
    assert ids("?mission=m-1&work_item=wi-2") == []
    assert ids("?work_item=wi-9") == ["ctx-2"]
    cw.refused_read(cw.ww.w2, f"/groups/{SOURCE}/contexts?mission=a%20b", 400, "MALFORMED")


def test_the_listing_pages_by_key(cw: ContextWorld) -> None:
    """wire§4: ``limit`` packages a page, ``next_after`` the key to go on from."""
    head = scoped(cw)
    for name in ("ctx-a", "ctx-b", "ctx-c"):
        cw.source.ok(cw.ww.w1, "context.publish", {"package": package(1, head, id=name)})
    first = _listing(cw, query="?limit=2")
    assert [e["id"] for e in first["packages"]] == ["ctx-a", "ctx-b"]
    rest = _listing(cw, query=f"?limit=2&after={first['next_after']}")
    assert ([e["id"] for e in rest["packages"]], rest["next_after"]) == (["ctx-c"], None)


def test_a_received_package_is_listed_but_enters_no_mission_context_here(
    cw: ContextWorld, commit: Any
) -> None:
    """R13.3-05, R13.3-07: the target lists the forwarded package under its source, but a
    mission of the target with the same id does not take it into its context."""
    head = scoped(cw)
    publish(cw, last=head)
    with commit():
        cw.source.ok(cw.ww.w1, "context.forward", forward_body())
    authorized(cw.target, cw.ww, "wi-t", mission="m-1", contract=contract(inputs=[]))
    (entry,) = _listing(cw, TARGET)["packages"]
    assert (entry["id"], entry["received_from"]) == ("ctx-1", SOURCE)
    assert _listing(cw, TARGET, "?mission=m-1")["packages"] == []


def test_listing_needs_membership(cw: ContextWorld) -> None:
    """wire§4: a non-member of the group is NOT_A_MEMBER."""
    cw.refused_read(cw.otto, f"/groups/{SOURCE}/contexts", 403, "NOT_A_MEMBER")
