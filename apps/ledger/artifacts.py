"""What the write path must read about stored artifacts, which the artifact store owns.

A command may name an artifact only if this group's log already cites it, its sender
uploaded it, or it arrived here by ``context.forward`` (wire.md §9, "A digest is not a key";
R13.3-05, R13.3-07); ``artifact.publish`` checks a manifest's ``size`` against the stored
object (R13.1-03). The ledger sits below the app that holds the store and cannot import its
models, so that app hands in this read from its ``AppConfig.ready()``, as the registry hands
in the agent directory.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

from missionweave.protocol.artifacts.records import StoredArtifact

#: ``(group_id, actor, digests) -> {digest: StoredArtifact}`` for the digests ``actor`` may
#: name in ``group_id``; the others are left out (never stored and not nameable look alike)
Nameable = Callable[[str, str, Collection[str]], dict[str, StoredArtifact]]


#: ``(digest, max_bytes) -> bytes`` of a stored object verified against its digest, or
#: ``None`` when it is missing, corrupted or larger than ``max_bytes``
ReadVerified = Callable[[str, int], bytes | None]


@dataclass(frozen=True, slots=True)
class ArtifactDirectory:
    nameable: Nameable
    #: the bytes of an output the contract declares with a JSON Schema (R13.2-03 step 1)
    read_verified: ReadVerified | None = None


_installed: list[ArtifactDirectory] = []


def install(directory: ArtifactDirectory) -> None:
    """Called once, by the app that owns the store; a second, different one is refused."""
    if _installed and _installed[0] != directory:
        raise ImproperlyConfigured("an artifact directory is already installed")
    _installed[:] = [directory]


def directory() -> ArtifactDirectory:
    if not _installed:
        raise ImproperlyConfigured("no artifact directory: is apps.artifacts in INSTALLED_APPS?")
    return _installed[0]
