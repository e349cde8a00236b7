"""Open offers decided: admission control, then acceptance or a reasoned rejection
(R10.3-01..10; MWP-WRK-009).

Each open offer to this worker in its groups' queues (``queues.OfferRow``) is decided once,
when it is decidable (``intake.offer_decidable``: not expired, nobody ranked ahead still
holding it, R10.3-03). The offer event carries only the item's id, so the WorkItem the
authority serves is read for its contract and dependencies; admission (``admission.admit``,
pure) checks queue capacity, concurrency, capabilities, deadline, authorisation,
dependencies and budgets (R10.3-08). A contract whose task kind has no handler here is one
more capability refusal (``handlers.kind_of``): the worker cannot honour it (R10.3-09).

An offer admission would take waits first for the handler's essential questions, if it
declares any (``questions``): they are asked in the item's conversation and the offer is
accepted only once a coordinator or a mission owner has settled them (R10.1-02, R10.1-03).

Accepting is a commitment to schedule, not to start now (R10.3-07): the accepted item appears
in the group's work queue when the ``work.offer_accepted`` event is folded, and the runtime
discloses its schedule from there (R11.2-01). A refusal names the protocol's primary reason
and every refusal found in ``detail`` (R10.3-10), never anything of another group (R11.2-02).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime
from typing import Any

from missionweave.client.errors import ApiError

from .admission import (
    AUTHORIZATION,
    CAPABILITY,
    PRECEDENCE,
    Admission,
    AdmissionState,
    Refusal,
    admit,
)
from .authority import Authority
from .config import WorkerConfig
from .handlers import HandlerTable, kind_of
from .intake import accept_body, admission_offer, offer_decidable
from .link import Link, Offline
from .local_store import QueueStore
from .questions import QuestionDesk
from .queues import OfferRow
from .scheduler import Resources, Scheduler

log = logging.getLogger("missionweave.worker")


def _key(offer: OfferRow) -> tuple[str, str, str]:
    """Offer ids are unique per WorkItem only."""
    return (offer["group"], offer["work_item"], offer["offer"])


class OfferDesk:
    def __init__(
        self,
        *,
        config: WorkerConfig,
        store: QueueStore,
        scheduler: Scheduler,
        link: Link,
        authority: Authority,
        handlers: HandlerTable,
        slots: int,
    ) -> None:
        self.config = config
        self.store = store
        self.scheduler = scheduler
        self.link = link
        self.authority = authority
        self.handlers = handlers
        self.slots = slots
        self._decided: set[tuple[str, str, str]] = set()
        #: offers waiting for their essential questions to be settled (``questions``)
        self._held: set[tuple[str, str, str]] = set()
        self.questions = QuestionDesk(link=link, store=store, agent=authority.principal)

    def decide_all(self, now: datetime, *, closed: Collection[str] = ()) -> None:
        """Decide every decidable open offer; stop at the first sign of being offline. The
        ``closed`` groups (a revoked membership) are left alone: nothing is sent to them."""
        for group in self.config.groups:
            if group in closed:
                continue
            for offer in self.store.offers(group):
                if _key(offer) in self._decided or not offer_decidable(offer, now):
                    continue
                if _key(offer) in self._held and self.questions.unchanged(offer):
                    continue  # nothing can have settled its questions (R10.1-03)
                try:
                    self.decide(offer, now)
                except Offline:
                    return

    def decide(self, offer: OfferRow, now: datetime) -> Admission | None:
        """R10.3-08..10: accept what this worker can honour, else reject with every reason;
        the verdict (``None`` when the item could not be read, or while the handler's
        essential questions are open: ``questions``, R10.1-02, R10.1-03)."""
        group, work_item = offer["group"], offer["work_item"]
        try:
            document = self.link.read(f"/groups/{group}/work-items/{work_item}")
        except ApiError as error:
            log.warning("offer %s: cannot read %s: %s", offer["offer"], work_item, error)
            self._decided.add(_key(offer))
            return None
        verdict = self.judge(offer, document, now)
        handler = self.handlers.for_contract(document["contract"])
        if verdict.accepted and self.questions.hold(offer, document, handler, now):
            self._held.add(_key(offer))  # R10.1-02, R10.1-03: asked first, accepted once settled
            return None
        self._held.discard(_key(offer))
        try:
            if verdict.accepted:
                self.link.send(group, "work.accept_offer", accept_body(offer))
            else:
                body = verdict.reject_body(work_item=work_item, offer=offer["offer"])
                self.link.send(group, "work.reject_offer", body)
        except ApiError as error:  # expired, withdrawn or superseded meanwhile
            log.info("offer %s: %s", offer["offer"], error)
        self._decided.add(_key(offer))
        return verdict

    def judge(self, offer: OfferRow, document: dict[str, Any], now: datetime) -> Admission:
        group = offer["group"]
        state = AdmissionState(
            now=now,
            scheduler=self.scheduler,
            slots=self.slots,
            resources=Resources(slots=self.slots, amounts=dict(self.config.resources)),
            capabilities=self.config.agent_card.capabilities,
            authorized_groups=self._authorized(),
            max_queued=self.config.admission.max_queued,
            max_queued_per_group=self.config.admission.max_queued_per_group,
            dependency_states=self._dependency_states(group, document.get("depends_on") or []),
        )
        share = self.config.groups[group]
        verdict = admit(admission_offer(offer, document, now=now, group=share), state)
        extra = [*refused_execution(offer, document)]
        contract = document["contract"]
        if self.handlers.for_contract(contract) is None:
            no_handler = f"no handler for task kind {kind_of(contract)}"
            extra.append(Refusal(CAPABILITY, no_handler, "R10.3-08"))
        if not extra:
            return verdict
        refusals = sorted((*verdict.refusals, *extra), key=lambda r: PRECEDENCE.index(r.reason))
        return Admission(tuple(refusals))

    def _authorized(self) -> frozenset[str]:
        """The groups where this worker holds the worker role now (R10.3-08): the log's
        membership, else the session's."""
        session = self.authority.current_session()
        groups = set()
        for group in self.config.groups:
            member = self.store.membership(group)
            if member is not None:
                if member["active"] and "worker" in member["roles"]:
                    groups.add(group)
            elif group in session.memberships and "worker" in session.memberships[group].roles:
                groups.add(group)
        return frozenset(groups)

    def _dependency_states(self, group: str, depends_on: list[str]) -> dict[str, str]:
        """Each dependency's state, a replaced one's by its last replacement (R10.2-21: the
        authority judges the dependency by it, so admission does too)."""
        states: dict[str, str] = {}
        for dependency in depends_on:
            current, seen = dependency, {dependency}
            try:
                item = self.link.read(f"/groups/{group}/work-items/{current}")
                while item.get("replaced_by") and item["replaced_by"] not in seen:
                    current = str(item["replaced_by"])
                    seen.add(current)
                    item = self.link.read(f"/groups/{group}/work-items/{current}")
            except ApiError:
                continue  # unknown to this worker: admission says so
            states[dependency] = str(item["state"])
        return states


def refused_execution(offer: OfferRow, document: dict[str, Any]) -> list[Refusal]:
    """An offer of a revision a mission owner refused is never taken on (R10.2-06): it
    waits for a corrected contract, and the authority would refuse the acceptance."""
    refusal = document.get("refusal") or {}
    if not refusal or refusal.get("revision") != offer["revision"]:
        return []
    why = f"revision {refusal['revision']} was refused by {refusal.get('principal')}"
    return [Refusal(AUTHORIZATION, f"{why}: {refusal.get('comment')}", "R10.2-06")]
