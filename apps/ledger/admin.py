"""The log in Django admin, read only: events are immutable."""

from __future__ import annotations

from django.contrib import admin

from apps.registry.admin import ReadOnlyAdmin

from .models import CommandRecord, Event, GroupLog


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
