"""Which digests a command's sender may name (wire.md §9, "A digest is not a key"), as the
write path asks ``apps.ledger.artifacts.directory().nameable``.

References are ``GroupArtifact`` rows inserted by the setup (``helpers.reference``): no
command that references artifacts is wired to the write path yet.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.artifacts.directory import nameable, read_verified
from apps.artifacts.models import CorruptionReport
from apps.artifacts.services import artifact_store
from apps.artifacts.storage import Storage
from apps.ledger import artifacts
from apps.registry import services
from missionweave.protocol.artifacts.records import StoredArtifact
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.identifiers import AUTHORITY
from tests import factories
from tests.factories import World

from .helpers import reference


def _stored(storage: Storage, principal: str, data: bytes) -> str:
    digest = sha256_digest(data)
    artifact_store(principal=principal, digest=digest, chunks=[data], storage=storage)
    return digest


def test_the_app_installs_its_directory_in_the_ledger() -> None:
    assert artifacts.directory().nameable is nameable
    assert artifacts.directory().read_verified is read_verified


def test_the_write_path_reads_only_verified_bytes_within_its_limit(
    world: World, local_storage: Storage
) -> None:
    """R13.1-05: the bytes come back only if they still hash to the digest; an object that
    no longer does is reported and read as nothing, as are missing and oversized ones."""
    digest = _stored(local_storage, world.w1.principal, b'{"answer": 42}')
    assert read_verified(digest, 1000) == b'{"answer": 42}'
    assert read_verified(digest, 5) is None
    assert read_verified(sha256_digest(b"never stored"), 1000) is None

    path = local_storage.path(digest)  # type: ignore[attr-defined]
    path.chmod(0o600)
    path.write_bytes(b'{"answer": 43}')
    assert read_verified(digest, 1000) is None
    assert CorruptionReport.objects.get(digest=digest).request == "read by the write path"


def test_a_sender_names_what_it_may_read_or_a_current_member_uploaded(
    world: World, local_storage: Storage
) -> None:
    """wire§9: the four ways a stored digest is nameable in a group — the authority names
    anything stored; a sender names what it uploaded, what a group it is an active member of
    references, and what a current member of this group uploaded. Nothing else, and never
    a digest that is not stored, so a refusal reveals nothing (R13.1-01)."""
    org = world.org
    other = factories.group("g-other", org)
    stranger = factories.agent("w9", org)
    factories.grant(world.alice, other, stranger, "worker")

    own = _stored(local_storage, world.w1.principal, b"w1 uploaded it")
    by_member = _stored(local_storage, world.w2.principal, b"w2, a member, uploaded it")
    by_stranger = _stored(local_storage, stranger.principal, b"uploaded outside the group")
    referenced_elsewhere = _stored(local_storage, stranger.principal, b"referenced in g-other")
    reference(other, referenced_elsewhere)
    never_stored = sha256_digest(b"never stored")
    asked = [own, by_member, by_stranger, referenced_elsewhere, never_stored]

    def named(actor: str, group: str = world.group) -> set[str]:
        return set(nameable(group, actor, asked))

    assert named(AUTHORITY) == {own, by_member, by_stranger, referenced_elsewhere}
    assert named(world.w1.principal) == {own, by_member}
    # in g-research the stranger names what members uploaded, what it uploaded itself and
    # what g-other (where it is a member) references
    assert named(stranger.principal) == {own, by_member, by_stranger, referenced_elsewhere}
    # in g-other, where neither w1 nor w2 is a member, their uploads are not nameable
    assert named(stranger.principal, other) == {by_stranger, referenced_elsewhere}
    factories.grant(world.alice, other, world.w1, "worker")
    assert named(world.w1.principal) == {own, by_member, referenced_elsewhere}
    # an upload counts while its uploader is a member: revoked, it no longer does
    services.membership_revoke(
        group_id=world.group, admin=world.alice.caller, principal=world.w2.principal
    )
    assert named(world.olga.principal) == {own}
    assert nameable(world.group, world.w1.principal, [own])[own] == StoredArtifact(
        digest=own, size=len(b"w1 uploaded it")
    )


def test_nameable_is_one_query_for_any_number_of_digests(
    world: World, local_storage: Storage
) -> None:
    """wire§9: the write path asks once per command, in one query, locking the blob rows
    against garbage collection inside its transaction (R13.1-02)."""
    digests = [_stored(local_storage, world.w1.principal, b"%d" % n) for n in range(20)]
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        found = nameable(world.group, world.w2.principal, digests)
    assert set(found) == set(digests)
    assert len(queries) == 1
    assert "FOR NO KEY UPDATE" in queries[0]["sql"]
    assert nameable(world.group, world.w2.principal, []) == {}
