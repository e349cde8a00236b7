"""The log in Django admin, read only: events are immutable."""

from __future__ import annotations

from django.contrib import admin

from .models import CommandRecord, Event, GroupLog


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows only the write path writes (the log, projections, cursors): admin may look, never
    touch, or a projection would disagree with the events it is rebuilt from."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(GroupLog)
class GroupLogAdmin(ReadOnlyAdmin):
    list_display = ("group", "head_sequence", "head_hash")


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("group", "sequence", "type", "actor", "recorded_at")
    list_filter = ("type",)
    search_fields = ("event_id", "command_id")


@admin.register(CommandRecord)
class CommandRecordAdmin(ReadOnlyAdmin):
    list_display = ("group", "actor", "command_id", "status", "accepted_at")
