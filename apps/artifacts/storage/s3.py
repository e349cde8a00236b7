"""Objects in an S3-compatible bucket under ``sha256/<hex>``, through django-storages' boto3.

django-storages' ``S3Storage`` resolves the configuration (bucket, endpoint, region, the
``AWS_*`` credential chain, client options) and keeps one boto3 connection per thread; this
class uses its client directly, because an artifact must be written from a verified spool
(multipart, concurrent parts) and read back as a byte range in a stream, which the
file-object interface of Django storages does not offer. Uploads are spooled locally while
they are hashed and sent to the bucket only once verified, so nothing unverified is ever
stored under a digest and no temporary object is left in the bucket by a failed upload.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import BotoCoreError, ClientError
from storages.backends.s3 import S3Storage as DjangoS3Storage

from .base import CHUNK_BYTES, Spool, StorageError, object_key

_MISSING = {"404", "NoSuchKey", "NotFound"}
TRANSFER = TransferConfig(multipart_threshold=16 * CHUNK_BYTES, multipart_chunksize=8 * CHUNK_BYTES)


def _is_missing(error: ClientError) -> bool:
    return str(error.response.get("Error", {}).get("Code")) in _MISSING


@contextmanager
def _failures(what: str) -> Iterator[None]:
    """boto errors as :class:`StorageError` (an ``OSError``): the edge answers 503."""
    try:
        yield
    except (BotoCoreError, ClientError) as error:
        raise StorageError(f"S3 {what}: {error}") from error


class StoredS3Object:
    """An object in the bucket; each :meth:`chunks` call is one ranged ``GetObject``."""

    def __init__(self, client: Any, bucket: str, key: str, size: int) -> None:
        self._client, self._bucket, self._key = client, bucket, key
        self.size = size

    def chunks(self, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        stop = self.size if stop is None else min(stop, self.size)
        if start >= stop:
            return
        with _failures("read"):
            response = self._client.get_object(
                Bucket=self._bucket, Key=self._key, Range=f"bytes={start}-{stop - 1}"
            )
        body = response["Body"]
        try:
            with _failures("read"):
                yield from body.iter_chunks(CHUNK_BYTES)
        finally:
            body.close()

    def close(self) -> None:
        """Nothing held between reads: each range is its own request."""


class S3Storage:
    kind = "s3"

    def __init__(
        self,
        *,
        bucket: str,
        spool_dir: Path,
        endpoint_url: str = "",
        region: str = "",
    ) -> None:
        if not bucket:
            raise StorageError("MWP_ARTIFACT_S3_BUCKET is not set")
        self.bucket = bucket
        self.spool_dir = Path(spool_dir)
        self._backend = DjangoS3Storage(
            bucket_name=bucket, endpoint_url=endpoint_url or None, region_name=region or None
        )

    def _client(self) -> Any:
        """The calling thread's boto3 client (django-storages keeps one per thread)."""
        return self._backend.connection.meta.client

    def spool(self) -> Spool:
        return Spool(self.spool_dir)

    def commit(self, spool: Spool, digest: str) -> None:
        with _failures("upload"):
            self._client().upload_file(
                str(spool.path), self.bucket, object_key(digest), Config=TRANSFER
            )

    def open(self, digest: str) -> StoredS3Object | None:
        client = self._client()
        try:
            head = client.head_object(Bucket=self.bucket, Key=object_key(digest))
        except ClientError as error:
            if _is_missing(error):
                return None
            raise StorageError(f"S3 head: {error}") from error
        except BotoCoreError as error:
            raise StorageError(f"S3 head: {error}") from error
        return StoredS3Object(client, self.bucket, object_key(digest), int(head["ContentLength"]))

    def exists(self, digest: str) -> bool:
        return self.open(digest) is not None

    def delete(self, digest: str) -> None:
        with _failures("delete"):
            self._client().delete_object(Bucket=self.bucket, Key=object_key(digest))

    def location(self, digest: str) -> str:
        return f"s3://{self.bucket}/{object_key(digest)}"
