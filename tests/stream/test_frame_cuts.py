"""Where ``EVENTS`` frames are cut (``consumers.batch_ends``, wire.md §7 ``"batch": true``):
as many consecutive events as fit in ``BATCH_EVENTS`` and ``BATCH_BYTES``, one at least, and
never an event left out or sent twice. Pure: no socket, no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apps.stream.consumers import BATCH_BYTES, BATCH_EVENTS, batch_ends

sizes = st.lists(st.integers(min_value=1, max_value=BATCH_BYTES + 500), max_size=3000)


@given(sizes)
def test_frames_cover_every_event_once_in_order(event_sizes: list[int]) -> None:
    """R16-09: the frames' ends rise strictly and the last is the page's end."""
    ends = batch_ends(event_sizes)
    assert ends == sorted(set(ends))
    assert (ends[-1] if ends else 0) == len(event_sizes)


@given(sizes)
def test_each_frame_is_as_full_as_the_limits_allow(event_sizes: list[int]) -> None:
    """wire§7: at most ``BATCH_EVENTS`` events and ``BATCH_BYTES`` of documents, unless one
    event alone is larger; and the next event would not have fitted."""
    start = 0
    for end in batch_ends(event_sizes):
        frame = event_sizes[start:end]
        assert 1 <= len(frame) <= BATCH_EVENTS
        assert len(frame) == 1 or sum(frame) <= BATCH_BYTES
        if end < len(event_sizes):
            assert len(frame) == BATCH_EVENTS or sum(frame) + event_sizes[end] > BATCH_BYTES
        start = end


def test_a_replay_page_of_small_events_is_cut_by_size() -> None:
    """A page of 1,000 events of 650 characters: frames of 403 (403 × 650 ≤ 256 KiB)."""
    assert batch_ends([650] * 1000) == [403, 806, 1000]
