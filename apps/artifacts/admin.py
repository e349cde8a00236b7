"""The store in Django admin: blobs with their uploaders, the log references, and the
corruption reports admins need to see (R13.1-05). All read only: rows change through
uploads, the write path and reads that find corruption."""

from __future__ import annotations

from django.contrib import admin

from apps.ledger.admin import ReadOnlyAdmin

from .models import Blob, CorruptionReport, GroupArtifact, Upload


class UploadInline(admin.TabularInline):
    model = Upload
    extra = 0
    readonly_fields = ("principal", "uploaded_at")
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Blob)
class BlobAdmin(ReadOnlyAdmin):
    list_display = ("digest", "size", "stored_at", "corrupted_at")
    list_filter = ("corrupted_at",)
    search_fields = ("digest",)
    inlines = (UploadInline,)


@admin.register(GroupArtifact)
class GroupArtifactAdmin(ReadOnlyAdmin):
    list_display = ("digest", "group")
    search_fields = ("digest", "group__id")


@admin.register(CorruptionReport)
class CorruptionReportAdmin(ReadOnlyAdmin):
    list_display = (
        "digest",
        "location",
        "actual",
        "count",
        "detected_at",
        "last_seen_at",
        "resolved_at",
    )
    list_filter = ("location", "resolved_at")
    search_fields = ("digest",)
