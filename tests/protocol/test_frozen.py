"""``frozen.replace``: the same copy as ``dataclasses.replace``, without its cost."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from missionweave.protocol.frozen import _copier, replace
from missionweave.protocol.memberships import Membership
from missionweave.protocol.missions.model import Mission
from missionweave.protocol.work.items import Lease, Offer, WorkItem


@dataclasses.dataclass(frozen=True, slots=True)
class Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True)
class Derived:
    value: int
    double: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "double", 2 * self.value)


def _offer(**changes: Any) -> Offer:
    base = {"offer": "o-1", "worker": "agent:w", "expires_at": "2026-12-02T10:00:00Z"}
    base.update(mode="single", rank=0, revision=1)
    return Offer(**{**base, **changes})


@given(rank=st.integers(0, 10), status=st.text(max_size=5), worker=st.text(max_size=5))
def test_the_copy_equals_the_dataclasses_copy(rank: int, status: str, worker: str) -> None:
    offer = _offer()
    changes = {"rank": rank, "status": status, "worker": worker}
    ours = replace(offer, **changes)
    assert ours == dataclasses.replace(offer, **changes)
    assert type(ours) is Offer
    assert offer == _offer()  # the original is untouched


def test_a_name_that_is_not_a_field_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        replace(_offer(), nonsense=1)


def test_a_class_with_post_init_or_derived_fields_goes_through_its_init() -> None:
    with pytest.raises(ValueError, match="negative"):
        replace(Checked(1), value=-1)
    assert replace(Derived(2), value=5).double == 10


def test_the_core_aggregates_are_copied_directly() -> None:
    """The aggregates evolve folds have no ``__post_init__`` and no ``init=False`` field, so
    their copies skip ``__init__`` (the speed ``replace`` is for); if one grows either, this
    fails and ``replace`` still gives the right copy, through ``__init__``."""
    for cls in (WorkItem, Offer, Lease, Membership, Mission):
        assert _copier(cls) is not None, cls
