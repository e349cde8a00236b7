"""Where commands name artifacts and logs cite them: one table for both (wire.md §4, §9)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from missionweave.protocol.artifacts.citations import BY_COMMAND, BY_EVENT, named_by
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.decider import events_changing

A, B, C = (sha256_digest(text.encode()) for text in "abc")


def test_a_submission_names_its_artifacts_outputs_and_evidence_each_once() -> None:
    """wire§9: every digest a submission names, at its first JSON path."""
    body = {
        "artifacts": [A, B],
        "outputs": {"summary": A},
        "evidence": [{"artifacts": [C, A]}],
    }
    assert named_by("work.submit", body) == [
        ("$.artifacts[0]", A),
        ("$.artifacts[1]", B),
        ("$.evidence[0].artifacts[0]", C),
    ]


def test_every_citing_event_builds_the_artifact_projection() -> None:
    """wire§4: each event that cites a digest has an ``artifact`` evolver, so a member of a
    group whose log cites it may read it (R13.1-04)."""
    assert set(BY_EVENT) <= events_changing("artifact")


def test_every_naming_command_exists_and_its_events_cite_the_same_fields() -> None:
    """wire§9: the commands that name artifacts are known commands."""
    assert set(BY_COMMAND) <= set(COMMANDS)


@given(
    st.recursive(
        st.none() | st.text() | st.integers(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_any_body_shape_names_only_digests_and_never_raises(body: object) -> None:
    """wire§1: the table reads any shape (it runs before and after validation)."""
    for command in BY_COMMAND:
        for path, digest in named_by(command, body if isinstance(body, dict) else {"x": body}):
            assert path.startswith("$")
            assert digest.startswith("sha256:")
