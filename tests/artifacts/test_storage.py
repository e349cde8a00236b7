"""One contract, run against each storage backend configured directly in this process: the
filesystem and an S3 bucket on a real moto_server (R13.1-01, R13.1-02, R13.1-06)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.config import Config

from apps.artifacts.retrieval import Corrupted, open_verified
from apps.artifacts.services import artifact_store
from apps.artifacts.storage import (
    CHUNK_BYTES,
    FilesystemStorage,
    S3Storage,
    Storage,
    StorageError,
    clean_spools,
)
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.errors import ProtocolError

from .servers import MotoServer


@pytest.fixture(params=["fs", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    if request.param == "fs":
        yield FilesystemStorage(tmp_path / "store")
        return
    moto: MotoServer = request.getfixturevalue("moto_server")
    request.getfixturevalue("s3_credentials")
    yield S3Storage(
        bucket=moto.new_bucket(),
        spool_dir=tmp_path / "spool",
        endpoint_url=moto.endpoint_url,
        region="us-east-1",
    )


def _store(storage: Storage, data: bytes) -> str:
    spool = storage.spool()
    try:
        spool.write([data[:1000], data[1000:]])
        digest = spool.finish()
        storage.commit(spool, digest)
    finally:
        spool.discard()
    return digest


def test_an_object_is_stored_under_the_digest_of_its_bytes_and_read_back(
    storage: Storage,
) -> None:
    """R13.1-01: the spool hashes what is written; the object lives under sha256/<hex> and
    reads back whole and by range, in chunks of at most 1 MiB."""
    data = os.urandom(2 * CHUNK_BYTES + 10)
    digest = _store(storage, data)

    assert digest == sha256_digest(data)
    assert storage.exists(digest)
    assert storage.location(digest).endswith(digest.removeprefix("sha256:"))
    stored = storage.open(digest)
    assert stored is not None
    try:
        assert stored.size == len(data)
        chunks = list(stored.chunks())
        assert b"".join(chunks) == data
        assert max(len(chunk) for chunk in chunks) <= CHUNK_BYTES
        assert b"".join(stored.chunks(5, CHUNK_BYTES + 7)) == data[5 : CHUNK_BYTES + 7]
        assert b"".join(stored.chunks(len(data) - 3)) == data[-3:]
        assert b"".join(stored.chunks(10, 10)) == b""
    finally:
        stored.close()
    assert list(storage.spool_dir.iterdir()) == []


def test_committing_the_same_digest_twice_leaves_one_object(storage: Storage) -> None:
    """R13.1-01: a second commit of identical (verified) bytes replaces the object
    atomically; it stays readable throughout."""
    data = os.urandom(5000)
    assert _store(storage, data) == _store(storage, data)
    stored = storage.open(sha256_digest(data))
    assert stored is not None
    assert b"".join(stored.chunks()) == data
    stored.close()


def test_a_missing_object_opens_as_none_and_deleting_it_twice_is_fine(storage: Storage) -> None:
    digest = _store(storage, b"short-lived")
    storage.delete(digest)
    storage.delete(digest)
    assert storage.open(digest) is None
    assert not storage.exists(digest)


def test_artifact_store_keeps_nothing_of_bytes_that_do_not_match(
    storage: Storage, db: None
) -> None:
    """R13.1-01: ARTIFACT_HASH_MISMATCH and TOO_LARGE leave no object and no spool."""
    claimed = sha256_digest(b"claimed")
    with pytest.raises(ProtocolError) as refused:
        artifact_store(principal="agent:w1", digest=claimed, chunks=[b"other"], storage=storage)
    assert refused.value.code == "ARTIFACT_HASH_MISMATCH"
    with pytest.raises(ProtocolError) as too_large:
        artifact_store(
            principal="agent:w1",
            digest=claimed,
            chunks=[b"x" * 600, b"y" * 600],
            storage=storage,
            max_bytes=1000,
        )
    assert too_large.value.code == "TOO_LARGE"
    assert not storage.exists(claimed)
    assert not storage.exists(sha256_digest(b"other"))
    assert list(storage.spool_dir.iterdir()) == []


def test_only_spools_idle_for_longer_than_the_age_are_cleaned(tmp_path: Path) -> None:
    """A crashed upload's spool is removed after an hour idle; one in progress is kept."""
    storage = FilesystemStorage(tmp_path)
    idle, busy = storage.spool(), storage.spool()
    busy.write([b"still arriving"])
    old = time.time() - 7200
    os.utime(idle.path, (old, old))

    assert clean_spools(storage.spool_dir, 3600, apply=False) == 1
    assert idle.path.exists()
    assert clean_spools(storage.spool_dir, 3600, apply=True) == 1
    assert not idle.path.exists()
    assert busy.path.exists()
    idle.discard()
    busy.discard()


def test_an_unreachable_bucket_is_a_storage_error(tmp_path: Path, s3_credentials: None) -> None:
    """wire§8: an outage surfaces as StorageError (an OSError), which the edge answers 503."""
    storage = S3Storage(
        bucket="nowhere", spool_dir=tmp_path, endpoint_url="http://127.0.0.1:9", region="us-east-1"
    )
    backend = storage._backend  # fail fast rather than retry for a minute
    backend.client_config = backend.client_config.merge(
        Config(retries={"max_attempts": 1}, connect_timeout=1)
    )
    with pytest.raises(StorageError):
        storage.open(sha256_digest(b"x"))
    assert issubclass(StorageError, OSError)


def test_identity_is_the_digest_never_the_location(storage: Storage) -> None:
    """R13.1-06, R13.1-05: the same bytes found at another location are the same artifact,
    and other bytes at the artifact's own location are not it (a location is mutable)."""
    data = os.urandom(3000)
    digest = _store(storage, data)
    verified = open_verified(storage, digest, in_memory_bytes=10_000)
    assert verified.data == data

    # Other bytes under the same name: the location still answers, the digest does not.
    spool = storage.spool()
    spool.write([b"replaced"])
    spool.finish()
    storage.commit(spool, digest)
    spool.discard()
    with pytest.raises(Corrupted) as found:
        open_verified(storage, digest, in_memory_bytes=10_000)
    assert found.value.actual == sha256_digest(b"replaced")
