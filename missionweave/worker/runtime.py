"""The Worker: per-group queues, the fair scheduler and isolated slots, tied to the authority
(issue 14 §6, §7; R0-01..13, R10.3-07..10, R11.1..R11.5).

Three kinds of thread, and who may touch what:

- **the event feed** (the websocket follower's thread, or the control loop itself when
  polling the REST log) folds each group's verified events into the ``QueueStore`` (its
  cursor and projection in one transaction, ``local_store``) and only *wakes* the loop;
- **slot threads** run task handlers (``slots.SlotPool``). Their callbacks send or buffer the
  preemption checkpoint (step 3 of MWP-WRK-015 must be recorded before the slot is released)
  and then only hand the outcome to the loop through a queue; the runs both share are in one
  locked table (``runs.RunTable``);
- **the control loop** owns every decision and the scheduler (which is not thread-safe): one
  ``tick`` reads the committed queues and acts.

A tick, in order:

1. reconnect if offline (``link.Link``: the buffer is reconciled first, R11.5-06); fence the
   groups whose membership was revoked (``_revoke``, wire.md §7); read the logs when polling;
2. collect the outcomes of handlers that ended, and ``finish`` them in the scheduler (slot
   time charged, R0-05);
3. **sync**: the scheduler's queue is made equal to the store's work queues
   (``mirror.QueueMirror``: gates, priority changes at once, R10.2-06, R11.3-11); a running
   item whose ownership or lease the log has fenced is told to stop (R11.5-01);
4. settle results (``settlement.py``): upload, publish and ``work.submit`` (R10.2-11,
   R13.2-02), or the owner's ``work.fail`` for a handler that raised (R10.2-13); offline, a
   finished result is kept on disk instead, and decided after reconciliation (``kept.py``,
   R11.5-06);
5. decide open offers (``offers.OfferDesk``): admission control (R10.3-08..10), then
   ``work.accept_offer`` or ``work.reject_offer`` with the structured reasons;
6. keep leases: renew before expiry (R11.3-03), rotating the slot's token (R11.3-07); when
   offline, let reversible work run into the grace period and stop the rest (R11.5-04, -05);
7. report progress at the stated cadence (R11.4-03, ``progress.py``), buffered when offline;
8. disclose the schedule of queued items on acceptance and on material change (R11.2-01),
   each disclosure about its own item only (R11.2-02) — before starting, so an item that
   starts at once was still disclosed on acceptance;
9. fill free slots from the scheduler's picks (``item_start.py``: ``work.start``, then the
   handler in a slot with the start's capability token, R11.3-06), then ask lower-priority
   running work to yield if higher-priority work waits (``contention.py``, R0-12, R0-13).

Nothing is decided from memory that the log can contradict: every tick starts from the
store's committed state, and the authority refuses whatever is stale (R11.1-03). A restart
loses only soft state (the scheduler's passes, what was disclosed, which groups were found
revoked): the queues and the results finished offline are the store's, checkpoints and kept
outputs are on disk, buffered commands in their own file.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from missionweave.client.errors import ApiError, ChainBroken, ClientError
from missionweave.client.feed import EventFeed
from missionweave.client.stream import StreamError, StreamFollower
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.schedule import DISCLOSE

from .authority import Authority
from .config import WorkerConfig
from .contention import Occupant, choose_victims
from .disclosure import Disclosed, material
from .execution import (
    TOKEN_NAME,
    Running,
)
from .handlers import HandlerTable, TaskResult
from .head_watch import HeadWatch
from .isolation import isolation_for
from .item_start import ItemStarter
from .kept import ResultShelf
from .link import Link, Offline
from .local_store import QueueStore
from .metering import BUDGET_EXCEEDED, Charger
from .mirror import QueueMirror
from .offers import OfferDesk
from .offline import Buffered, OfflineBuffer
from .outbox import Outbox
from .policies import stop_timed_out
from .preemption import request_preemption
from .presence import PresenceReporter, presence_report
from .priorities import follow_priorities
from .progress import Reported, estimate_of, progress_body, report_due
from .resources import ResourceLedger
from .resume import stored, uploader
from .runs import RunTable
from .scheduler import Scheduler, SchedulingPolicy, Share
from .settlement import Settlement
from .slots import Checkpoint, ItemRef, Outcome, SlotPool
from .stops import Stops

log = logging.getLogger("missionweave.worker")

Key = tuple[str, str]

#: how often one queued item's schedule is re-estimated for disclosure
DISCLOSE_CHECK_S = 5.0


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Worker:
    """One agent doing MissionWeave work in every group of its config."""

    def __init__(
        self,
        config: WorkerConfig,
        authority: Authority,
        *,
        handlers: HandlerTable | None = None,
        clock: Callable[[], datetime] = _utcnow,
        follow: str | None = None,
        probe_every_s: float = 1.0,
    ) -> None:
        self.config = config
        self.authority = authority
        self.principal = authority.principal
        self.handlers = handlers or HandlerTable.from_paths(
            config.handlers, search=config.python_path
        )
        self.isolation = isolation_for(config, self.handlers)  # a thread or a process per slot
        self._clock = clock
        self._follow = follow or ("stream" if config.stream_url else "poll")
        config.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._closing = threading.Event()
        self.store = QueueStore(
            config.state_dir / "queues.sqlite3", worker=self.principal, on_applied=self._applied
        )
        self.pool = SlotPool(config.slots, config.state_dir / "slots")
        #: results finished offline by this run or an earlier one, not yet submitted
        self.kept = ResultShelf(self.store, self.pool)
        #: the log's head of each group with a kept result, read once online
        #: (``settlement.Settlement.caught_up``)
        self._heads: dict[str, int] = {}
        #: groups whose membership this run saw revoked (NOT_A_MEMBER), and the ones the
        #: stream and slot threads reported, for the loop to fence (``_revoke``)
        self.revoked: set[str] = set()
        self._revocations: queue.SimpleQueue[str] = queue.SimpleQueue()
        #: groups whose history contradicts what this worker verified (``_distrust``), and
        #: the ones whose stream broke the chain, for the loop to close
        self.distrusted: set[str] = set()
        self._chain_breaks: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.buffer = OfflineBuffer(
            config.state_dir / "offline.sqlite3", key=config.private_key(), actor=self.principal
        )
        self.link = Link(
            authority,
            self.buffer,
            clock=clock,
            probe_every_s=probe_every_s,
            on_change=self._connectivity,
            on_not_member=self._not_a_member,
            on_refused=self._reconciliation_refused,
        )
        self.outbox = Outbox(
            link=self.link,
            authority=authority,
            buffer=self.buffer,
            clock=clock,
            offline_grace_s=config.leases.offline_grace_s,
        )
        #: usage, metered and stated, charged once (R11.5-12); blocks (R11.4-04, R11.5-13)
        self.charger = Charger(self.outbox)
        self.stops = Stops(self.outbox, self.charger, self.pool, wire=self._stored)
        shares = {g: Share(c.weight, c.quota) for g, c in config.groups.items()}
        self.scheduler = Scheduler(SchedulingPolicy(shares=shares))
        self.queue = QueueMirror(self.scheduler, self.store, config.groups)
        self.resources = ResourceLedger(config.resources)  # held while running (R11.1-09)
        self.feeds: dict[str, EventFeed] = {
            group: self.store.feed(authority, group)  # type: ignore[arg-type]
            for group in config.groups
        }
        self.head_watch = HeadWatch(config.head_check_s)
        self.presence = PresenceReporter(config.presence_s)  # R11.1-11
        self.offers = OfferDesk(
            config=config,
            store=self.store,
            scheduler=self.scheduler,
            link=self.link,
            authority=authority,
            handlers=self.handlers,
            slots=config.slots,
        )
        self.runs = RunTable()  # the loop and the slot callbacks share it
        self._lock = self.runs.lock  # and the feeds the stream thread reads
        self._disclosed: dict[Key, Disclosed] = {}
        self._disclose_checked: dict[Key, float] = {}
        self._ended: queue.SimpleQueue[tuple[Key, Outcome]] = queue.SimpleQueue()
        self._stream: threading.Thread | None = None
        self._closed: bool | None = None  # the result of ``shutdown``, once it ran
        #: unexpected exceptions a tick survived (logged; tests assert there are none)
        self.errors: list[BaseException] = []
        #: how runs end (step 4): submitted, failed, or kept on disk (``settlement.py``)
        self.settlement = Settlement(
            config=config,
            authority=authority,
            principal=self.principal,
            link=self.link,
            store=self.store,
            pool=self.pool,
            kept=self.kept,
            charger=self.charger,
            stops=self.stops,
            runs=self.runs,
            clock=clock,
            heads=self._heads,
            drop=self._drop,
            revoke=self._revoke,
            distrusted=self.distrusted,
        )
        #: how picked items start in free slots (step 9, ``item_start.py``)
        self.starter = ItemStarter(
            config=config,
            authority=authority,
            link=self.link,
            store=self.store,
            pool=self.pool,
            handlers=self.handlers,
            isolation=self.isolation,
            scheduler=self.scheduler,
            queue=self.queue,
            resources=self.resources,
            questions=self.offers.questions,
            kept=self.kept,
            runs=self.runs,
            kept_run=self.settlement.kept_run,
            drop=self._drop,
            on_checkpoint=self._on_checkpoint,
            requeue=self._on_requeue,
            on_done=self._on_done,
            on_block=self._on_block,
            errors=self.errors,
        )

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Open the session (R11.3-10: it fences any lease a previous run left) and start
        following the groups."""
        if not self.link.online:
            log.info("%d buffered command(s) to reconcile first (R11.5-06)", len(self.buffer))
        else:
            try:
                self.link.call(self.authority.current_session)
            except Offline:
                log.warning("starting offline: the authority does not answer")
        if self._follow == "stream" and self._stream is None:
            self._stream = threading.Thread(
                target=self._follow_stream, name="mwp-worker-stream", daemon=True
            )
            self._stream.start()

    def stop(self) -> None:
        """Ask for a clean shutdown (safe from a signal handler: it only sets flags)."""
        self._stopping.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self, until: Callable[[], bool] | None = None) -> bool:
        """Run until ``stop()`` (SIGTERM) or ``until()``; then shut down. True when clean."""
        self.start()
        try:
            while not self._stopping.is_set() and not (until is not None and until()):
                self._wake.wait(self.config.tick_s)
                self._wake.clear()
                self.tick()
        finally:
            clean = self.shutdown()
        return clean

    def shutdown(self) -> bool:
        """Stop taking work; ask every active slot to yield at its next checkpoint (which is
        sent as ``work.checkpoint``, releasing the lease, R10.2-08); keep ticking so results
        are submitted and leases renewed meanwhile; then flush and close. True when every
        slot stopped within ``shutdown_timeout_s`` (a handler that never checkpoints keeps its
        thread: the caller must then exit the process; its lease expires on the authority).
        A finished result that could not be submitted (offline) is kept on disk for the next
        run (``kept.py``)."""
        if self._closed is not None:
            return self._closed
        self._stopping.set()
        deadline = time.monotonic() + self.config.shutdown_timeout_s
        for run in self._snapshot():
            if run.slot is not None and run.yielding is None:
                self._yield(run, "shutdown")
        while True:
            self.tick()
            busy = [run for run in self._snapshot() if run.slot is not None]
            pending = [run for run in self._snapshot() if run.result or run.failure]
            if not busy and (not pending or not self.link.online):
                break
            if time.monotonic() > deadline:
                break
            self._wake.wait(self.config.tick_s)
            self._wake.clear()
        clean = not any(run.slot is not None for run in self._snapshot())
        self._keep_pending()  # what could not be submitted survives the exit (kept.py)
        if not self.link.online:
            self.link.reconnect()
        self._closing.set()
        if self._stream is not None:
            self._stream.join(timeout=5)
        if clean:
            self.pool.close()
            self.store.close()
            self.buffer.close()
        self._closed = clean
        return clean

    # --- one tick --------------------------------------------------------------------------

    def tick(self) -> None:
        try:
            self._tick(self._clock())
        except Exception as error:  # a tick must not kill the worker; it is recorded
            log.exception("worker tick failed")
            self.errors.append(error)

    def _tick(self, now: datetime) -> None:
        if not self.link.online:
            self.link.reconnect()
        self._note_revocations()
        if self._follow == "poll":
            self._catch_up()
        if self.link.online:
            self.head_watch.check(now, self.feeds, self.link.call)
            capacity = presence_report(self.pool.max_concurrency, self.pool.free, self.resources)
            self.presence.check(now, capacity, self.authority.report_presence, self.link.call)
        self._distrust()
        self._collect()
        self._sync(now)
        self._settle()
        taking = self.link.online and not self._stopping.is_set()
        if taking:
            self.offers.decide_all(now, closed=self.closed_groups)
        self._keep_leases(now)
        stop_timed_out(self._snapshot(), now)  # R10.1-01(h): the contract's timeout
        self._report(now)
        if taking:
            self._disclose(now)  # before the start: "on acceptance" even for a free slot
            self._fill(now)
            self._contend(now)

    def _snapshot(self) -> list[Running]:
        return self.runs.snapshot()

    # --- 1. events -------------------------------------------------------------------------

    def _applied(self, group: str, event: dict[str, Any], changes: object) -> None:
        self._wake.set()

    def _catch_up(self) -> None:
        for group, feed in list(self.feeds.items()):
            if group in self.distrusted:
                continue  # its chain broke: read no more of it (R16-03)
            try:
                self.link.call(feed.catch_up)
            except Offline:
                return
            except ChainBroken as error:  # R16-03: nothing past it is applied; said loudly
                log.error("group %s: %s", group, error)
                self._chain_breaks.put(group)
            except ApiError as error:
                if error.code == "NOT_A_MEMBER":  # as the stream's ERROR frame (wire.md §7)
                    self._revoke(group, "its events are refused: NOT_A_MEMBER")
                else:
                    log.warning("group %s: cannot read its events: %s", group, error)

    def _follow_stream(self) -> None:
        """The websocket stream for every group (reconnects from the durable cursors,
        R16-09); a revoked membership drops that group's feed only (wire.md §7), and the
        loop fences its work (``_revoke``)."""
        assert self.config.stream_url is not None
        with self._lock:
            feeds = list(self.feeds.values())
        while not self._closing.is_set() and feeds:
            follower = StreamFollower(
                self.authority,  # type: ignore[arg-type]
                self.config.stream_url,
                feeds,
                reconnect_delay_s=0.5,
            )
            try:
                follower.run(until=self._closing.is_set, timeout_s=3600)
            except TimeoutError:
                continue
            except StreamError as error:
                if error.code == "NOT_A_MEMBER" and isinstance(error.group, str):
                    feeds = [feed for feed in feeds if feed.group != error.group]
                    self._not_a_member(error.group)
                log.warning("stream: %s", error)
            except ChainBroken as error:
                # R16-03: nothing past the break is applied. One connection carries every
                # group, so the broken one leaves it, or no other group would get an event
                if error.group is not None:
                    feeds = [feed for feed in feeds if feed.group != error.group]
                    self._chain_breaks.put(error.group)
                    self._wake.set()
                log.error("stream: %s", error)
            except (ClientError, OSError) as error:
                log.warning("stream lost: %s", error)
            with self._lock:  # a group revoked or distrusted meanwhile is not resubscribed
                feeds = [
                    feed
                    for feed in feeds
                    if feed.group in self.feeds and feed.group not in self.distrusted
                ]
            self._closing.wait(1.0)

    def _connectivity(self, online: bool) -> None:
        for run in self._snapshot():
            run.progress._set_online(online)
        if not online:
            self._heads.clear()  # the log moves on meanwhile: read its head again after
        self._wake.set()

    def _not_a_member(self, group: str) -> None:
        """Any thread: the authority answered NOT_A_MEMBER for ``group``; the loop fences."""
        self._revocations.put(group)
        self._wake.set()

    def _note_revocations(self) -> None:
        while True:
            try:
                group = self._revocations.get_nowait()
            except queue.Empty:
                return
            self._revoke(group, "the authority answers NOT_A_MEMBER")

    def _revoke(self, group: str, why: str) -> None:
        """The membership in ``group`` is gone: that group only is dropped, at once.

        A revocation fences, in the same command, every item the member holds queued or
        under a live lease (wire.md §6, protocol.md §2; R11.5-01, R11.3-07), and the stream
        ends with NOT_A_MEMBER (wire.md §7) — so the ``membership.revoked`` event itself may
        never reach this worker, and its projection cannot be waited for. Locally, then: its
        feed is no longer read, its queued items leave the scheduler (``QueueMirror.sync``),
        its offers are not decided, its running items stop at their next checkpoint without
        sending anything (``_lose``), its kept results are discarded, and no command goes to
        it. The other groups are untouched (R0-01). For the rest of this run: a later grant
        is picked up by the next one."""
        if group in self.revoked or group not in self.config.groups:
            return
        log.warning("group %s: membership revoked (%s): its feed and work are dropped", group, why)
        self.revoked.add(group)
        with self._lock:
            self.feeds.pop(group, None)
        for run in self._snapshot():
            if run.group == group and not run.lost:
                self._lose(run, "membership revoked")
        for key in [key for key in self.kept.kept if key[0] == group]:
            self.kept.discard(key, "the membership in its group was revoked")

    @property
    def closed_groups(self) -> set[str]:
        """Groups this worker takes and starts nothing in: revoked or distrusted."""
        return self.revoked | self.distrusted

    def _distrust(self) -> None:
        """Issue 33 §2, R16-03: a group whose history contradicts what this worker verified
        (a signed head it kept, or the chain its stream delivered) is closed as a revoked
        one is — off the stream, no offer decided, nothing of its queue started, its running
        items stopped at their next checkpoint with nothing sent — because that queue was
        built from the history the worker can no longer trust. (A demo database reset under
        a running worker had it retry a start every second, for good, against a WorkItem the
        new history does not have, and the broken group's stream starved the others.) Its
        kept results stay on disk: an operator who restores the log may want them. The
        other groups are untouched (R0-01)."""
        broken = set(self.head_watch.forked)
        while True:
            try:
                broken.add(self._chain_breaks.get_nowait())
            except queue.Empty:
                break
        for group in sorted(broken - self.distrusted):
            with self._lock:
                self.distrusted.add(group)
            log.warning("group %s: its history is not trusted: no more work taken there", group)
            for run in self._snapshot():
                if run.group == group and not run.lost:
                    self._lose(run, "its group's history contradicts what this worker verified")

    # --- 2. outcomes -----------------------------------------------------------------------

    def _collect(self) -> None:
        while True:
            try:
                key, outcome = self._ended.get_nowait()
            except queue.Empty:
                return
            run = self.runs.get(key)
            if run is None:
                continue
            self.scheduler.finish(run.group, run.work_item, used_seconds=run.used_seconds())
            self.resources.release(key)
            run.slot = None
            if outcome.kind in ("preempted", "blocked") or run.lost:
                # the checkpoint was recorded (step 3) or the block sent (R11.4-04); the log
                # puts the item back in its group queue (step 5, or ``work.unblocked``), from
                # where it resumes in a new slot
                self._drop(key)
            elif outcome.checkpoint is not None:
                # stopped at its checkpoint, but recording it failed: no failure to report;
                # the lease runs out and the local checkpoint is where it resumes (R11.5-01)
                log.error("checkpoint of %s not recorded: %s", run.work_item, outcome.error)
                self._drop(key)
            elif outcome.kind == "finished" and isinstance(outcome.result, TaskResult):
                run.result = outcome.result
            else:
                run.failure = outcome.error or TypeError("the handler returned no TaskResult")

    def _drop(self, key: Key) -> None:
        self.runs.pop(key)
        self.starter.forget(key)
        self.kept.forget(key)  # submitted, failed or fenced: nothing is left to submit

    # --- 3. the store's queues into the scheduler -------------------------------------------

    def _sync(self, now: datetime) -> None:
        running = self.runs.keys()
        self.queue.sync(now, running=running, closed=self.closed_groups)
        follow_priorities(self._snapshot(), self.store)  # R0-12: running work's urgency too
        owned = set(self.queue.items) | running
        for forget in (self._disclosed, self._disclose_checked):
            for key in [k for k in forget if k not in owned and not self.store.owned(*k)]:
                forget.pop(key, None)
        self._fence()

    def _fence(self) -> None:
        """A running item the log no longer gives this worker (reassigned, revoked, its
        lease ended) stops at its next checkpoint; nothing of it is sent (R11.5-01)."""
        for run in self._snapshot():
            row = self.store.owned(run.group, run.work_item)
            lease = row["lease"] if row else None
            if lease is not None and lease["lease_id"] == run.lease_id:
                run.seen_active = True
                run.lease_expires_at = max(
                    run.lease_expires_at, parse_timestamp(lease["expires_at"])
                )
            gone = row is None or row["ownership_epoch"] != run.ownership_epoch
            if run.seen_active and (
                lease is None or lease["lease_id"] != run.lease_id or lease["status"] != "active"
            ):
                gone = True
            if gone and not run.lost and run.yielding is None:
                self._lose(run, "fenced by the log")

    def _lose(self, run: Running, why: str) -> None:
        log.warning("%s/%s is no longer ours: %s", run.group, run.work_item, why)
        run.lost = True
        if run.slot is not None:
            self._yield(run, "lost")
        else:
            self._drop(run.key)

    # --- 4. results --------------------------------------------------------------------------

    def _settle(self) -> None:
        self.settlement.settle()

    def _keep_pending(self) -> None:
        self.settlement.keep_pending()

    # --- 6. leases -------------------------------------------------------------------------

    def _keep_leases(self, now: datetime) -> None:
        for run in self._snapshot():
            if run.lost:
                continue
            if self.link.online:
                left = (run.lease_expires_at - now).total_seconds()
                if left < self.config.leases.renew_fraction * run.lease_length_s:
                    self._renew(run, now)
            elif run.slot is not None and run.yielding is None:
                # R11.5-04/05: only reversible work goes on, and only into half the grace
                # period, leaving the other half to reach a checkpoint that can be buffered
                grace = timedelta(seconds=self.config.leases.offline_grace_s / 2)
                if not run.reversible or now >= run.lease_expires_at + grace:
                    self._yield(run, "offline")

    def _renew(self, run: Running, now: datetime) -> None:
        body: dict[str, Any] = {"work_item": run.work_item, "lease_id": run.lease_id}
        if self.config.leases.ttl_s is not None:
            body["lease_ttl_s"] = self.config.leases.ttl_s
        try:
            result = self.link.send(run.group, "lease.renew", body).body["result"]
        except Offline:
            return
        except ApiError as error:
            self._lose(run, f"lease.renew refused: {error.code}")
            return
        run.lease_started_at = now
        run.lease_expires_at = parse_timestamp(result["lease"]["expires_at"])
        tokens = result.get("capability_tokens") or []
        slot = run.slot
        if tokens and slot is not None:
            slot.rotate_token(TOKEN_NAME, str(tokens[0]["token"]))  # R11.3-07, R11.3-08

    # --- 7. progress -------------------------------------------------------------------------

    def _report(self, now: datetime) -> None:
        for run in self._snapshot():
            if run.slot is None or run.lost:
                continue
            state = run.progress.state
            estimate = estimate_of(
                state, started_at=run.started_at, expected_s=run.expected_s, now=now
            )
            if report_due(run.reported, state, estimate, now, self.config.progress) is None:
                continue
            body = progress_body(
                work_item=run.work_item, lease_id=run.lease_id, state=state, estimate=estimate
            )
            self.charger.carry(run, "work.progress", body)  # and the usage, R11.5-08
            run.reported = Reported(now, state, estimate)

    def _charge(self, run: Running) -> bool:
        """What the item used since the last charge, metered and stated (R11.5-12): online as
        ``work.usage``, offline in a buffered report's binding (R11.5-08). False once a charge
        was refused (R11.5-13): the item stops (``metering.py``)."""
        return self.charger.charge(run)

    def _send_or_buffer(self, run: Running, type_: str, body: dict[str, Any]) -> bool:
        """Send now, or buffer signed while offline (R11.5-04, ``outbox.py``)."""
        return self.outbox.send_or_buffer(run, type_, body)

    def _reconciliation_refused(self, entry: Buffered, refusal: ApiError) -> None:
        """A buffered command the authority refused on reconciliation: an overflowing budget
        (R11.5-13) stops the item as an online refusal does, when it still runs here."""
        if refusal.code != BUDGET_EXCEEDED:
            return
        run = self.runs.get((entry.group, str(entry.body.get("work_item"))))
        if run is not None and not run.lost:
            self.charger.stop_for_budget(run, refusal, entry.binding.get("usage"))

    # --- 9. slots ----------------------------------------------------------------------------

    def _fill(self, now: datetime) -> None:
        self.starter.fill(now)

    def _contend(self, now: datetime) -> None:
        """R0-12, R0-13 step 1: higher-priority queued work asks lower-priority running work
        to yield at its next checkpoint (``contention.py`` says who)."""
        if self.pool.free > 0 or not self.queue.items:
            return
        runs = {run.key: run for run in self._snapshot() if run.slot is not None and not run.lost}
        occupants = [
            Occupant(
                run.group,
                run.work_item,
                run.urgency,
                run.org_priority_class,
                run.started_at,
                run.yielding is not None,
            )
            for run in runs.values()
        ]
        for victim in choose_victims(self.queue.items.values(), occupants, now=now):
            self._yield(runs[(victim.group, victim.work_item)], "priority")

    def _yield(self, run: Running, why: str) -> None:
        slot = run.slot
        if slot is None:
            return
        run.yielding = why
        log.info("%s/%s asked to yield (%s)", run.group, run.work_item, why)
        request_preemption(slot)

    # slot threads: record the checkpoint (step 3), then hand over to the loop

    def _on_checkpoint(self, item: ItemRef, checkpoint: Any) -> None:
        run = self.runs.get((item.group, item.work_item))
        if run is None or run.lost:
            return  # fenced: the local checkpoint stays for whoever resumes it here
        # the handler has stopped: the lease this releases is not a loss (``_fence``), even
        # when the handler asked for it itself (``ctx.checkpoint(..., release=True)``)
        run.yielding = run.yielding or "checkpoint"
        if self.link.online and not self._charge(run):
            # its charge refused (R11.5-13): recorded as a block at this checkpoint, so the
            # item waits for its budget instead of returning to the queue (``stops.py``)
            self.stops.block(run, checkpoint, run.stop_for or "")
            return
        body = {
            "work_item": run.work_item,
            "lease_id": run.lease_id,
            # the state goes first, as an artifact the next owner can restore (resume.py)
            "checkpoint": self._stored(run, checkpoint),
        }
        run.lost = True  # this checkpoint releases the lease: no progress or renewal after it
        self.charger.carry(run, "work.checkpoint", body)  # offline: with its usage

    def _stored(self, run: Running, checkpoint: Checkpoint) -> dict[str, Any]:
        """A checkpoint as the wire carries it, its state stored first (``resume.py``)."""
        return stored(checkpoint, run.contract, uploader(self.link, self.authority))

    def _on_block(self, item: ItemRef, checkpoint: Checkpoint | None, resolution: str) -> None:
        """Slot thread, the slot still held: ``work.block`` (R11.4-04, ``stops.py``)."""
        run = self.runs.get((item.group, item.work_item))
        if run is not None and not run.lost:
            self.stops.block(run, checkpoint, resolution)

    def _on_requeue(self, item: ItemRef, checkpoint_ref: str) -> None:
        self._wake.set()  # step 5 happens in the log: the checkpoint re-queued the item

    def _on_done(self, item: ItemRef, outcome: Outcome) -> None:
        self._ended.put(((item.group, item.work_item), outcome))
        self._wake.set()

    # --- 8. disclosure -----------------------------------------------------------------------

    def _disclose(self, now: datetime) -> None:
        """R11.2-01: on acceptance (first sight in the queue, or a new ownership epoch) and on
        material change. The body is the item's own estimate only (R11.2-02)."""
        clock = time.monotonic()
        for key, item in list(self.queue.items.items()):
            last = self._disclosed.get(key)
            if last is not None and clock - self._disclose_checked.get(key, 0.0) < DISCLOSE_CHECK_S:
                continue
            self._disclose_checked[key] = clock
            row = self.store.owned(*key)
            if row is None:
                continue
            epoch = row["ownership_epoch"]
            started = time.perf_counter()
            estimate = self.scheduler.position_estimate(
                item, now=now, slots=self.pool.max_concurrency
            )
            if not material(last, estimate, ownership_epoch=epoch, now=now):
                continue
            body = estimate.disclosure(work_item=item.work_item, ownership_epoch=epoch)
            # wire.md §9: how long working out the estimate took (what the dashboard shows)
            body["compute_seconds"] = round(time.perf_counter() - started, 6)
            try:
                self.link.send(item.group, DISCLOSE, body)
            except Offline:
                return
            except ApiError as error:
                log.info("schedule of %s not disclosed: %s", item.work_item, error)
            self._disclosed[key] = (
                last.after(epoch, estimate, body) if last else Disclosed(epoch, estimate, body)
            )
