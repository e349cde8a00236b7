"""The idempotency key of an external operation (R16-12, R11.4-09).

A worker that calls something outside MissionWeave — sends an e-mail, opens a ticket, charges
a card — passes this key to that system, so a repeated attempt of the same logical operation
is recognised there as a duplicate instead of being done twice: at-least-once delivery and
retries repeat attempts, so delivery alone never makes an external effect happen once
(R16-13); the key is what lets the external system do it. One function, pure and
deterministic, so the worker runtime, a retried task and a reconnecting offline worker all
derive the same key without asking the authority.

What goes in, and why (R16-12 names exactly these four):

- ``mission``: the effort the side effect is done for (and charged to). Use the protocol's
  ``group/mission`` notation when mission ids are reused across groups: the key has no group
  of its own because R16-12 does not list one.
- ``work_item``: the unit of work performing it; two WorkItems of one mission doing "the same"
  operation are different operations.
- ``ownership_epoch``: the owner's fence (R11.3-01, R11.5-01). Every retry, lease renewal,
  restart after a checkpoint or session replacement, and offline reconciliation of *one*
  owner keeps the same epoch, hence the same key, so the external system deduplicates them
  (R11.4-09). A reassignment raises the epoch: the new owner resumes from the last checkpoint
  and its operations are its own, never mistaken for — or swallowed as duplicates of — a
  fenced owner's late attempt.
- ``operation``: the worker's logical operation id ("notify-customer", "invoice:42"),
  distinguishing the side effects of one attempt from each other.

Deliberately *not* in it: the lease id, the attempt number and the session epoch. They change
on every retry and reconnection, which is exactly when deduplication is needed.

The key is ``mwp-op-v1-`` followed by the hex SHA-256 of the RFC 8785 canonical JSON of the
four values: canonical JSON (not string concatenation) keeps ``("a:b", "c")`` and
``("a", "b:c")`` apart, and the result is 74 characters of ``[a-z0-9-]``, safe in an HTTP
header and within the length limits of common idempotency-key APIs. The ``v1`` names this
derivation; a different one would need a new prefix.
"""

from __future__ import annotations

from .canonical import digest

PREFIX = "mwp-op-v1-"
#: the largest integer RFC 8785 (and every JSON peer) represents exactly
MAX_SAFE_INTEGER = 2**53 - 1


def external_operation_key(
    mission: str, work_item: str, ownership_epoch: int, operation: str
) -> str:
    """The stable idempotency key of ``operation`` done for ``work_item`` of ``mission`` by
    the owner at ``ownership_epoch`` (R16-12); ``ValueError`` for an unusable input."""
    for name, value in (("mission", mission), ("work_item", work_item), ("operation", operation)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} is a non-empty string")
    if (
        isinstance(ownership_epoch, bool)
        or not isinstance(ownership_epoch, int)
        or not 1 <= ownership_epoch <= MAX_SAFE_INTEGER
    ):
        raise ValueError("ownership_epoch is a positive integer (acceptance starts it at 1)")
    source = {
        "mission": mission,
        "work_item": work_item,
        "ownership_epoch": ownership_epoch,
        "operation": operation,
    }
    return PREFIX + digest(source).removeprefix("sha256:")
