"""A socket's own poll wakes only the groups it is behind in (wire.md §7).

Every ``MWP_STREAM_POLL_S`` a socket re-runs the pumps that may have something to do — a
replay whose read failed is retried though no new event wakes it — and leaves alone the
groups where it already sent everything its tail holds: with 1,000 idle sockets those runs
were the process's idle cost (docs/benchmarks.md §7).
"""

from __future__ import annotations

import json

from apps.stream.consumers import StreamConsumer
from apps.stream.tails import GroupTail

GROUP = "grp_idle_poll"


def _socket(tail: GroupTail, *, cursor: int, checked_at: int) -> StreamConsumer:
    consumer = StreamConsumer()
    consumer.tails = {GROUP: tail}
    consumer.cursors = {GROUP: cursor}
    consumer.member_at = {GROUP: checked_at}
    return consumer


def _event(sequence: int, prev_hash: str) -> str:
    return json.dumps(
        {
            "sequence": sequence,
            "prev_hash": prev_hash,
            "hash": f"h{sequence}",
            "type": "mission.created",
            "payload": {},
        }
    )


def test_a_socket_at_its_tails_head_is_not_woken() -> None:
    tail = GroupTail(GROUP, head=5, head_hash="h5")
    assert not _socket(tail, cursor=5, checked_at=5)._behind(GROUP)


def test_a_socket_below_its_tails_head_is_woken() -> None:
    tail = GroupTail(GROUP, head=5, head_hash="h5")
    tail._remember(_event(6, "h5"))
    assert _socket(tail, cursor=5, checked_at=5)._behind(GROUP)


def test_a_socket_replaying_below_the_cache_is_woken_to_read_the_log() -> None:
    tail = GroupTail(GROUP, head=5, head_hash="h5")
    assert _socket(tail, cursor=2, checked_at=5)._behind(GROUP)


def test_a_socket_whose_check_saw_more_than_the_tail_has_read_is_woken() -> None:
    tail = GroupTail(GROUP, head=5, head_hash="h5")
    assert _socket(tail, cursor=5, checked_at=7)._behind(GROUP)
