"""Revoking a membership takes effect at once (wire.md §4, issue 13 §2), over HTTP.

``DELETE /groups/{group}/memberships/{principal}`` appends, in the one transaction of the one
command, ``membership.revoked`` and for each item the member owns: ``lease.revoked`` for an
active lease and the reassignment of an expired lease (R11.5-01). No sweep runs in these
tests: whatever the log holds right after the response was appended by the revocation, and
the member's capability token is refused by ``capabilities:check`` at once (R11.3-06..08).
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from missionweave.protocol import states as S
from missionweave.protocol.work.leases import MEMBERSHIP_REVOKED

from .http import json_of, post
from .test_admin import revoke
from .work_http import Wire, WorkWorld, authorized, contract, far, offer_body, owned

pytestmark = pytest.mark.django_db

CHECK = "/capabilities:check"
WIDE = {"tools": ["search"], "data": ["incidents"], "operations": ["read"]}


def check(api: APIClient, bearer: str, token: str) -> dict[str, Any]:
    return json_of(post(api, CHECK, {"token": token}, bearer), 200)


def queued_with_a_second_offer(wire: Wire, ww: WorkWorld, work_item: str) -> None:
    """Offered to w2 then w3 (sequential), accepted by w2: ``queued``, w3 next in line."""
    authorized(wire, ww, work_item)
    offers = [(f"{work_item}-o2", ww.w2, far()), (f"{work_item}-o3", ww.w3, far())]
    wire.ok(ww.w1, "work.offer", offer_body(work_item, offers, mode="sequential"))
    revision = wire.item(work_item)["revision"]
    body = {"work_item": work_item, "offer": f"{work_item}-o2", "contract_revision": revision}
    wire.ok(ww.w2, "work.accept_offer", body)


def test_r11_5_01_a_revocation_fences_the_members_work_in_one_transaction(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-01, R11.3-07, R11.3-09, wire§4, wire§6: the revocation's events have consecutive
    sequences and one command id; the active item's lease is revoked and the item reassigned
    (back to ``open``: nobody else was offered it), the queued one re-offered to w3; the
    capability token of the revoked lease is refused by ``capabilities:check`` immediately."""
    epoch = owned(wire, ww, "wi-a", contract=contract(allowed=WIDE))["ownership_epoch"]
    started = wire.ok(ww.w2, "work.start", {"work_item": "wi-a", "ownership_epoch": epoch})
    lease_id = started["result"]["lease"]["lease_id"]
    [token] = started["result"]["capability_tokens"]
    assert check(api, ww.olga.token, token["token"])["valid"] is True
    queued_with_a_second_offer(wire, ww, "wi-b")
    head = wire.head()

    answer = json_of(revoke(api, ww.alice.token, ww.group, ww.w2.principal), 200)

    events = wire.events(after=head)
    assert [(e["type"], e["payload"].get("work_item")) for e in events] == [
        ("membership.revoked", None),
        ("lease.revoked", "wi-a"),
        ("work.reassigned", "wi-a"),
        ("work.reassigned", "wi-b"),
        ("work.offered", "wi-b"),
    ]
    assert [e["sequence"] for e in events] == list(range(head + 1, head + 6))
    assert len({e["command_id"] for e in events}) == 1
    assert {e["actor"] for e in events} == {ww.alice.principal}
    assert answer["epoch"] == events[0]["payload"]["epoch"]
    lease_revoked = events[1]["payload"]
    assert (lease_revoked["lease_id"], lease_revoked["reason"]) == (lease_id, MEMBERSHIP_REVOKED)
    assert {e["payload"]["reason"] for e in events[2:4]} == {MEMBERSHIP_REVOKED}
    assert events[4]["payload"]["offers"][0]["worker"] == ww.w3.principal

    active = wire.item("wi-a")
    assert (active["state"], active["owner"]) == (S.OPEN, None)
    assert (active["lease"]["status"], active["lease"]["closed_by"]) == (
        "revoked",
        "lease.revoked",
    )
    waiting = wire.item("wi-b")
    assert (waiting["state"], waiting["owner"]) == (S.OFFERED, None)
    assert ww.w2.principal in waiting["former_owners"]

    refused = check(api, ww.olga.token, token["token"])
    assert (refused["valid"], refused["code"]) == (False, "STALE_LEASE")


def test_a_revocation_leaves_other_members_work_alone(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§4: only the revoked principal's items are fenced."""
    owned(wire, ww, "wi-c", worker=ww.w3)
    head = wire.head()
    json_of(revoke(api, ww.alice.token, ww.group, ww.w2.principal), 200)
    assert [e["type"] for e in wire.events(after=head)] == ["membership.revoked"]
    item = wire.item("wi-c")
    assert (item["state"], item["owner"]) == (S.QUEUED, ww.w3.principal)
