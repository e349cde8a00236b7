"""Who may read an artifact (wire.md §4): its uploader, or an active member of a group whose
log references it. Everyone else is told nothing: the caller answers a digest it may not
read exactly like one never stored (404 ``NOT_FOUND``), so existence is not revealed.

Sharing a group with the uploader is no access. A group's log cites a digest only through a
command that could name it (wire.md §9: already cited there, uploaded by its sender, or
forwarded in by ``context.forward``; ``directory.nameable``), so bytes that one group cites
become readable in another only after a forward the source's log records (R13.3-05,
R13.3-07) or an upload by someone who holds them.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q

from apps.registry.models import Membership

from .models import Blob, GroupArtifact, Upload


def may_read(principal: str) -> Q:
    """The condition on ``Blob`` rows that ``principal`` may read (wire.md §4): one query
    with the blob, its uploads and the groups referencing it, whoever asks."""
    uploaded = Upload.objects.filter(blob=OuterRef("pk"), principal=principal)
    referenced = GroupArtifact.objects.filter(
        digest=OuterRef("pk"),
        group_id__in=Membership.objects.filter(principal=principal, active=True).values("group_id"),
    )
    return Q(Exists(uploaded)) | Q(Exists(referenced))


def readable_blob(principal: str, digest: str) -> Blob | None:
    """The stored blob ``digest`` if ``principal`` may read it, else ``None`` (whether it is
    not stored or not readable: the two look alike on purpose)."""
    return Blob.objects.filter(Q(pk=digest) & may_read(principal)).first()


def readable(principal: str, digest: str) -> bool:
    """Whether ``principal`` may read the stored artifact ``digest`` (wire.md §4)."""
    return readable_blob(principal, digest) is not None
