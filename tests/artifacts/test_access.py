"""Who may read an artifact (wire.md §4): its uploader, or an active member of a group whose
log references it; everyone else gets exactly the answer a digest never stored gets.

The references are ``GroupArtifact`` projection rows inserted by the tests' setup
(``helpers.reference``): no command that references artifacts is wired to the write path
yet. Memberships go through the real services, and the revocation through the real admin
endpoint ``DELETE /api/v1/groups/{g}/memberships/{principal}`` of the same server.
"""

from __future__ import annotations

import os

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.artifacts.access import readable
from apps.artifacts.services import artifact_store
from apps.artifacts.storage import Storage
from missionweave.protocol.canonical import sha256_digest
from tests import factories
from tests.factories import World

from .helpers import bearer, error_of, get, put, reference
from .servers import ArtifactServer


@pytest.mark.e2e
def test_only_the_uploader_and_members_of_a_referencing_group_read_it(
    fs_server: ArtifactServer, live_world: World, http: httpx.Client
) -> None:
    """wire§4, R13.1-01: the uploader (w2) and the active members of the group whose log
    references the digest (w1, olga) read it; a member of another group, an agent in no
    group, and a member whose membership was revoked get the same 404 body, byte for byte,
    as a digest never stored."""
    world = live_world
    other_group = factories.group("g-other", world.org)
    outsider = factories.agent("w3", world.org)  # member of another group only
    factories.grant(world.alice, other_group, outsider, "worker")
    loner = factories.agent("w4", world.org)  # member of no group
    outsider.open_session()
    loner.open_session()
    data = os.urandom(5000)
    digest = sha256_digest(data)
    readers = {"w1": world.w1.token, "olga": world.olga.token, "w2": world.w2.token}
    refused = {"w3": outsider.token, "w4": loner.token}

    never_stored = {
        name: get(http, fs_server, token, digest) for name, token in {**readers, **refused}.items()
    }
    for response in never_stored.values():
        error_of(response, 404, "NOT_FOUND")

    assert put(http, fs_server, world.w2.token, data).status_code == 201
    # w2 is the uploader; nobody else may read it before a log references it.
    assert get(http, fs_server, world.w2.token, digest).content == data
    for name in ("w1", "olga", "w3", "w4"):
        token = {**readers, **refused}[name]
        assert get(http, fs_server, token, digest).content == never_stored[name].content

    reference(world.group, digest)
    reference(other_group, sha256_digest(b"another artifact"))
    for name, token in readers.items():
        response = get(http, fs_server, token, digest)
        assert (response.status_code, response.content) == (200, data), name
    for name, token in refused.items():
        response = get(http, fs_server, token, digest)
        assert response.status_code == 404, name
        assert response.content == never_stored[name].content, name
        assert response.headers["content-length"] == never_stored[name].headers["content-length"]

    revoked = http.delete(
        f"{fs_server.url}/api/v1/groups/{world.group}/memberships/{world.olga.principal}",
        headers=bearer(world.alice.token),
    )
    assert revoked.status_code == 200, revoked.text
    response = get(http, fs_server, world.olga.token, digest)
    assert response.status_code == 404
    assert response.content == never_stored["olga"].content


def test_readable_is_one_query_whoever_asks(world: World, local_storage: Storage) -> None:
    """wire§4: the access check is one query, for the uploader, a member of a referencing
    group, a stranger and an unknown digest alike (the same work whether it exists)."""
    digest = sha256_digest(b"one query")
    artifact_store(
        principal=world.w2.principal, digest=digest, chunks=[b"one query"], storage=local_storage
    )
    reference(world.group, digest)
    stranger = factories.human("uma")
    cases = [
        (world.w2.principal, digest, True),
        (world.w1.principal, digest, True),
        (stranger.principal, digest, False),
        (world.w1.principal, sha256_digest(b"unknown"), False),
    ]
    for principal, asked, expected in cases:
        with CaptureQueriesContext(connection) as queries:
            assert readable(principal, asked) is expected
        assert len(queries) == 1


def test_a_member_reads_only_what_its_own_groups_cite_not_what_a_fellow_member_uploaded(
    world: World, local_storage: Storage
) -> None:
    """wire§4, wire§9, R13.3-05: w2 uploads bytes that only g-research cites. In g-ops, where
    w2 is a member too, otto (g-ops only) may not read them: sharing a group with the uploader
    is no access; a citation in a group the reader belongs to is (what a forward gives
    g-ops, R13.3-07). The uploader reads them throughout."""
    ops = factories.group("g-ops", world.org)
    otto = factories.agent("otto", world.org)
    factories.grant(world.alice, ops, otto, "worker")
    factories.grant(world.alice, ops, world.w2, "worker")
    data = b"cited by g-research only"
    digest = sha256_digest(data)
    artifact_store(
        principal=world.w2.principal, digest=digest, chunks=[data], storage=local_storage
    )
    reference(world.group, digest)

    assert readable(world.w2.principal, digest)
    assert readable(world.w1.principal, digest)  # a member of the citing group
    assert not readable(otto.principal, digest)

    reference(ops, digest)
    assert readable(otto.principal, digest)
