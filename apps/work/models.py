"""Projection rows of the work domain: Missions, WorkItems, proposals, the dependency graph,
context packages.

Each row holds its aggregate of the pure core; a few columns are copied out so the dashboard
and the API can filter without reading JSON. Only the projector writes them.

One table is not a projection: :class:`SweepRun`, when the sweep last finished (``/readyz``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from django.db import models
from django.db.models import F, JSONField, Value
from django.db.models.functions import Now

from apps.ledger.projections import ModelProjection, ProjectionJSONDecoder
from missionweave.protocol.context import ContextPackage as ContextPackageState
from missionweave.protocol.missions.model import Mission as MissionState
from missionweave.protocol.missions.model import usage_series_of
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.dependencies import DependencyGraph
from missionweave.protocol.work.items import WorkItem as WorkItemState
from missionweave.protocol.work.proposals import Proposal


class MissionStatus(models.TextChoices):
    ACTIVE = "active"
    APPROVED = "approved"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Mission(models.Model):
    """Projection of a mission's events; written only by the projector."""

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="missions", db_index=False
    )
    mission_id = models.CharField(max_length=128)
    state = models.CharField(max_length=16, choices=MissionStatus.choices)
    goal = models.TextField()
    limits = models.JSONField(decoder=ProjectionJSONDecoder, default=dict)
    used = models.JSONField(decoder=ProjectionJSONDecoder, default=dict)
    # null is "no parent", distinct from any id
    parent = models.CharField(max_length=260, null=True, blank=True)  # noqa: DJ001
    children = models.JSONField(decoder=ProjectionJSONDecoder, default=list)
    work_items = models.JSONField(decoder=ProjectionJSONDecoder, default=list)
    created_by = models.CharField(max_length=160)
    created_sequence = models.PositiveBigIntegerField()
    link = models.JSONField(decoder=ProjectionJSONDecoder, null=True, blank=True)
    #: ``used`` over time, bounded: [[sequence, recorded_at, {dimension: used}], ...]
    usage_series = models.JSONField(decoder=ProjectionJSONDecoder, default=list)
    #: ``mission.changes_requested``, oldest first (issue 36 §5, ``missions.changes``)
    #: ``db_default``: rows written by plain SQL that predates the column get ``[]`` too —
    #: the write path's frozen floor (benchmarks/pgbench/write_path_statements.sql, issue 38)
    change_requests = models.JSONField(
        decoder=ProjectionJSONDecoder, default=list, db_default=Value([], output_field=JSONField())
    )

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "mission_id"], name="mission_once_per_group")
        ]
        #: the dashboard's mission list pages newest first, by state or by creator (issue 13)
        indexes: ClassVar = [
            models.Index(fields=["group", "created_sequence"], name="mission_group_newest"),
            models.Index(fields=["group", "state", "created_sequence"], name="mission_group_state"),
            models.Index(fields=["group", "created_by"], name="mission_group_creator"),
        ]

    def __str__(self) -> str:
        return f"{self.group_id}/{self.mission_id}"

    def to_state(self) -> MissionState:
        return MissionState(
            id=self.mission_id,
            state=self.state,
            goal=self.goal,
            limits=dict(self.limits),
            used=dict(self.used),
            parent=self.parent,
            children=tuple(self.children),
            work_items=tuple(self.work_items),
            created_by=self.created_by,
            created_sequence=self.created_sequence,
            link=self.link,
            usage_series=usage_series_of(self.usage_series),
            change_requests=tuple(self.change_requests),
        )

    projection: ClassVar[ModelProjection]


Mission.projection = ModelProjection(
    model=Mission,
    id_field="mission_id",
    to_state=Mission.to_state,
    to_fields=lambda state: {
        "state": state.state,
        "goal": state.goal,
        "limits": state.limits,
        "used": state.used,
        "parent": state.parent,
        "children": list(state.children),
        "work_items": list(state.work_items),
        "created_by": state.created_by,
        "created_sequence": state.created_sequence,
        "link": state.link,
        "usage_series": [
            [sequence, recorded_at, used] for sequence, recorded_at, used in state.usage_series
        ],
        "change_requests": [dict(request) for request in state.change_requests],
    },
)


class WorkItem(models.Model):
    """Projection of a WorkItem (wire.md §4 ``GET /groups/{g}/work-items/{id}``)."""

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="work_items", db_index=False
    )
    work_item_id = models.CharField(max_length=128)
    mission = models.CharField(max_length=128)
    state = models.CharField(max_length=16)
    owner = models.CharField(max_length=160, blank=True, default="")
    ownership_epoch = models.PositiveIntegerField(default=0)
    #: the agent holding an active execution lease ("" for none): session replacement
    #: revokes that agent's leases (R11.3-10)
    lease_holder = models.CharField(max_length=160, blank=True, default="")
    #: when the authority must act on the item, and why (``WorkItem.due()`` of the core): the
    #: Celery sweeps select on this indexed column (R11.5-01)
    due_at = models.DateTimeField(null=True, blank=True)
    due_reason = models.CharField(max_length=32, blank=True, default="")
    #: the contract's requested urgency and goal, as columns the dashboard's WorkItem list
    #: filters and searches on (issue 13); the contract in ``data`` stays the truth
    urgency = models.CharField(max_length=16, blank=True, default="")
    title = models.TextField(blank=True, default="")
    data = models.JSONField(decoder=ProjectionJSONDecoder)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["group", "work_item_id"], name="work_item_once_per_group"
            )
        ]
        indexes: ClassVar = [
            models.Index(fields=["group", "mission"]),
            # the WorkItem list pages in authorisation order, filtered by state, owner, urgency
            models.Index(fields=["group", "state", "id"], name="work_item_group_state"),
            models.Index(fields=["group", "id"], name="work_item_group_order"),
            models.Index(fields=["group", "owner"], name="work_item_group_owner"),
            models.Index(fields=["group", "urgency"], name="work_item_group_urgency"),
            models.Index(
                fields=["due_at"], name="work_item_due", condition=models.Q(due_at__isnull=False)
            ),
            models.Index(
                fields=["lease_holder"],
                name="work_item_lease_holder",
                condition=~models.Q(lease_holder=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group_id}/{self.work_item_id} ({self.state})"

    def to_state(self) -> WorkItemState:
        return WorkItemState.from_dict(self.data)

    projection: ClassVar[ModelProjection]


def _work_item_fields(state: WorkItemState) -> dict[str, Any]:
    due = state.due()
    lease = state.lease
    return {
        "mission": state.mission,
        "state": state.state,
        "owner": state.owner or "",
        "ownership_epoch": state.ownership_epoch,
        "lease_holder": lease.agent if lease is not None and lease.status == "active" else "",
        "due_at": parse_timestamp(due[0]) if due is not None else None,
        "due_reason": due[1] if due is not None else "",
        "urgency": str(state.contract.get("urgency") or ""),
        "title": str(state.contract.get("goal") or ""),
        "data": state.as_dict(),
    }


WorkItem.projection = ModelProjection(
    model=WorkItem, id_field="work_item_id", to_state=WorkItem.to_state, to_fields=_work_item_fields
)


class WorkProposal(models.Model):
    """Projection of an open work proposal (R10.2-01)."""

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="proposals", db_index=False
    )
    proposal_id = models.CharField(max_length=128)
    data = models.JSONField(decoder=ProjectionJSONDecoder)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "proposal_id"], name="proposal_once_per_group")
        ]

    def __str__(self) -> str:
        return f"{self.group_id}/{self.proposal_id}"

    projection: ClassVar[ModelProjection]


def _stored_as_data(model: type[models.Model], id_field: str, state_type: Any) -> ModelProjection:
    """A projection whose row keeps the whole aggregate in its ``data`` column."""
    return ModelProjection(
        model=model,
        id_field=id_field,
        to_state=lambda row: state_type.from_dict(row.data),
        to_fields=lambda state: {"data": state.as_dict()},
    )


WorkProposal.projection = _stored_as_data(WorkProposal, "proposal_id", Proposal)


class DependencyEdges(models.Model):
    """Projection of a group's dependency graph, read to refuse cycles (R10.4-04)."""

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    name = models.CharField(max_length=32)
    data = models.JSONField(decoder=ProjectionJSONDecoder)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "name"], name="one_graph_per_group")
        ]

    def __str__(self) -> str:
        return f"{self.group_id} dependency graph"

    projection: ClassVar[ModelProjection]


DependencyEdges.projection = _stored_as_data(DependencyEdges, "name", DependencyGraph)


class ContextPackage(models.Model):
    """Projection of a context package published in, or forwarded to, a group (R13.3-01)."""

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    #: the package id, or ``<from_group>/<id>`` for one received from another group
    package_id = models.CharField(max_length=300)
    data = models.JSONField(decoder=ProjectionJSONDecoder)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["group", "package_id"], name="context_package_once_per_group"
            )
        ]

    def __str__(self) -> str:
        return f"{self.group_id}/{self.package_id}"

    projection: ClassVar[ModelProjection]


ContextPackage.projection = _stored_as_data(ContextPackage, "package_id", ContextPackageState)


#: the ``SweepRun`` row of the due-work sweep (named after its ``CELERY_BEAT_SCHEDULE`` entry)
DUE_WORK_SWEEP = "sweep-due-work"


class SweepRun(models.Model):
    """When a beat-driven task last finished, for ``/readyz`` and ``/metrics`` (issue 15 §7).

    Operational state, like the stream's cursors: no event records it and no replay rebuilds
    it, and it says nothing about any group. One row per task, so any number of workers,
    beats and web processes share it; it is stamped with the database clock, which is also
    the clock its age is read with, so no host's clock skew enters the answer.
    """

    task = models.CharField(max_length=100, primary_key=True)
    finished_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.task} finished at {self.finished_at}"

    @classmethod
    def record(cls, task: str) -> None:
        """Stamp ``task`` as finished now: a plain UPDATE, and the row's INSERT the first
        time (``get_or_create`` settles two first runs racing to insert it)."""
        if not cls.objects.filter(task=task).update(finished_at=Now()):
            cls.objects.get_or_create(task=task, defaults={"finished_at": Now()})

    @classmethod
    def age(cls, task: str) -> timedelta | None:
        """How long ago ``task`` last finished, by the database clock (``None``: never)."""
        return (
            cls.objects.filter(task=task)
            .annotate(age=Now() - F("finished_at"))
            .values_list("age", flat=True)
            .first()
        )
