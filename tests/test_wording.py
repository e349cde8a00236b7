"""``missionweave.wording``: counts and lists as people write them, not "1 artifact(s)" and
not a Python list's repr."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from missionweave.wording import counted, listed


def test_a_count_agrees_with_its_noun() -> None:
    assert counted(1, "artifact") == "1 artifact"
    assert counted(0, "artifact") == "0 artifacts"
    assert counted(2, "output schema") == "2 output schemas"
    assert counted(12000, "thing") == "12,000 things"
    assert counted(3, "child", "children") == "3 children"


def test_a_list_reads_as_a_sentence() -> None:
    assert listed([]) == "none"
    assert listed([], empty="nothing") == "nothing"
    assert listed(["summary"]) == "summary"
    assert listed(["a", "b"]) == "a and b"
    assert listed(["a", "b", "c"]) == "a, b and c"


@given(st.lists(st.text(alphabet="abcdef", min_size=1, max_size=5), min_size=1, max_size=8))
def test_a_list_names_every_item_once_in_order_without_brackets(items: list[str]) -> None:
    sentence = listed(items)
    assert "[" not in sentence
    assert "'" not in sentence
    position = 0
    for item in items:
        found = sentence.find(item, position)
        assert found >= position
        position = found + len(item)
