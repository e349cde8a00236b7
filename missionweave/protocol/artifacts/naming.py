"""A digest is not a key (wire.md §9): the artifacts a command may name.

A command may name an artifact only if (a) this group's log already cites it, (b) its sender
itself uploaded it, or (c) it arrived in this group by ``context.forward`` (R13.3-05,
R13.3-07). So bytes cross from one group to another only by a forward, which the source
group's log records (``context.forwarded``), or in the hands of someone who holds them and
uploads them: knowing a digest that another group cites, or sharing a group with someone who
uploaded it, lets nobody name it. :func:`nameable_digests` is that rule, the one place it is
decided; the artifact store answers the three questions for the digests a command names
(``apps.artifacts.directory.nameable``) and the write path loads the digests that pass as
``stored_artifact_key`` views. :func:`require_nameable` refuses anything else exactly like a
digest never stored — 404 ``NOT_FOUND`` with ``details.digest`` — so the refusal reveals
nothing (R13.1-01).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ..errors import ErrorCode, ProtocolError
from ..facts import StateKey, View
from .records import StoredArtifact, stored_artifact_key


def nameable_digests(
    named: Iterable[str],
    *,
    cited: Collection[str],
    uploaded: Collection[str],
    forwarded: Collection[str],
) -> set[str]:
    """The digests of ``named`` a command may name in a group (wire.md §9): ``cited`` by
    that group's log, ``uploaded`` by the command's sender, or ``forwarded`` into the group
    (``context.received``, R13.3-07).

    A forwarded digest is also cited (``context.received`` is a citation), so (c) adds no
    digest to (a); it is a route of its own because, short of their holder uploading them, it
    is the only one by which bytes another group cites enter this one, and it leaves
    ``context.forwarded`` in the source's log (R13.3-05: no group content enters another by
    default). Readable elsewhere, uploaded by another member: neither is a route."""
    return {
        digest for digest in named if digest in cited or digest in uploaded or digest in forwarded
    }


def stored_keys(digests: Iterable[str]) -> set[StateKey]:
    """The view keys that load what the store says about ``digests`` for the sender."""
    return {stored_artifact_key(digest) for digest in digests}


def require_nameable(view: View, named: Iterable[tuple[str, str]]) -> dict[str, StoredArtifact]:
    """Each ``(JSON path, digest)`` names a stored artifact the sender may name; the first
    that does not is ``NOT_FOUND`` naming it (R13.1-01, wire.md §9)."""
    found: dict[str, StoredArtifact] = {}
    for path, digest in named:
        stored = view.get(stored_artifact_key(digest))
        if stored is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"no stored artifact {digest}",
                requirement="R13.1-01",
                details={"path": path, "digest": digest},
            )
        found[digest] = stored
    return found
