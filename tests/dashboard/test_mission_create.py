"""The id a mission gets from its goal when the person leaves "Short id" empty
(``mission_create.mission_id_for``): the goal's first words, short enough to read in a link,
a breadcrumb and each WorkItem's id, and always an id the protocol takes."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from apps.dashboard.mission_create import ID_STEM_CHARS, mission_id_for
from missionweave.protocol.identifiers import ID_PATTERN

SUFFIX = len("-3f9a1c")


def test_the_goals_first_words_cut_at_a_word() -> None:
    made = mission_id_for("Write the quarterly security summary for the board")
    assert re.fullmatch(r"m-write-the-quarterly-security-[0-9a-f]{6}", made), made


def test_a_goal_of_one_long_word_or_no_word_still_makes_an_id() -> None:
    long = mission_id_for("Supercalifragilisticexpialidociousness")
    assert long.startswith("m-supercalifragilisticexpialid-"), long
    assert re.fullmatch(r"m-mission-[0-9a-f]{6}", mission_id_for("???"))


@given(st.text(max_size=300))
def test_any_goal_makes_a_short_id_the_protocol_takes(goal: str) -> None:
    made = mission_id_for(goal)
    assert re.fullmatch(ID_PATTERN, made), made
    assert len(made) <= len("m-") + ID_STEM_CHARS + SUFFIX
