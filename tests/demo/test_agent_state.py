"""The demo agents' saved state is forgotten when the demo's database holds another history
(``apps.demo.agent_state``): a worker that kept a replaced database's state distrusts every
group (its chain forked) and the demo sat still with no word why."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.demo.agent_state import MARKER, forget_if_from_another_history, history_of
from apps.ledger.models import Event
from tests.factories import build_world


def saved_state(folder: Path) -> Path:
    state = folder / "agents" / "demo-worker-1" / "state"
    state.mkdir(parents=True)
    (state / "g-demo.json").write_text("{}")
    return state


def test_state_saved_against_the_same_history_is_kept(tmp_path: Path) -> None:
    state = saved_state(tmp_path)
    assert not forget_if_from_another_history(tmp_path, "g-demo=sha256:a")
    assert not forget_if_from_another_history(tmp_path, "g-demo=sha256:a")
    assert (state / "g-demo.json").exists()
    assert (tmp_path / MARKER).read_text() == "g-demo=sha256:a\n"


def test_state_saved_against_another_history_is_forgotten(tmp_path: Path) -> None:
    state = saved_state(tmp_path)
    forget_if_from_another_history(tmp_path, "g-demo=sha256:a")
    assert forget_if_from_another_history(tmp_path, "g-demo=sha256:b")
    assert not state.exists()
    assert not (tmp_path / "agents").exists()
    assert (tmp_path / MARKER).read_text() == "g-demo=sha256:b\n"


def test_state_saved_before_the_marker_existed_is_kept(tmp_path: Path) -> None:
    """Nothing says which history it belongs to: forgetting it could lose results a worker
    has not settled, so it is kept, and the marker written for next time."""
    state = saved_state(tmp_path)
    assert not forget_if_from_another_history(tmp_path, "g-demo=sha256:a")
    assert state.exists()


@pytest.mark.django_db
def test_the_history_is_each_groups_first_event() -> None:
    world = build_world()
    first = Event.objects.get(group_id=world.group, sequence=1).hash
    assert history_of([world.group, "g-absent"]) == f"g-absent= {world.group}={first}"
