"""``/api/v1`` routes exactly as wire.md §4 writes them (no trailing slashes)."""

from __future__ import annotations

from django.urls import path, register_converter

from .converters import CountConverter, DigestConverter, PrincipalConverter, WireIdConverter
from .views import (
    admin,
    artifacts,
    capabilities,
    contexts,
    groups,
    presence,
    public,
    snapshots,
)

register_converter(WireIdConverter, "wid")
register_converter(PrincipalConverter, "principal")
register_converter(DigestConverter, "digest")
register_converter(CountConverter, "count")

urlpatterns = [
    path("authority", public.AuthorityApi.as_view(), name="authority"),
    path("sessions", public.SessionCreateApi.as_view(), name="sessions"),
    path("sessions/current", public.SessionCurrentApi.as_view(), name="session-current"),
    path(
        "capabilities:check",
        capabilities.CapabilityCheckApi.as_view(),
        name="capabilities-check",
    ),
    path("presence", presence.PresenceApi.as_view(), name="presence"),
    path("organizations", admin.OrganizationCreateApi.as_view(), name="organizations"),
    path("agents", admin.AgentCreateApi.as_view(), name="agents"),
    path("groups", admin.GroupCreateApi.as_view(), name="groups"),
    path("groups/<wid:group>/commands", groups.CommandSubmitApi.as_view(), name="commands"),
    path(
        "groups/<wid:group>/commands:batch", groups.CommandBatchApi.as_view(), name="commands-batch"
    ),
    path("groups/<wid:group>/events", groups.EventListApi.as_view(), name="events"),
    path("groups/<wid:group>/cursors", admin.GroupCursorsApi.as_view(), name="cursors"),
    path("groups/<wid:group>/head", groups.HeadApi.as_view(), name="head"),
    path(
        "groups/<wid:group>/missions/<wid:mission>",
        groups.MissionDetailApi.as_view(),
        name="mission",
    ),
    path(
        "groups/<wid:group>/work-items/<wid:work_item>",
        groups.WorkItemDetailApi.as_view(),
        name="work-item",
    ),
    path("groups/<wid:group>/contexts", contexts.ContextPackageListApi.as_view(), name="contexts"),
    path(
        "groups/<wid:group>/contexts/<wid:package>",
        contexts.ContextPackageDetailApi.as_view(),
        name="context",
    ),
    path(
        "groups/<wid:group>/contexts/<wid:from_group>/<wid:package>",
        contexts.ReceivedContextPackageDetailApi.as_view(),
        name="context-received",
    ),
    path(
        "groups/<wid:group>/contexts/<wid:package>/versions/<count:version>/events",
        contexts.ContextEventsApi.as_view(),
        name="context-events",
    ),
    path(
        "groups/<wid:group>/contexts/<wid:from_group>/<wid:package>/versions/<count:version>/events",
        contexts.ReceivedContextEventsApi.as_view(),
        name="context-received-events",
    ),
    path(
        "groups/<wid:group>/artifacts/<digest:digest>",
        artifacts.ArtifactProvenanceApi.as_view(),
        name="artifact-provenance",
    ),
    path("groups/<wid:group>/memberships", admin.MembershipGrantApi.as_view(), name="memberships"),
    path(
        "groups/<wid:group>/memberships/<principal:principal>",
        admin.MembershipRevokeApi.as_view(),
        name="membership",
    ),
    path("groups/<wid:group>/snapshots", snapshots.SnapshotCreateApi.as_view(), name="snapshots"),
    path(
        "groups/<wid:group>/snapshots/<count:sequence>",
        snapshots.SnapshotDetailApi.as_view(),
        name="snapshot",
    ),
    path("groups/<wid:group>/archive", snapshots.ArchiveApi.as_view(), name="archive"),
    path("schema", public.SchemaApi.as_view(), name="schema"),
    # the same document for people, in Swagger UI served from the app (issue 16 §6)
    path("docs", public.SchemaDocs.as_view(url_name="schema"), name="docs"),
]
