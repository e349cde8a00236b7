"""A digest is not a key (wire.md §9; R13.3-05, R13.3-07): the rule that decides which named
digests a command may carry, and the refusal of any other, without a database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from missionweave.protocol.artifacts.naming import nameable_digests, require_nameable
from missionweave.protocol.artifacts.records import StoredArtifact, stored_artifact_key
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.errors import ErrorCode, ProtocolError

CITED, UPLOADED, FORWARDED, ELSEWHERE = (
    sha256_digest(text) for text in (b"cited", b"uploaded", b"forwarded", b"elsewhere")
)


def test_each_of_the_three_routes_alone_makes_a_digest_nameable() -> None:
    """wire§9: (a) cited by this group's log, (b) uploaded by the sender, (c) forwarded here
    by context.forward (R13.3-07); a digest on no route — say one only another group cites —
    is not nameable."""
    named = [CITED, UPLOADED, FORWARDED, ELSEWHERE]
    allowed = nameable_digests(named, cited={CITED}, uploaded={UPLOADED}, forwarded={FORWARDED})
    assert allowed == {CITED, UPLOADED, FORWARDED}


@given(
    named=st.sets(st.sampled_from([CITED, UPLOADED, FORWARDED, ELSEWHERE])),
    cited=st.sets(st.sampled_from([CITED, UPLOADED])),
    uploaded=st.sets(st.sampled_from([UPLOADED, FORWARDED])),
    forwarded=st.sets(st.sampled_from([FORWARDED, CITED])),
)
def test_a_digest_is_nameable_exactly_when_some_route_holds(
    named: set[str], cited: set[str], uploaded: set[str], forwarded: set[str]
) -> None:
    """wire§9: the rule adds nothing beyond its three routes and drops none of them."""
    allowed = nameable_digests(named, cited=cited, uploaded=uploaded, forwarded=forwarded)
    assert allowed == named & (cited | uploaded | forwarded)


def test_a_digest_the_store_did_not_hand_over_is_not_found_naming_it() -> None:
    """R13.1-01, wire§9: what the rule refuses loads as nothing, and the refusal is the 404 a
    digest never stored gets, with its JSON path and digest."""
    view = {
        stored_artifact_key(CITED): StoredArtifact(CITED, 3),
        stored_artifact_key(ELSEWHERE): None,
    }
    assert require_nameable(view, [("$.artifacts[0]", CITED)]) == {CITED: StoredArtifact(CITED, 3)}
    with pytest.raises(ProtocolError) as refused:
        require_nameable(view, [("$.artifacts[0]", CITED), ("$.artifacts[1]", ELSEWHERE)])
    assert (refused.value.code, refused.value.status) == (ErrorCode.NOT_FOUND, 404)
    assert refused.value.details == {"path": "$.artifacts[1]", "digest": ELSEWHERE}
