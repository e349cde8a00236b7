"""Opening an agent session, which revokes its execution leases (R11.3-10, wire.md §5).

The session is the registry's (:func:`apps.registry.services.session_issue`) and the leases
are this app's, so a session is opened here, in the app that may import both. ``POST
/sessions`` first commits the new session epoch, then — before it answers — visits every group
the agent belongs to and, under that group's lock, revokes each active lease held under an
older session: ``lease.revoked`` appended through the one write path, the WorkItem back in
``queued`` for the new runtime to start with a fresh lease.

Why two phases rather than one transaction: the write path re-reads the agent's session epoch
under the group lock (step 6 of wire.md §3). A command of the old session that takes the lock
after the new epoch committed is refused ``STALE_SESSION``; one that took it before has
committed its lease by the time this visit gets the lock, and the visit (selecting under the
lock) revokes it. Holding the agent row while locking groups would instead deadlock against a
command that holds a group lock and reads the agent.
"""

from __future__ import annotations

from apps.ledger.write_path import AuthorityCommand, Outcome, submit_authority_batch
from apps.registry.models import Membership
from apps.registry.services import OpenedSession, session_issue
from missionweave.protocol.identifiers import agent_principal
from missionweave.protocol.work.items import WorkItem as WorkItemState
from missionweave.protocol.work.leases import REVOKE, revoke_command_id

from .models import WorkItem


def session_open(*, body: object) -> OpenedSession:
    """``POST /sessions`` (wire.md §5): a signed body opens a session at epoch + 1.

    The previous token stops working at once, and the agent's execution leases are revoked
    and their WorkItems re-queued before the answer (R11.3-10), so the new runtime never
    hears of its session while the old one's leases still stand.
    """
    opened = session_issue(body=body)
    revoke_replaced_leases(opened.session.agent_id, opened.session.epoch)
    return opened


def revoke_replaced_leases(agent_id: str, session_epoch: int) -> list[Outcome]:
    """Revoke every active lease of ``agent:<agent_id>`` from a session older than
    ``session_epoch``; returns the accepted revocations (replays included)."""
    principal = agent_principal(agent_id)
    groups = Membership.objects.filter(principal=principal).values_list("group_id", flat=True)
    revoked: list[Outcome] = []
    for group_id in sorted(groups):

        def select(group_id: str = group_id) -> list[AuthorityCommand]:
            rows = WorkItem.objects.filter(group_id=group_id, lease_holder=principal)
            commands = []
            for row in rows:
                lease = WorkItemState.from_dict(row.data).lease
                if lease is None or lease.status != "active":
                    continue
                if lease.session_epoch is not None and lease.session_epoch >= session_epoch:
                    continue
                body = {
                    "work_item": row.work_item_id,
                    "lease_id": lease.lease_id,
                    "session_epoch": session_epoch,
                }
                commands.append(
                    AuthorityCommand(REVOKE, body, revoke_command_id(lease.lease_id, session_epoch))
                )
            return commands

        outcomes = submit_authority_batch(group_id=group_id, select=select)
        revoked.extend(outcome for outcome in outcomes if isinstance(outcome, Outcome))
    return revoked
