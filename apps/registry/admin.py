"""Django admin for identities. Memberships are read-only here: they are a projection of the
group log and change only through membership commands (the admin API or the dashboard)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.models import Group as PermissionGroup

from apps.ledger.admin import ReadOnlyAdmin

from .models import (
    Agent,
    AgentCard,
    AgentKey,
    AgentSession,
    ApiToken,
    Group,
    Membership,
    Organization,
)

# One "Groups" entry in admin, and it means MWP groups: Django's permission groups are not
# used by this product (roles are MWP memberships), so their entry would only mislead.
admin.site.unregister(PermissionGroup)


class NoDeleteAdmin(admin.ModelAdmin):
    """Rows the log's history stands on: an organisation owns groups and agents (PROTECT),
    a group's log is append-only, an agent's keys verify the commands it signed. Admin never
    offers a Delete that could only fail, or succeed by breaking the history."""

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Organization)
class OrganizationAdmin(NoDeleteAdmin):
    list_display = ("id", "name", "created_at")
    search_fields = ("id", "name")


class AgentKeyInline(admin.TabularInline):
    model = AgentKey
    extra = 0
    fields = ("public_key", "created_at", "revoked_at")
    readonly_fields = ("created_at",)


class AgentCardInline(admin.TabularInline):
    model = AgentCard
    extra = 0
    readonly_fields = ("version", "card", "recorded_at")


@admin.register(Agent)
class AgentAdmin(NoDeleteAdmin):
    list_display = ("id", "organization", "session_epoch", "created_at")
    search_fields = ("id",)
    readonly_fields = ("session_epoch",)
    inlines = (AgentKeyInline, AgentCardInline)


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = ("session_id", "agent", "epoch", "created_at", "expires_at")
    exclude = ("token_hash",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "label", "created_at")
    exclude = ("token_hash",)

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # tokens are shown once, at creation: use `manage.py api_token`


@admin.register(Group)
class GroupAdmin(NoDeleteAdmin):
    list_display = ("id", "name", "organization", "created_at")
    search_fields = ("id", "name")

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # a group needs its head row: create it with POST /api/v1/groups


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    list_display = ("group", "principal", "roles", "epoch", "active")
    list_filter = ("active",)
    search_fields = ("principal",)
