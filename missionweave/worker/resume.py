"""Resume anywhere: a checkpoint's state kept by the authority and restored, verified, on any
machine (issue 35 §2; R11.5-01, R0-13, R11.3-13, R10.2-08).

Why: a checkpoint was written only to the worker's own disk
(``checkpoint_store.CheckpointStore``) and ``work.checkpoint`` carried only its digest. When a
worker crashed, the authority reassigned the item "from the last checkpoint with a higher
Ownership Epoch" (R11.5-01), yet the new owner — another agent, on another machine — had
nothing to resume from and started again from zero, repeating every step (and every side
effect) before the checkpoint.

Two halves, one per direction:

- **Storing** (``stored``, in the slot's thread, before ``work.checkpoint`` is signed): the
  checkpoint is uploaded as an artifact — ``stored_document``, a small canonical JSON
  document holding the state and what it belongs to — and the checkpoint names it in
  ``state_artifact`` (wire.md §9, added by issue 35). The authority refuses a digest its
  sender may not name, and its log then cites it, so every member of the group, the next owner
  among them, may read it (wire.md §4). Every ``work.checkpoint`` the runtime sends is stored
  this way: a preemption's, a shutdown's, and a handler's own
  ``ctx.checkpoint(state, release=True)``. Offline, or when the upload is refused, the
  checkpoint goes without it: its state then stays on this machine (logged).
- **Restoring** (``restore``, in the control loop, before ``work.start``): ``plan`` decides
  where the item resumes from, purely, and the rest fetches and verifies. The rules, in order:

  1. the start follows a scheduled retry (``retry_at``): from zero, as before — the runtime
     discards an item's checkpoints when it reports a failure, so a retry starts afresh
     (R11.4-08);
  2. this worker holds a checkpoint of the current ownership epoch: that one — every
     checkpoint this owner sent in this epoch was written here first, so it is at least as
     recent as the authority's;
  3. the authority records no checkpoint: from zero;
  4. the authority's last checkpoint (the projection's ``resume_from``, from the log) names a
     ``state_artifact``: downloaded and verified — the bytes against their digest (the client
     does it as they stream, R13.1-05), then the document against the checkpoint the log
     recorded: the same item, the same ``ref``, ``artifacts`` and ``state_digest``, a state
     whose own digest is ``state_digest``, and the same contract (a corrected contract,
     R10.2-06, makes the old state meaningless);
  5. otherwise (a checkpoint sent without its state, by an older worker or while offline):
     from zero.

  Local checkpoints that are not used are discarded (they belong to an earlier ownership of
  this item), so they cannot be picked up later.

**A state that fails verification is not used: the item starts from zero, with a WARNING
naming the checkpoint and why.** Refusing to start would leave the item with this owner until
its start deadline passes and then hand the same bytes to the next worker; starting from zero
redoes work, but finishes it, and every result is still checked before it is accepted
(R13.2-03). A download that fails for want of the authority (``Offline``) is neither: the item
is not started now, and is tried again once the link is back.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from missionweave.client.errors import ApiError, ArtifactMismatch
from missionweave.protocol.canonical import canonical_bytes, digest, is_digest, sha256_digest

from .authority import Authority
from .checkpoint_store import CHECKPOINT_FORMAT, Checkpoint, CheckpointStore
from .link import Link, Offline

log = logging.getLogger("missionweave.worker")

#: the media type the stored state is uploaded with
STATE_MEDIA_TYPE = "application/json"


# --- storing ---------------------------------------------------------------------------------


def stored_document(checkpoint: Checkpoint, contract: Mapping[str, Any]) -> bytes:
    """The bytes uploaded for ``checkpoint``: canonical JSON (RFC 8785) of the state (base64
    for ``bytes``) with the item it belongs to and the digest of the contract it was taken
    under, so a restore can tell it is this item's, under this contract."""
    if isinstance(checkpoint.state, bytes | bytearray):
        kind, state = "bytes", base64.b64encode(bytes(checkpoint.state)).decode()
    else:
        kind, state = "json", checkpoint.state
    return canonical_bytes(
        {
            "format": CHECKPOINT_FORMAT,
            "ref": checkpoint.ref,
            "group": checkpoint.group,
            "work_item": checkpoint.work_item,
            "ownership_epoch": checkpoint.ownership_epoch,
            "contract": digest(dict(contract)),
            "kind": kind,
            "state": state,
            "state_digest": checkpoint.state_digest,
            "artifacts": list(checkpoint.artifacts),
        }
    )


def uploader(link: Link, authority: Authority) -> Callable[[bytes], str]:
    """``upload`` for ``stored``: through the link, so an unreachable authority is
    ``Offline`` at once rather than after the client's retries."""

    def upload(data: bytes) -> str:
        return link.call(lambda: authority.upload(data, content_type=STATE_MEDIA_TYPE))

    return upload


def stored(
    checkpoint: Checkpoint, contract: Mapping[str, Any], upload: Callable[[bytes], str]
) -> dict[str, Any]:
    """The ``checkpoint`` object of ``work.checkpoint``, with ``state_artifact`` once the
    state is uploaded (``upload`` returns its digest). Offline or refused, the object goes
    without it: the checkpoint is still recorded, and resumable on this machine only."""
    wire = checkpoint.wire()
    try:
        wire["state_artifact"] = upload(stored_document(checkpoint, contract))
    except Offline:
        log.info("%s: offline, its state stays on this machine", checkpoint.ref)
    except ApiError as error:
        log.warning("%s: the state was not stored (%s): resumable here only", checkpoint.ref, error)
    return wire


# --- restoring -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """Where an item resumes from: this worker's own checkpoint, the authority's, or none."""

    source: Literal["local", "authority", "none"]
    why: str


def plan(local: Checkpoint | None, row: Mapping[str, Any]) -> Plan:
    """The rules of the module docstring, in order, over the owned row (``queues.WorkRow``:
    ``ownership_epoch``, ``retry_at``, ``resume_from``) and this worker's latest checkpoint."""
    if row.get("retry_at"):
        return Plan("none", "a retry starts afresh (R11.4-08)")
    if local is not None and local.ownership_epoch == row["ownership_epoch"]:
        return Plan("local", "this owner's own checkpoint of this ownership")
    recorded = row.get("resume_from")
    if not recorded:
        return Plan("none", "the authority records no checkpoint")
    if not is_digest(recorded.get("state_artifact")):
        return Plan("none", f"checkpoint {recorded.get('ref')} was recorded without its state")
    return Plan("authority", f"checkpoint {recorded['ref']} is stored by the authority")


class Unverified(ValueError):
    """Downloaded bytes that are not the state of the checkpoint the log recorded."""


def verified(
    data: bytes, recorded: Mapping[str, Any], row: Mapping[str, Any], contract: Mapping[str, Any]
) -> Checkpoint:
    """The checkpoint in ``data`` if it is exactly the one ``recorded`` (the log's) for the
    item of ``row`` under ``contract``; ``Unverified`` saying what differs otherwise."""
    try:
        document = json.loads(data)
    except ValueError as error:
        raise Unverified(f"not a JSON document: {error}") from None
    if not isinstance(document, dict) or document.get("format") != CHECKPOINT_FORMAT:
        raise Unverified(f"not a {CHECKPOINT_FORMAT} document")
    expected = {
        "group": row["group"],
        "work_item": row["work_item"],
        "ref": recorded["ref"],
        "state_digest": recorded["state_digest"],
        "artifacts": list(recorded.get("artifacts") or []),
    }
    for name, value in expected.items():
        if document.get(name) != value:
            raise Unverified(f"its {name} is {document.get(name)!r}, the log's is {value!r}")
    if document.get("contract") != digest(dict(contract)):
        raise Unverified("it was taken under another contract")
    kind, raw = document.get("kind"), document.get("state")
    state: bytes | dict[str, Any]
    if kind == "bytes" and isinstance(raw, str):
        try:
            state = base64.b64decode(raw, validate=True)
        except ValueError:
            raise Unverified("its state is not base64") from None
        found = sha256_digest(state)
    elif kind == "json" and isinstance(raw, dict):
        try:
            state, found = raw, digest(raw)
        except ValueError:  # NaN, an integer past 2^53: nothing RFC 8785 can write
            raise Unverified("its state is not a canonical JSON object") from None
    else:
        raise Unverified(f"its state is not of a known kind ({kind!r})")
    if found != recorded["state_digest"]:
        raise Unverified(f"its state hashes to {found}, not to {recorded['state_digest']}")
    epoch = document.get("ownership_epoch")
    return Checkpoint(
        ref=recorded["ref"],
        sequence=int(recorded.get("sequence") or 0),
        group=row["group"],
        work_item=row["work_item"],
        ownership_epoch=epoch if isinstance(epoch, int) else 0,
        state=state,
        state_digest=found,
        artifacts=tuple(expected["artifacts"]),
    )


def restore(
    row: Mapping[str, Any],
    store: CheckpointStore,
    contract: Mapping[str, Any],
    download: Callable[[str], bytes],
) -> Checkpoint | None:
    """The checkpoint the item of ``row`` resumes from (``None``: from zero), fetching and
    verifying the authority's when ``plan`` says so. ``Offline`` from ``download`` passes
    through: the item is not to be started now."""
    local = store.latest()
    chosen = plan(local, row)
    where = f"{row['group']}/{row['work_item']}"
    if chosen.source == "local":
        return local
    if local is not None:
        store.discard()  # an earlier ownership's: never to be resumed from again
    if chosen.source == "none":
        if local is not None or row.get("resume_from"):
            log.info("%s starts from zero: %s", where, chosen.why)
        return None
    recorded = row["resume_from"]
    try:
        data = download(recorded["state_artifact"])
        checkpoint = verified(data, recorded, row, contract)
    except (ApiError, ArtifactMismatch, Unverified) as error:
        log.warning(
            "%s starts from zero: the state of checkpoint %s cannot be used: %s",
            where,
            recorded["ref"],
            error,
        )
        return None
    log.info("%s resumes from checkpoint %s, restored from the authority", where, recorded["ref"])
    return checkpoint
