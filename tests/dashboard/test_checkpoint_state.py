"""The WorkItem page says, in plain words, whether the last checkpoint's state is kept by the
server — so whoever takes the work over goes on from it (issue 35 §2; R11.5-01) — or only on
the worker's own machine."""

from __future__ import annotations

import pytest

from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import now_text, store_bytes


def checkpoint_words(dash: Dashboard, item: str) -> str:
    response = logged_in(dash.maria).get(f"/groups/{dash.world.group}/work-items/{item}/")
    assert response.status_code == 200
    card = element(response.content.decode(), "id", "lease")
    return text(element(card, "data-field", "checkpoint-state"))


@pytest.mark.django_db
@pytest.mark.parametrize("stored", [True, False])
def test_the_last_checkpoint_says_where_its_state_is_kept(dash: Dashboard, stored: bool) -> None:
    """R11.5-01, issue 35 §2: a checkpoint naming its stored state reads "kept by the
    server"; one without it, "kept on the worker's own machine only"."""
    world = dash.world
    contract = example_contract(deadline=now_text(30 * 86400))
    item = wf.queued(world, wf.mission(world), contract=contract)
    lease = wf.start(world, item)
    checkpoint = {"ref": "step-3", "state_digest": sha256_digest(b"step-3"), "artifacts": []}
    if stored:
        checkpoint["state_artifact"] = store_bytes(world.w2.principal, b'{"next": 3}')
    body = {"work_item": item, "lease_id": lease, "checkpoint": checkpoint}
    wf.submit(world.w2, world.group, "work.checkpoint", body)

    words = checkpoint_words(dash, item)

    if stored:
        assert words == "kept by the server: whoever takes the work over goes on from here"
    else:
        assert words == "kept on the worker's own machine only"
