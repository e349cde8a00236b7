"""``/api/v1`` routes exactly as wire.md §4 writes them (no trailing slashes)."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView

from .views import admin, groups, public

urlpatterns = [
    path("authority", public.AuthorityApi.as_view(), name="authority"),
    path("sessions", public.SessionCreateApi.as_view(), name="sessions"),
    path("sessions/current", public.SessionCurrentApi.as_view(), name="session-current"),
    path("organizations", admin.OrganizationCreateApi.as_view(), name="organizations"),
    path("agents", admin.AgentCreateApi.as_view(), name="agents"),
    path("groups", admin.GroupCreateApi.as_view(), name="groups"),
    path("groups/<str:group>/commands", groups.CommandSubmitApi.as_view(), name="commands"),
    path(
        "groups/<str:group>/commands:batch", groups.CommandBatchApi.as_view(), name="commands-batch"
    ),
    path("groups/<str:group>/events", groups.EventListApi.as_view(), name="events"),
    path("groups/<str:group>/head", groups.HeadApi.as_view(), name="head"),
    path(
        "groups/<str:group>/missions/<str:mission>",
        groups.MissionDetailApi.as_view(),
        name="mission",
    ),
    path("groups/<str:group>/memberships", admin.MembershipGrantApi.as_view(), name="memberships"),
    path(
        "groups/<str:group>/memberships/<str:principal>",
        admin.MembershipRevokeApi.as_view(),
        name="membership",
    ),
    path(
        "schema",
        SpectacularJSONAPIView.as_view(authentication_classes=[]),
        name="schema",
    ),
]
