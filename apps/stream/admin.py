"""ACK cursors in Django admin, read only: who is behind, by how much (wire.md §7, R16-06)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.ledger.admin import ReadOnlyAdmin

from .models import Cursor


@admin.register(Cursor)
class CursorAdmin(ReadOnlyAdmin):
    """Cursors are written only by the stream's ACK handler, so admin can only look."""

    list_display = ("principal", "group", "sequence", "head", "lag", "updated_at")
    list_filter = ("group",)
    search_fields = ("principal",)
    list_select_related = ("group__log",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Cursor]:
        return super().get_queryset(request).select_related("group__log")

    @admin.display(description="group head")
    def head(self, cursor: Cursor) -> int:
        log = getattr(cursor.group, "log", None)
        return log.head_sequence if log is not None else 0

    @admin.display(description="lag")
    def lag(self, cursor: Cursor) -> int:
        return max(self.head(cursor) - cursor.sequence, 0)
