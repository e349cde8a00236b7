"""The authority's own Ed25519 key: it signs group heads and snapshots.

A head is signed once per sequence and kept (``SignedHead``), each naming the head signed
before it (:mod:`missionweave.protocol.heads`), so a later history that contradicts a head
someone once verified can be proved to (issue 33 §2).

The key comes from ``MWP_AUTHORITY_KEY`` (base64url seed), so every server of a deployment
signs with the same key; with nothing set, a key file under ``var/`` is created once.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from missionweave.protocol.canonical import canonical_bytes
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.heads import head_contradiction, head_document, reference
from missionweave.protocol.signing import (
    b64url_decode,
    b64url_encode,
    generate_private_key,
    private_key_from_seed,
    private_key_seed,
    public_key_text,
    sign_document,
)
from missionweave.protocol.timefmt import format_timestamp

from .models import GroupLog, SignedHead

log = logging.getLogger(__name__)

#: how often a head is signed again when another server signed one for the group meanwhile.
#: A lost attempt is another server's won one (lock-free: the loop always progresses). A loss
#: at the same sequence returns the winner's head; a loss to a head *behind* ours (a server
#: that read an older log) signs again after it, so one server may lose once per log position
#: between the oldest reader's and its own. Five was exactly that many in
#: ``test_servers_signing_at_once_leave_one_chain`` (four commands between eight signers),
#: and CI saw it run out under load; twenty leaves room for a busy group
_SIGNING_ATTEMPTS = 20


@functools.cache
def signing_key() -> Ed25519PrivateKey:
    if settings.MWP_AUTHORITY_KEY:
        return private_key_from_seed(b64url_decode(settings.MWP_AUTHORITY_KEY))
    path = settings.MWP_AUTHORITY_KEY_FILE
    if not path.exists():
        key = generate_private_key()
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(b64url_encode(private_key_seed(key)))
    return private_key_from_seed(b64url_decode(path.read_text().strip()))


def public_key() -> str:
    return public_key_text(signing_key().public_key())


def authority_id() -> str:
    return settings.MWP_AUTHORITY_ID


def signed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` plus the authority's signature over its canonical form without it."""
    return sign_document(signing_key(), document)


def signed_head(log_row: GroupLog) -> dict[str, Any]:
    """``GET /groups/{g}/head``: the head, signed, so a verified chain up to it is authentic.

    The head already signed at this sequence, if any, else a new one naming the latest
    signed before it. Two servers signing at once: the database keeps one head per sequence
    and one successor per head, so the loser reads the winner's head, or signs again after it;
    a server that read the log before a later head was signed reads the log again, so only a
    log truly behind or beside a signed head is refused.
    """
    group_id, sequence, hash_ = log_row.group_id, log_row.head_sequence, log_row.head_hash
    for _ in range(_SIGNING_ATTEMPTS):
        latest = _latest_signed(group_id)
        if latest is not None and latest["sequence"] > sequence:
            # another server signed a later head since this one read the log: read it again
            fresh = _committed_head(group_id)
            if fresh[0] > sequence:
                sequence, hash_ = fresh
                continue
        if latest is not None and latest["sequence"] >= sequence:
            return _at_or_after_head(latest, group_id, sequence, hash_)
        document = signed(
            head_document(
                group=group_id,
                sequence=sequence,
                hash_=hash_,
                previous=None if latest is None else reference(latest),
                signed_at=format_timestamp(timezone.now()),
            )
        )
        try:
            with transaction.atomic():
                SignedHead.objects.create(
                    group_id=group_id,
                    sequence=sequence,
                    hash=hash_,
                    previous_digest="" if latest is None else document["previous"]["digest"],
                    document=canonical_bytes(document).decode("utf-8"),
                )
        except IntegrityError:
            continue  # signed by another server meanwhile: read what it signed
        return document
    raise ProtocolError(ErrorCode.UNAVAILABLE, f"could not sign the head of {group_id}; try again")


def _committed_head(group_id: str) -> tuple[int, str]:
    return GroupLog.objects.values_list("head_sequence", "head_hash").get(group_id=group_id)


def _latest_signed(group_id: str) -> dict[str, Any] | None:
    text = (
        SignedHead.objects.filter(group_id=group_id)
        .order_by("-sequence")
        .values_list("document", flat=True)
        .first()
    )
    return None if text is None else json.loads(text)


def _at_or_after_head(
    latest: dict[str, Any], group_id: str, sequence: int, hash_: str
) -> dict[str, Any]:
    """The head already signed at ``sequence``; a log behind or beside what the authority
    signed is one it must not vouch for (its history was rewritten under it)."""
    if latest["sequence"] == sequence and latest["hash"] == hash_:
        return latest
    offered = {"group": group_id, "sequence": sequence, "hash": hash_, "previous": None}
    contradiction = head_contradiction(latest, offered)
    log.critical(
        "group %s: the log contradicts a head the authority signed: %s", group_id, contradiction
    )
    raise ProtocolError(
        ErrorCode.INTERNAL,
        f"the log of {group_id} contradicts a head the authority signed; it signs no other",
        details={"group": group_id, "signed_head": latest},
    )
