"""Which digests a command's sender may name in a group (wire.md §9, "A digest is not a
key"; R13.3-05, R13.3-07), as the write path asks
``apps.ledger.artifacts.directory().nameable``.

Citations are ``GroupArtifact`` rows inserted by the setup (``helpers.reference``), the rows
the write path's projection writes; ``tests/api/test_digests_across_groups.py`` drives the
same rule through commands over HTTP.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.artifacts.access import readable
from apps.artifacts.directory import Found, nameable, read_verified, routes
from apps.artifacts.models import Blob, CorruptionReport, GroupArtifact, Upload
from apps.artifacts.services import artifact_store
from apps.artifacts.storage import Storage
from apps.ledger import artifacts
from missionweave.protocol.artifacts.records import ArtifactRecord, StoredArtifact
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


def _forwarded_here(group_id: str, digest: str) -> None:
    """The projection row ``context.received`` gives a forwarded package's artifact in the
    target's log (R13.3-07): a citation by that event."""
    citation = {
        "sequence": 1,
        "event": "context.received",
        "work_item": None,
        "field": "$.package.artifacts[0]",
        "actor": AUTHORITY,
    }
    record = ArtifactRecord(digest=digest, citations=(citation,), cited=1)
    GroupArtifact.objects.create(group_id=group_id, digest=digest, data=record.as_dict())


def test_a_sender_names_what_this_log_cites_what_it_uploaded_or_what_was_forwarded_here(
    world: World, local_storage: Storage
) -> None:
    """wire§9, R13.3-05, R13.3-07: the three routes by which a stored digest is nameable in a
    group — (a) this group's log cites it, (b) the sender uploaded it, (c) a forward brought
    it here. Readable through another group, or uploaded by another member of this one, is
    no route, for the authority neither; and a digest never stored is never nameable, so a
    refusal reveals nothing (R13.1-01)."""
    org = world.org
    other = factories.group("g-other", org)
    stranger = factories.agent("w9", org)
    factories.grant(world.alice, other, stranger, "worker")
    factories.grant(world.alice, other, world.w1, "worker")  # w1 reads what g-other cites

    own = _stored(local_storage, world.w1.principal, b"w1 uploaded it")
    by_member = _stored(local_storage, world.w2.principal, b"w2, a member, uploaded it")
    cited_here = _stored(local_storage, stranger.principal, b"cited by g-research's log")
    reference(world.group, cited_here)
    cited_elsewhere = _stored(local_storage, world.w2.principal, b"cited by g-other only")
    reference(other, cited_elsewhere)
    forwarded = _stored(local_storage, stranger.principal, b"forwarded from g-other")
    reference(other, forwarded)
    _forwarded_here(world.group, forwarded)
    never_stored = sha256_digest(b"never stored")
    asked = [own, by_member, cited_here, cited_elsewhere, forwarded, never_stored]

    def named(actor: str, group: str = world.group) -> set[str]:
        return set(nameable(group, actor, asked))

    found = routes(world.group, world.w1.principal, asked)
    assert found == {
        own: Found(size=len(b"w1 uploaded it"), cited=False, uploaded=True, forwarded=False),
        by_member: Found(size=25, cited=False, uploaded=False, forwarded=False),
        cited_here: Found(size=25, cited=True, uploaded=False, forwarded=False),
        cited_elsewhere: Found(size=21, cited=False, uploaded=False, forwarded=False),
        forwarded: Found(size=22, cited=True, uploaded=False, forwarded=True),
    }
    assert readable(world.w1.principal, cited_elsewhere)
    assert named(world.w1.principal) == {own, cited_here, forwarded}
    assert named(world.w2.principal) == {by_member, cited_here, cited_elsewhere, forwarded}
    assert named(AUTHORITY) == {cited_here, forwarded}
    assert named(stranger.principal, other) == {cited_here, cited_elsewhere, forwarded}
    assert nameable(world.group, world.w1.principal, [own])[own] == StoredArtifact(
        digest=own, size=len(b"w1 uploaded it")
    )


def test_nameable_is_one_query_for_any_number_of_digests(
    world: World, local_storage: Storage
) -> None:
    """wire§9: the write path asks once per command, in one query, locking the blob rows
    against garbage collection inside its transaction (R13.1-02)."""
    uploaded = [_stored(local_storage, world.w2.principal, b"%d" % n) for n in range(10)]
    cited = [_stored(local_storage, world.w1.principal, b"c%d" % n) for n in range(10)]
    for digest in cited:
        reference(world.group, digest)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        found = nameable(world.group, world.w2.principal, [*uploaded, *cited])
    assert set(found) == {*uploaded, *cited}
    assert len(queries) == 1
    assert "FOR NO KEY UPDATE" in queries[0]["sql"]
    assert nameable(world.group, world.w2.principal, []) == {}


#: rows of a busy group and a prolific uploader, enough for PostgreSQL's planner to weigh
BUSY = 3000


def test_each_route_is_an_index_lookup_per_named_digest(
    world: World, local_storage: Storage
) -> None:
    """wire§9 on the write path's hot path: in a group citing thousands of artifacts, for a
    sender who uploaded thousands, PostgreSQL plans the one query on indexes only, and every
    lookup of a citation or an upload is keyed by the named digests — never a pass over the
    group's citations or the sender's uploads."""
    blobs = [Blob(digest=sha256_digest(b"busy %d" % n), size=1) for n in range(BUSY)]
    Blob.objects.bulk_create(blobs)
    GroupArtifact.objects.bulk_create(
        GroupArtifact(group_id=world.group, digest=blob.digest, data={"digest": blob.digest})
        for blob in blobs
    )
    Upload.objects.bulk_create(Upload(blob=blob, principal=world.w2.principal) for blob in blobs)
    digests = [_stored(local_storage, world.w1.principal, b"i%d" % n) for n in range(3)]
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        nameable(world.group, world.w2.principal, digests)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE artifacts_blob, artifacts_groupartifact, artifacts_upload")
        cursor.execute("EXPLAIN " + queries[0]["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Seq Scan" not in plan, plan
    conditions = [line for line in plan.splitlines() if "Index Cond" in line]
    # the blobs, the citation, the upload, the forward: each found by the digest
    assert sum("digest" in line or "blob_id" in line for line in conditions) >= 4, plan
    for line in conditions:
        if "group_id" in line:
            assert "digest" in line, plan
        if "principal" in line:
            assert "blob_id" in line, plan
