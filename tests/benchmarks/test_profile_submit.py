"""``--only profile``'s loop (benchmarks/profile_submit.py): what it times is the write path."""

from __future__ import annotations

import pytest

from apps.ledger.models import Event, GroupLog
from benchmarks.envelopes import EnvelopePool
from benchmarks.profile_submit import send_all
from benchmarks.world import build_world


@pytest.mark.django_db(transaction=True)
def test_the_profiled_loop_sends_every_command_through_the_write_path() -> None:
    """wire§6: each of the loop's commands is accepted and appends one event, gapless; the
    loop reports a wall time and a CPU time for them."""
    world = build_world(groups=1, agents=1, prefix="profile")
    (group,) = world.groups
    before = GroupLog.objects.get(group_id=group).head_sequence
    pool = EnvelopePool(world.agents[0], world.groups, seed=1)
    pool.presign(5)

    wall, cpu = send_all(world.agents[0], pool.take(5))

    assert wall > 0
    assert cpu > 0
    head = GroupLog.objects.get(group_id=group).head_sequence
    assert head == before + 5
    created = Event.objects.filter(group_id=group, sequence__gt=before)
    assert list(created.values_list("type", flat=True)) == ["mission.created"] * 5
    assert Event.objects.filter(group_id=group).count() == head
