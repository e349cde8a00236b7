"""Mission projection rows (wire.md §4 ``GET /groups/{g}/missions/{id}``)."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from apps.ledger.projections import ModelProjection
from missionweave.protocol.missions import Mission as MissionState


class MissionStatus(models.TextChoices):
    ACTIVE = "active"
    APPROVED = "approved"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Mission(models.Model):
    """Projection of a mission's events; written only by the projector."""

    group = models.ForeignKey("registry.Group", on_delete=models.PROTECT, related_name="missions")
    mission_id = models.CharField(max_length=128)
    state = models.CharField(max_length=16, choices=MissionStatus.choices)
    goal = models.TextField()
    limits = models.JSONField(default=dict)
    used = models.JSONField(default=dict)
    parent = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001 - null is "no parent", distinct from ""
    children = models.JSONField(default=list)
    work_items = models.JSONField(default=list)
    created_by = models.CharField(max_length=160)
    created_sequence = models.PositiveBigIntegerField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "mission_id"], name="mission_once_per_group")
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
    },
)
