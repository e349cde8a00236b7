"""``events.sealed``: an event's hash and stored bytes, each member encoded once, are exactly
``event_hash`` and ``canonical_bytes`` of the event with its hash (wire.md §6, RFC 8785)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.canonical import canonical_bytes
from missionweave.protocol.events import event_hash, sealed

SAFE = 2**53 - 1
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-SAFE, SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
# names beyond the BMP sort differently by UTF-16 code units than by code points: the
# reason RFC 8785 names UTF-16, and the reason ``sealed`` sorts the way it does
# ... and names next to "hash" on either side test where ``sealed`` splits the members
names = (
    st.text(min_size=1, max_size=6)
    | st.sampled_from(["h", "has", "hasg", "hasi", "hash\x00", "hash0", "hasha", "", "\U0001d11e"])
).filter(lambda name: name != "hash")


@settings(deadline=None, max_examples=1000)
@given(st.dictionaries(names, json_values, min_size=1, max_size=8))
def test_sealed_is_the_hash_and_the_canonical_bytes_of_the_hashed_event(
    event: dict[str, Any],
) -> None:
    hash_, stored = sealed(event)
    assert hash_ == event_hash(event)
    assert stored == canonical_bytes({**event, "hash": hash_})


def test_names_beyond_the_bmp_sort_by_utf16_code_units() -> None:
    """U+FB01 sorts before U+1D11E by code point but after it in UTF-16 (whose surrogate
    pair starts with 0xD834): RFC 8785 §3.2.3 orders by UTF-16."""
    event = {"\ufb01": 1, "\U0001d11e": 2}
    _hash, stored = sealed(event)
    assert stored.index("\U0001d11e".encode()) < stored.index("\ufb01".encode())
    assert stored == canonical_bytes({**event, "hash": _hash})
