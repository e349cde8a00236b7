"""Notifications and their deliveries in Django admin, read only: what was told to whom, and
whether each email went out (attempts, last error)."""

from __future__ import annotations

from django.contrib import admin

from apps.ledger.admin import ReadOnlyAdmin

from .models import Delivery, Notification


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user", "kind", "group", "title", "email_mode", "read_at")
    list_filter = ("kind", "email_mode")
    search_fields = ("user__username", "title", "subject_id")


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "channel", "key", "user", "status", "attempts", "sent_at")
    list_filter = ("channel", "status")
    search_fields = ("key", "last_error")
