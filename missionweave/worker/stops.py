"""Items that stop here for a person: blocked by their handler (``ctx.block``) or for a budget
the authority refused (R11.4-04, R11.4-05, R11.5-13).

``block`` is the runtime's side of ``blocking.py``: called from the slot thread while the slot
is still held, it charges what the item used up to its checkpoint (under the lease the block
releases), then sends ``work.block`` with the required resolution and the checkpoint. From
then on nothing is sent under the run's lease (``Running.lost``): no renewal, no progress —
the item waits under the authority's bounded blocked lease (R11.4-05) — and the loop drops the
run when the slot reports its end, so the slot takes other work at once. ``work.unblocked`` to
``queued`` (R10.2-10) folds the item back into this worker's queue (``queues.py``), and the
scheduler starts it again; its handler resumes from the checkpoint.

``block_finished``: a handler that returned (or raised) after its charge was refused is not
submitted or failed — its cost is not on record — but blocked the same way, citing the item's
last checkpoint.

Offline, ``work.block`` cannot be buffered (R11.5-04 names progress and checkpoints): the
block's checkpoint is buffered instead, exactly as for a preemption. On reconciliation it is
sent again online, which releases the lease and queues the item (R10.2-08); its handler meets
its blocker again when restarted, online, and the block is sent then. A handler that returned
while its budget was refused waits, offline, until the block can be sent.

A block with no checkpoint at all (a handler that never checkpointed) cites ``start_over``:
ref ``<item>/e<epoch>/c0`` over the empty state, so the item resumes from its beginning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from missionweave.client.errors import ApiError
from missionweave.protocol.canonical import digest

from .execution import Running
from .link import Offline
from .metering import Charger
from .outbox import Outbox
from .slots import Checkpoint, SlotPool

log = logging.getLogger("missionweave.worker")


def start_over(run: Running) -> dict[str, Any]:
    """The ``checkpoint`` of a block before any checkpoint: the item's beginning."""
    return {
        "ref": f"{run.work_item}/e{run.ownership_epoch}/c0",
        "state_digest": digest({}),
        "artifacts": [],
    }


#: a checkpoint as ``work.block`` carries it (the runtime stores its state first, ``resume.py``)
Wire = Callable[[Running, Checkpoint], dict[str, Any]]


def plain_wire(run: Running, checkpoint: Checkpoint) -> dict[str, Any]:
    return checkpoint.wire()


class Stops:
    def __init__(
        self, outbox: Outbox, charger: Charger, pool: SlotPool, *, wire: Wire = plain_wire
    ) -> None:
        self.outbox = outbox
        self.charger = charger
        self.pool = pool
        self._wire = wire

    def block(self, run: Running, checkpoint: Checkpoint | None, resolution: str) -> None:
        """R11.4-04: ``work.block`` for ``run`` at ``checkpoint``. Afterwards the run is done
        here whatever the answer: blocked, its checkpoint buffered (offline), or refused (the
        item was fenced, reassigned or ended meanwhile)."""
        run.yielding = "blocked"  # the log's blocked row is this block, not a fence (``_fence``)
        if self.outbox.online:
            self.charger.charge(run)  # up to the checkpoint, under the lease the block releases
        if run.stop_for is not None and run.stop_for not in resolution:
            resolution = f"{resolution} {run.stop_for}"
        wire = self._wire(run, checkpoint) if checkpoint is not None else start_over(run)
        owner = {"work_item": run.work_item, "lease_id": run.lease_id}
        body = {**owner, "required_resolution": resolution, "checkpoint": wire}
        try:
            self.outbox.send(run, "work.block", body)
        except Offline:  # its checkpoint instead, with the usage due (module doc)
            if not self.charger.carry(run, "work.checkpoint", {**owner, "checkpoint": wire}):
                log.warning("block of %s neither sent nor buffered: its lease runs out", run.key)
            run.lost = True
            return
        except ApiError as error:
            # fenced, reassigned, cancelled: the item is not this run's to block any more
            log.warning("block of %s refused: %s", run.work_item, error)
            run.lost = True
            return
        if run.refused:
            log.warning("%s blocked; used but not charged: %s", run.work_item, run.refused)
        log.info("%s/%s blocked: %s", run.group, run.work_item, resolution)
        run.lost = True

    def block_finished(self, run: Running) -> bool:
        """A handler that ended after its budget was refused: blocked at its last checkpoint
        (or the one it resumed from) instead of submitted; False while it cannot be sent
        (offline: tried again)."""
        if not self.outbox.online:
            return False
        latest = self.pool.checkpoints(run.group, run.work_item).latest() or run.resumed_from
        assert run.stop_for is not None
        self.block(run, latest, run.stop_for)
        return True
