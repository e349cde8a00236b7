from __future__ import annotations

from django.contrib import admin

from apps.ledger.admin import ReadOnlyAdmin

from .models import Mission


@admin.register(Mission)
class MissionAdmin(ReadOnlyAdmin):
    list_display = ("group", "mission_id", "state", "created_by")
