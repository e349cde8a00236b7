"""The fold of a Worker's per-group projection: ``evolve(rows, event, worker)`` returns only
the rows one event changes (``None`` deletes one), and every event type it knows has exactly
one fold here (R0-02, R11.1-02; the rows are described in ``queue_rows.py``, the whole
projection in ``queues.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from missionweave.protocol import states as S

from .queue_rows import (
    INBOX,
    INBOX_HEAD,
    INBOX_LIMIT,
    ITEM,
    MEMBERSHIP,
    OFFER,
    WORK,
    Changes,
    Event,
    InboxEntry,
    ItemRow,
    LeaseRow,
    MembershipRow,
    OfferRow,
    Rows,
    WorkRow,
    gate_of,
    terms_of,
)

# --- the fold ----------------------------------------------------------------------------------


class _Draft:
    """The rows one event is changing, read through to the rows it started from."""

    def __init__(self, rows: Rows, event: Event, worker: str) -> None:
        self.rows = rows
        self.event = event
        self.worker = worker
        self.changes: Changes = {}

    def get(self, kind: str, key: str) -> Any:
        if (kind, key) in self.changes:
            return self.changes[kind, key]
        return self.rows.get(kind, {}).get(key)

    def put(self, kind: str, key: str, row: Any) -> None:
        self.changes[kind, key] = row

    def drop(self, kind: str, key: str) -> None:
        if self.get(kind, key) is not None:
            self.changes[kind, key] = None

    def note(self, kind: str, work_item: str | None, **detail: Any) -> None:
        """An inbox entry for this event; the oldest beyond ``INBOX_LIMIT`` drops off."""
        index = (self.get(INBOX_HEAD, "") or {"next": 0})["next"]
        entry: InboxEntry = {
            "index": index,
            "sequence": self.event["sequence"],
            "event_id": self.event["event_id"],
            "type": self.event["type"],
            "kind": kind,
            "work_item": work_item,
            "detail": detail,
        }
        self.put(INBOX, inbox_key(index), entry)
        if index >= INBOX_LIMIT:
            self.drop(INBOX, inbox_key(index - INBOX_LIMIT))
        self.put(INBOX_HEAD, "", {"next": index + 1})


Fold = Callable[[_Draft, dict[str, Any]], None]
_FOLDS: dict[str, Fold] = {}


def _folds(*types: str) -> Callable[[Fold], Fold]:
    def register(fold: Fold) -> Fold:
        for type_ in types:
            if type_ in _FOLDS:  # one fold per event type: a second would silently win
                raise ValueError(f"{type_} is already folded by {_FOLDS[type_].__name__}")
            _FOLDS[type_] = fold
        return fold

    return register


def folded_types() -> frozenset[str]:
    """The event types that can change a worker's projection."""
    return frozenset(_FOLDS)


def inbox_key(index: int) -> str:
    return f"{index:012d}"


def evolve(rows: Rows, event: Event, worker: str) -> Changes:
    """The rows ``event`` changes in ``worker``'s projection ``rows`` of its group (pure)."""
    fold = _FOLDS.get(event["type"])
    if fold is None:
        return {}
    draft = _Draft(rows, event, worker)
    fold(draft, event["payload"])
    return draft.changes


def fold_into(rows: dict[str, dict[str, Any]], changes: Changes) -> None:
    """Write ``changes`` into ``rows`` in place (a kind left empty is removed, so a live state
    and a replayed one compare equal)."""
    for (kind, key), row in changes.items():
        if row is None:
            rows.get(kind, {}).pop(key, None)
            if kind in rows and not rows[kind]:
                del rows[kind]
        else:
            rows.setdefault(kind, {})[key] = row


def _recorded(d: _Draft) -> tuple[str, int]:
    return d.event["recorded_at"], d.event["sequence"]


def _set_item(d: _Draft, ident: str, **changes: Any) -> ItemRow | None:
    """Change the remembered item, and what an owned item copies of it (gate, checkpoint)."""
    item: ItemRow | None = d.get(ITEM, ident)
    if item is None:
        return None
    item = cast(ItemRow, {**item, **changes})
    d.put(ITEM, ident, item)
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None:
        d.put(
            WORK,
            ident,
            {**row, "gate": gate_of(row["terms"], item), "resume_from": item["last_checkpoint"]},
        )
    return item


def _lose(d: _Draft, ident: str, reason: str) -> None:
    """The item is no longer this worker's (fenced, reassigned, ended): its slot must stop."""
    row: WorkRow | None = d.get(WORK, ident)
    if row is None:
        return
    d.drop(WORK, ident)
    d.note(
        "work_lost",
        ident,
        reason=reason,
        state=row["state"],
        ownership_epoch=row["ownership_epoch"],
        lease_id=row["lease"]["lease_id"] if row["lease"] else None,
    )


def _close_offer(d: _Draft, ident: str, reason: str) -> None:
    offer: OfferRow | None = d.get(OFFER, ident)
    if offer is None:
        return
    d.drop(OFFER, ident)
    d.note("offer_closed", ident, offer=offer["offer"], reason=reason)


def _requeue(d: _Draft, ident: str, **changes: Any) -> None:
    """Back in the work queue, still owned (R10.2-08, R10.2-10, R11.3-10, R11.4-08)."""
    row: WorkRow | None = d.get(WORK, ident)
    if row is None:
        return
    queued_at, sequence = _recorded(d)
    d.put(
        WORK,
        ident,
        {
            **row,
            "state": S.QUEUED,
            "lease": None,
            "queued_at": queued_at,
            "queued_sequence": sequence,
            **changes,
        },
    )


def _checkpoint(d: _Draft, payload: dict[str, Any]) -> dict[str, Any]:
    """As the WorkItem keeps it (``item_evolvers._checkpoint``): where and when it was taken."""
    at, sequence = _recorded(d)
    return {**payload["checkpoint"], "sequence": sequence, "at": at}


# --- offers and ownership (R10.2-03..06, R10.3) ------------------------------------------------


@_folds("work.authorized")
def _authorized(d: _Draft, p: dict[str, Any]) -> None:
    row: ItemRow = {
        "work_item": p["work_item"],
        "mission": p["mission"],
        "revision": p["revision"],
        "terms": terms_of(p["contract"]),
        "approvals": [],
        "refused_by": None,
        "last_checkpoint": None,
        "attempts": 0,
    }
    d.put(ITEM, p["work_item"], row)


@_folds("work.offered")
def _offered(d: _Draft, p: dict[str, Any]) -> None:
    ident = p["work_item"]
    item: ItemRow | None = d.get(ITEM, ident)
    if item is not None and p["revision"] != item["revision"]:
        # R10.1-05: a corrected contract is a new revision, decided afresh
        contract = p.get("contract")
        item = _set_item(
            d,
            ident,
            revision=p["revision"],
            terms=terms_of(contract) if contract is not None else item["terms"],
            approvals=[],
            refused_by=None,
        )
    # an offer is made only when no owner is active: an owner still holding it was fenced
    _lose(d, ident, "fenced_by_offer")
    mine = [(rank, o) for rank, o in enumerate(p["offers"]) if o["worker"] == d.worker]
    if not mine:
        _close_offer(d, ident, "superseded")
        return
    rank, offer = mine[0]  # a worker appears once per offer (R10.3-04)
    ahead = [
        {"offer": o["offer"], "expires_at": o["expires_at"]}
        for o in (p["offers"][:rank] if p["mode"] == "sequential" else ())
    ]
    offered_at, sequence = _recorded(d)
    row: OfferRow = {
        "group": d.event["group"],
        "work_item": ident,
        "mission": item["mission"] if item else None,
        "offer": offer["offer"],
        "mode": p["mode"],
        "rank": rank,
        "revision": p["revision"],
        "expires_at": offer["expires_at"],
        "offered_at": offered_at,
        "offered_sequence": sequence,
        "start_within_s": p.get("start_within_s"),
        "ahead": ahead,
        "terms": item["terms"] if item else terms_of(None),
    }
    d.put(OFFER, ident, row)
    d.note(
        "offer",
        ident,
        offer=offer["offer"],
        mode=p["mode"],
        revision=p["revision"],
        expires_at=offer["expires_at"],
    )


@_folds("work.offer_accepted")
def _offer_accepted(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-04, R0-10: this worker's acceptance starts its ownership epoch, queued."""
    ident = p["work_item"]
    if p["worker"] != d.worker:
        return  # this worker's own open offer is withdrawn by the next event
    d.drop(OFFER, ident)
    item: ItemRow | None = d.get(ITEM, ident)
    terms = item["terms"] if item else terms_of(None)
    queued_at, sequence = _recorded(d)
    row: WorkRow = {
        "group": d.event["group"],
        "work_item": ident,
        "mission": item["mission"] if item else None,
        "revision": p["contract_revision"],
        "state": S.QUEUED,
        "ownership_epoch": p["ownership_epoch"],
        "start_deadline": p["start_deadline"],
        "retry_at": None,
        "queued_at": queued_at,
        "queued_sequence": sequence,
        "attempt": item["attempts"] if item else 0,
        "terms": terms,
        "gate": gate_of(terms, item),
        "lease": None,
        "resume_from": item["last_checkpoint"] if item else None,
    }
    d.put(WORK, ident, row)


@_folds("work.offer_withdrawn")
def _offer_withdrawn(d: _Draft, p: dict[str, Any]) -> None:
    offer: OfferRow | None = d.get(OFFER, p["work_item"])
    if offer is not None and offer["offer"] == p["offer"]:
        _close_offer(d, p["work_item"], p.get("reason", "withdrawn"))


@_folds("work.offer_rejected")
def _offer_rejected(d: _Draft, p: dict[str, Any]) -> None:
    """This worker's own rejection closes its offer; another's moves it up the sequence."""
    ident = p["work_item"]
    offer: OfferRow | None = d.get(OFFER, ident)
    if offer is None:
        return
    if offer["offer"] == p["offer"]:
        d.drop(OFFER, ident)
        return
    ahead = [entry for entry in offer["ahead"] if entry["offer"] != p["offer"]]
    if ahead != offer["ahead"]:
        d.put(OFFER, ident, {**offer, "ahead": ahead})


@_folds("approval.execution_granted", "approval.execution_refused")
def _execution_decided(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-06: grants count toward the gate; a refusal holds the revision and stops its
    start-by clock (issue 34)."""
    ident, actor = p["work_item"], d.event["actor"]
    item: ItemRow | None = d.get(ITEM, ident)
    if item is None:
        return
    granted = d.event["type"] == "approval.execution_granted"
    if granted:
        _set_item(d, ident, approvals=[*item["approvals"], actor])
    else:
        _set_item(d, ident, refused_by=actor)
        row: WorkRow | None = d.get(WORK, ident)
        if row is not None:  # its start-by clock stops: it waits for a corrected contract
            d.put(WORK, ident, {**row, "start_deadline": None})
    if d.get(WORK, ident) is not None:
        decision = "granted" if granted else "refused"
        d.note("gate", ident, decision=decision, by=actor, revision=p["contract_revision"])


@_folds("work.message_posted")
def _message_posted(d: _Draft, p: dict[str, Any]) -> None:
    """Messages and questions on an item this worker owns or is offered (R10.1-02, R10.1-03)."""
    ident, actor = p["work_item"], d.event["actor"]
    if actor == d.worker or (d.get(WORK, ident) is None and d.get(OFFER, ident) is None):
        return
    d.note(
        "message",
        ident,
        message=p.get("message"),
        by=actor,
        text=p["text"],
        essential=bool(p.get("essential", False)),
        in_reply_to=p.get("in_reply_to"),
        resolves=p.get("resolves"),
    )


@_folds("work.reprioritized")
def _reprioritized(d: _Draft, p: dict[str, Any]) -> None:
    """R0-12, R11.3-11: a new urgency or deadline, in the terms of the remembered item and
    of this worker's offer or queue entry, so the scheduler reorders at its next sync."""
    ident, changed = p["work_item"], {"urgency": p["urgency"], "deadline": p["deadline"]}
    item: ItemRow | None = d.get(ITEM, ident)
    if item is not None:
        _set_item(d, ident, terms={**item["terms"], **changed})
    for kind in (OFFER, WORK):
        row = d.get(kind, ident)
        if row is not None:
            d.put(kind, ident, {**row, "terms": {**row["terms"], **changed}})
    if d.get(WORK, ident) is not None or d.get(OFFER, ident) is not None:
        d.note("priority", ident, by=d.event["actor"], reason=p["reason"], **changed)


@_folds("work.dependency_ended", "work.dependency_restored")
def _dependency_news(d: _Draft, p: dict[str, Any]) -> None:
    """Issue 35 §6: a dependency of this worker's offer or queued item ended cancelled or
    failed (the item cannot start until it is offered again or replaced), or came back. The
    item keeps its state (the authority's choice, docs/protocol.md "Cancel cleans up"); the
    inbox says why it waits, so the wait is never a silent one here either."""
    ident = p["work_item"]
    if d.get(WORK, ident) is None and d.get(OFFER, ident) is None:
        return
    if d.event["type"] == "work.dependency_ended":
        d.note(
            "dependency_ended",
            ident,
            dependency=p["dependency"],
            outcome=p["outcome"],
            reason=p["reason"],
        )
    else:
        d.note(
            "dependency_restored",
            ident,
            dependency=p["dependency"],
            replaced_by=p.get("replaced_by"),
        )


# --- execution under a lease (R10.2-07..11, R11.3) ---------------------------------------------


@_folds("work.started")
def _started(d: _Draft, p: dict[str, Any]) -> None:
    ident, lease = p["work_item"], p["lease"]
    _set_item(d, ident, attempts=p["attempt"])
    row: WorkRow | None = d.get(WORK, ident)
    if row is None or lease["agent"] != d.worker:
        return
    held: LeaseRow = {
        "lease_id": lease["lease_id"],
        "ownership_epoch": lease["ownership_epoch"],
        "session_epoch": lease.get("session_epoch"),
        "started_at": lease["started_at"],
        "expires_at": lease["expires_at"],
        "status": "active",
    }
    d.put(
        WORK,
        ident,
        {**row, "state": S.ACTIVE, "retry_at": None, "attempt": p["attempt"], "lease": held},
    )


def _with_lease(d: _Draft, p: dict[str, Any], **changes: Any) -> bool:
    """Change this worker's lease named by the payload; whether there was one."""
    row: WorkRow | None = d.get(WORK, p["work_item"])
    lease = row["lease"] if row else None
    if row is None or lease is None or lease["lease_id"] != p["lease_id"]:
        return False
    d.put(WORK, p["work_item"], {**row, "lease": {**lease, **changes}})
    return True


@_folds("lease.renewed")
def _lease_renewed(d: _Draft, p: dict[str, Any]) -> None:
    _with_lease(d, p, expires_at=p["expires_at"])


@_folds("lease.expired")
def _lease_expired(d: _Draft, p: dict[str, Any]) -> None:
    """R11.3-09: the lease ran out; the reassignment in the same command fences the item."""
    if _with_lease(d, p, status="expired"):
        d.note("lease_ended", p["work_item"], reason="expired", lease_id=p["lease_id"])


@_folds("lease.revoked")
def _lease_revoked(d: _Draft, p: dict[str, Any]) -> None:
    """R11.3-10: a replaced session's lease; the item waits queued, with a new start deadline."""
    row: WorkRow | None = d.get(WORK, p["work_item"])
    if row is None:
        return
    _requeue(d, p["work_item"], start_deadline=p.get("start_deadline"))
    d.note("lease_ended", p["work_item"], reason=p.get("reason"), lease_id=p["lease_id"])


@_folds("work.checkpointed")
def _checkpointed(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-08: a checkpoint releases execution and re-queues, keeping ownership; a buffered
    offline one (R11.5-12) only records where to resume."""
    ident = p["work_item"]
    _set_item(d, ident, last_checkpoint=_checkpoint(d, p))
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None and p.get("offline") is None:
        _requeue(d, ident, start_deadline=p.get("start_deadline", row["start_deadline"]))


@_folds("work.blocked")
def _blocked(d: _Draft, p: dict[str, Any]) -> None:
    ident = p["work_item"]
    _set_item(d, ident, last_checkpoint=_checkpoint(d, p))
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None:
        d.put(WORK, ident, {**row, "state": S.BLOCKED, "lease": None})


@_folds("work.unblocked")
def _unblocked(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-10: re-queued for its owner, or re-opened (the owner is fenced)."""
    ident = p["work_item"]
    row: WorkRow | None = d.get(WORK, ident)
    if row is None:
        return
    if p["to"] == S.QUEUED:
        _requeue(d, ident, start_deadline=p.get("start_deadline", row["start_deadline"]))
    else:
        _lose(d, ident, "unblocked_to_open")


@_folds("work.retry_scheduled")
def _retry_scheduled(d: _Draft, p: dict[str, Any]) -> None:
    """R11.4-08: the same owner tries again once the backoff has passed."""
    _requeue(d, p["work_item"], retry_at=p["retry_at"], start_deadline=p["start_deadline"])


@_folds("work.submitted")
def _submitted(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-11: the lease is released; the result is the reviewers' now."""
    d.drop(WORK, p["work_item"])


@_folds("work.reassigned")
def _reassigned(d: _Draft, p: dict[str, Any]) -> None:
    """R11.5-01: the owner is fenced."""
    _lose(d, p["work_item"], p["reason"])


@_folds("mission.child_created")
def _child_created(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-15: blocked while the child mission runs, ownership protected."""
    ident = p["work_item"]
    _close_offer(d, ident, "child_mission")
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None:
        d.put(WORK, ident, {**row, "state": S.BLOCKED, "lease": None})


@_folds("mission.child_failed")
def _child_failed(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-17: ``fail_parent`` fails the item; ``block_parent`` leaves it blocked."""
    if p["failure_policy"] == "fail_parent":
        _lose(d, p["work_item"], "child_failed")


@_folds("work.failed")
def _failed(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-13, R10.2-18: failed, yet remembered — a new offer may revive it (R10.2-20)."""
    _close_offer(d, p["work_item"], "failed")
    _lose(d, p["work_item"], "failed")


@_folds("work.cancelled", "work.result_accepted", "mission.child_approved")
def _ended(d: _Draft, p: dict[str, Any]) -> None:
    """Cancelled or verified: terminal (R10.2-19), so the item is forgotten."""
    ident = p["work_item"]
    reason = "cancelled" if d.event["type"] == "work.cancelled" else "verified"
    _close_offer(d, ident, reason)
    _lose(d, ident, reason)
    d.drop(ITEM, ident)


# --- memberships (wire.md §2) --------------------------------------------------------------------


@_folds("membership.granted", "membership.changed", "membership.revoked")
def _membership(d: _Draft, p: dict[str, Any]) -> None:
    if p["principal"] != d.worker:
        return
    current: MembershipRow | None = d.get(MEMBERSHIP, "")
    revoked = d.event["type"] == "membership.revoked"
    roles = (current["roles"] if current else []) if revoked else list(p["roles"])
    d.put(MEMBERSHIP, "", {"roles": roles, "epoch": p["epoch"], "active": not revoked})
    d.note("membership", None, roles=roles, epoch=p["epoch"], active=not revoked)
    if revoked:
        # wire.md §6 (R11.5-01, R11.3-07): the same command fences every item the member
        # holds queued or under a live lease; a blocked one keeps its bounded blocked lease
        for ident, row in sorted(d.rows.get(WORK, {}).items()):
            live = row["lease"] is not None and row["lease"]["status"] == "active"
            if row["state"] == S.QUEUED or (row["state"] == S.ACTIVE and live):
                _lose(d, ident, "membership_revoked")
