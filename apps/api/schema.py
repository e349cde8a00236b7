"""Request and response shapes for the OpenAPI document (``GET /api/v1/schema``).

These serializers describe the wire; they validate nothing (the strict parser and the pure
core do). Keeping them apart keeps the views thin and the schema complete.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer
from rest_framework import serializers

from missionweave.protocol.errors import ErrorCode


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=[code.value for code in ErrorCode])
    message = serializers.CharField()
    requirement = serializers.CharField(help_text="R-ID of the refused rule, or wire§N")
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


class AuthoritySerializer(serializers.Serializer):
    authority_id = serializers.CharField()
    public_key = serializers.CharField()
    protocol = serializers.CharField()
    time = serializers.CharField()
    clock_skew_s = serializers.IntegerField()


class SessionRequestSerializer(serializers.Serializer):
    agent = serializers.CharField()
    issued_at = serializers.CharField()
    nonce = serializers.CharField(min_length=16, max_length=128)
    signature = serializers.CharField()


class MembershipSummarySerializer(serializers.Serializer):
    roles = serializers.ListField(child=serializers.CharField())
    epoch = serializers.IntegerField()


class SessionSerializer(serializers.Serializer):
    session_id = serializers.CharField()
    session_epoch = serializers.IntegerField()
    token = serializers.CharField()
    expires_at = serializers.CharField()
    memberships = serializers.DictField(child=MembershipSummarySerializer())


class HumanSessionSerializer(serializers.Serializer):
    """``GET /sessions/current`` with a human's API token (wire.md §4): who, and where."""

    principal = serializers.CharField(help_text="user:<username>")
    memberships = serializers.DictField(child=MembershipSummarySerializer())


#: ``GET /sessions/current`` answers an agent's session or a human's principal (wire.md §4)
CURRENT_SESSION = PolymorphicProxySerializer(
    component_name="CurrentSession",
    serializers=[SessionSerializer, HumanSessionSerializer],
    resource_type_field_name=None,
)


class EnvelopeSerializer(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField()
    group = serializers.CharField()
    actor = serializers.CharField()
    session_epoch = serializers.IntegerField(required=False)
    membership_epoch = serializers.IntegerField()
    issued_at = serializers.CharField()
    body = serializers.DictField()
    extensions = serializers.DictField(required=False)
    signature = serializers.CharField(required=False)


class EventRefSerializer(serializers.Serializer):
    event_id = serializers.CharField()
    sequence = serializers.IntegerField()
    type = serializers.CharField()


class CommandResponseSerializer(serializers.Serializer):
    command_id = serializers.CharField()
    events = EventRefSerializer(many=True)
    result = serializers.DictField()


class BatchRequestSerializer(serializers.Serializer):
    commands = EnvelopeSerializer(many=True)


class BatchItemSerializer(serializers.Serializer):
    status = serializers.IntegerField()
    body = serializers.DictField()


class BatchResponseSerializer(serializers.Serializer):
    results = BatchItemSerializer(many=True)


class EventSerializer(serializers.Serializer):
    event_id = serializers.CharField()
    group = serializers.CharField()
    sequence = serializers.IntegerField()
    type = serializers.CharField()
    command_id = serializers.CharField()
    actor = serializers.CharField()
    recorded_at = serializers.CharField()
    payload = serializers.DictField()
    prev_hash = serializers.CharField()
    hash = serializers.CharField()


class EventPageSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    head = serializers.IntegerField()
    next_after = serializers.IntegerField()


class HeadReferenceSerializer(serializers.Serializer):
    """The head the authority signed before this one (issue 33 §2)."""

    sequence = serializers.IntegerField()
    digest = serializers.CharField()


class HeadSerializer(serializers.Serializer):
    group = serializers.CharField()
    sequence = serializers.IntegerField()
    hash = serializers.CharField()
    previous = HeadReferenceSerializer(allow_null=True)
    signed_at = serializers.CharField()
    signature = serializers.CharField()


class EmptyBodySerializer(serializers.Serializer):
    """The JSON body ``{}``."""


class SnapshotCreatedSerializer(serializers.Serializer):
    sequence = serializers.IntegerField()
    digest = serializers.CharField()
    url = serializers.CharField()


class ArchiveRequestSerializer(serializers.Serializer):
    """wire.md §4: move events with sequence ≤ ``through`` out of the online log."""

    through = serializers.IntegerField(min_value=0)


class ArchiveSerializer(serializers.Serializer):
    """The group's online floor after the call: events ≤ it are archived (R16-08)."""

    group = serializers.CharField()
    archived_through = serializers.IntegerField()


class SnapshotSerializer(serializers.Serializer):
    """wire.md §7: ``projections`` is ``{kind: {id: aggregate}}`` after event ``sequence``."""

    group = serializers.CharField()
    sequence = serializers.IntegerField()
    event_hash = serializers.CharField()
    projections = serializers.DictField(child=serializers.DictField())
    created_at = serializers.CharField()
    authority = serializers.CharField()
    signature = serializers.CharField()


class BudgetsSerializer(serializers.Serializer):
    limits = serializers.DictField(child=serializers.FloatField())
    used = serializers.DictField(child=serializers.FloatField())


class MissionSerializer(serializers.Serializer):
    id = serializers.CharField()
    state = serializers.CharField()
    goal = serializers.CharField()
    budgets = BudgetsSerializer()
    parent = serializers.CharField(allow_null=True)
    children = serializers.ListField(child=serializers.CharField())
    work_items = serializers.ListField(child=serializers.CharField())
    usage_series = serializers.ListField(
        child=serializers.ListField(),
        help_text="[sequence, recorded_at, {dimension: cumulative used}] after each charge, "
        "oldest first, at most 120 points (R10.1-01(g))",
    )
    change_requests = serializers.ListField(
        child=serializers.DictField(),
        help_text="mission.changes_requested, oldest first, every one: {work_items, note, by, "
        "sequence, recorded_at}; open while a WorkItem it names has no replaced_by, and "
        "mission.approve is refused while one is open (R13.2-03; issue 36 §5)",
    )


class LeaseSerializer(serializers.Serializer):
    lease_id = serializers.CharField()
    agent = serializers.CharField()
    session_epoch = serializers.IntegerField(allow_null=True)
    ownership_epoch = serializers.IntegerField()
    started_at = serializers.CharField()
    expires_at = serializers.CharField()
    renewals = serializers.ListField(child=serializers.CharField())
    status = serializers.CharField(help_text="active, released, expired or revoked (R11.3-09)")
    closed_at = serializers.CharField(allow_null=True)
    closed_by = serializers.CharField(allow_null=True, help_text="the event that ended it")
    revoked_tokens = serializers.ListField(child=serializers.CharField())


class LateResultSerializer(serializers.Serializer):
    sequence = serializers.IntegerField()
    recorded_at = serializers.CharField()
    former_owner = serializers.CharField()
    lease_id = serializers.CharField(allow_null=True)
    artifacts = serializers.ListField(child=serializers.CharField())


class OfferSerializer(serializers.Serializer):
    offer = serializers.CharField()
    worker = serializers.CharField()
    expires_at = serializers.CharField()
    mode = serializers.CharField()
    rank = serializers.IntegerField()
    revision = serializers.IntegerField()
    status = serializers.CharField()
    reason = serializers.CharField(allow_null=True)


class ProvenanceNodeSerializer(serializers.Serializer):
    digest = serializers.CharField()
    manifest = serializers.DictField(allow_null=True)
    signed_by = serializers.CharField(allow_null=True)


class ProvenanceSerializer(serializers.Serializer):
    """``GET /groups/{g}/artifacts/{digest}`` (R13.1-04)."""

    group = serializers.CharField()
    digest = serializers.CharField()
    manifest = serializers.DictField(allow_null=True)
    signed_by = serializers.CharField(allow_null=True)
    published = serializers.IntegerField(allow_null=True)
    sources = ProvenanceNodeSerializer(many=True)
    derived = ProvenanceNodeSerializer(many=True)
    citations = serializers.ListField(child=serializers.DictField())
    cited = serializers.IntegerField()
    work_items = serializers.ListField(child=serializers.CharField())
    submissions = serializers.ListField(child=serializers.DictField())
    evidence = serializers.ListField(child=serializers.DictField())
    approvals = serializers.ListField(child=serializers.DictField())


class WorkItemSerializer(serializers.Serializer):
    id = serializers.CharField()
    mission = serializers.CharField()
    state = serializers.CharField()
    revision = serializers.IntegerField()
    contract = serializers.DictField()
    owner = serializers.CharField(allow_null=True)
    ownership_epoch = serializers.IntegerField()
    start_deadline = serializers.CharField(allow_null=True)
    lease = LeaseSerializer(allow_null=True)
    offers = OfferSerializer(many=True)
    depends_on = serializers.ListField(child=serializers.CharField())
    budgets = BudgetsSerializer()
    approvals = serializers.ListField(child=serializers.CharField())
    history = serializers.ListField(child=serializers.DictField())
    lease_history = LeaseSerializer(many=True, help_text="closed leases, oldest first")
    attempts = serializers.IntegerField(
        help_text="fresh attempts: a start that resumes after a released checkpoint, a block "
        "or a replaced session continues the attempt it stopped (R11.4-08, issue 35)"
    )
    resumes_attempt = serializers.BooleanField(
        help_text="the owner stopped on purpose: its next start resumes the same attempt"
    )
    blocked_for = serializers.DictField(
        allow_null=True,
        help_text="while blocked by its owner: {resolution, by, at} (R11.4-04)",
    )
    retry_at = serializers.CharField(allow_null=True, help_text="a retry's backoff (R11.4-08)")
    last_checkpoint = serializers.DictField(allow_null=True)
    late_results = serializers.IntegerField()
    late_result_log = LateResultSerializer(many=True, help_text="kept for audit (R11.5-02)")
    reassignments = serializers.IntegerField()
    former_owners = serializers.ListField(child=serializers.CharField())
    approval_log = serializers.ListField(
        child=serializers.DictField(),
        help_text="execution decisions {principal, decision, comment, revision, sequence, "
        "recorded_at}, the latest 50 (R10.2-06)",
    )
    refusal = serializers.DictField(
        allow_null=True, help_text="the current revision's refusal, if any (R10.2-06)"
    )
    progress = serializers.DictField(
        allow_null=True, help_text="the latest structured progress report (R11.4-01)"
    )
    accepted_review = serializers.DictField(
        allow_null=True, help_text="{by, sequence, recorded_at, verdicts, summary} (R13.2-03)"
    )
    failed_review = serializers.DictField(
        allow_null=True, help_text="{by, sequence, recorded_at, evidence} (R13.2-03)"
    )
    schedule = serializers.DictField(
        allow_null=True,
        help_text="the owner's latest work.schedule_disclosed: {ownership_epoch, "
        "estimated_start {earliest, latest}, estimated_completion, confidence, capacity_state, "
        "computed_at, compute_seconds?, by, sequence, recorded_at} (R11.2-01)",
    )
    execution_refused = serializers.DictField(
        allow_null=True,
        help_text="the current revision's refusal in words: {by, reason, at, revision, "
        "waits_for: corrected_contract}; the item waits for a corrected contract or a cancel "
        "(R10.2-06)",
    )
    messages = serializers.IntegerField(help_text="messages posted in its conversation")
    open_questions = serializers.ListField(
        child=serializers.CharField(),
        help_text="message ids of the open essential questions: while one is open the offer "
        "cannot be accepted (R10.1-03)",
    )
    question_askers = serializers.DictField(
        child=serializers.CharField(),
        help_text="who asked each open question (message id → principal): the asker never "
        "settles it (R10.1-04)",
    )
    priority_changes = serializers.ListField(
        child=serializers.DictField(),
        help_text="work.reprioritized changes, oldest first, the latest 50: {urgency, "
        "deadline, previous {urgency, deadline}, reason, by, sequence, recorded_at}; the "
        "contract holds the current values (R0-12, R11.3-11)",
    )
    asks = serializers.ListField(
        child=serializers.DictField(),
        help_text="work.asked, oldest first, the latest 50: {for (execution_approval or "
        "review), asked [principals], by, note, revision, submission, sequence, recorded_at} "
        "(R10.2-06, R13.2-03)",
    )


class PresenceAmountsSerializer(serializers.Serializer):
    total = serializers.FloatField(min_value=0)
    free = serializers.FloatField(min_value=0, help_text="at most total")


class PresenceRequestSerializer(serializers.Serializer):
    """``POST /presence`` (R11.1-11): capacity as a whole, never by group (R11.2-02)."""

    slots = serializers.IntegerField(min_value=1, max_value=10_000)
    slots_free = serializers.IntegerField(min_value=0, max_value=10_000, help_text="at most slots")
    resources = serializers.DictField(
        child=PresenceAmountsSerializer(),
        required=False,
        help_text="named resources (1..128 characters, at most 64): {total, free}",
    )


class PresenceSerializer(PresenceRequestSerializer):
    agent = serializers.CharField(help_text="agent:<id>")
    reported_at = serializers.CharField(help_text="the authority's time of the report")


class CapabilityCheckRequestSerializer(serializers.Serializer):
    token = serializers.CharField()
    work_item = serializers.CharField(required=False)
    group = serializers.CharField(required=False)
    tool = serializers.CharField(required=False)
    data = serializers.CharField(required=False)
    operation = serializers.CharField(required=False)


class CapabilityCheckSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    claims = serializers.DictField(required=False, help_text="the token's claims, when valid")
    code = serializers.CharField(required=False, help_text="wire.md §8 code, when not valid")
    requirement = serializers.CharField(required=False, help_text="R-ID of the failed rule")
    reason = serializers.CharField(required=False)


class OrganizationSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()


class CapabilitySerializer(serializers.Serializer):
    id = serializers.CharField()
    version = serializers.CharField()


class AgentCardSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()
    capabilities = CapabilitySerializer(many=True)
    max_concurrency = serializers.IntegerField(min_value=1)


class AgentRequestSerializer(serializers.Serializer):
    id = serializers.CharField()
    organization = serializers.CharField()
    public_key = serializers.CharField()
    agent_card = AgentCardSerializer()


class AgentSerializer(serializers.Serializer):
    id = serializers.CharField()
    organization = serializers.CharField()
    public_keys = serializers.ListField(child=serializers.CharField())
    agent_card = AgentCardSerializer(allow_null=True)
    session_epoch = serializers.IntegerField()


class GroupRequestSerializer(serializers.Serializer):
    id = serializers.CharField()
    organization = serializers.CharField()
    name = serializers.CharField()


class MembershipRequestSerializer(serializers.Serializer):
    principal = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())


class MembershipSerializer(serializers.Serializer):
    principal = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())
    epoch = serializers.IntegerField()


class MembershipRevokedSerializer(serializers.Serializer):
    principal = serializers.CharField()
    epoch = serializers.IntegerField()


class CursorLagSerializer(serializers.Serializer):
    principal = serializers.CharField()
    sequence = serializers.IntegerField()
    lag = serializers.IntegerField(help_text="the group's head minus this cursor")
    updated_at = serializers.DateTimeField()


class GroupCursorsSerializer(serializers.Serializer):
    """wire.md §7 ACK cursors of a group, for admins: who is behind, by how much (R16-06)."""

    group = serializers.CharField()
    head = serializers.IntegerField()
    cursors = CursorLagSerializer(many=True)


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """The wire.md §8 error document at each of ``statuses``."""
    return {
        status: OpenApiResponse(ErrorSerializer, description="wire.md §8 error")
        for status in statuses
    }


GROUP = OpenApiParameter("group", str, OpenApiParameter.PATH, description="group id")


# --- context packages (R13.3) ----------------------------------------------------------


class ContextVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    digest = serializers.CharField(help_text="over the canonical package without signature")
    package = serializers.DictField(help_text="as recorded: signed by the authority")
    sequence = serializers.IntegerField(help_text="of the recording event in this group")
    recorded_at = serializers.CharField()
    source_sequence = serializers.IntegerField(
        required=False, help_text="received: of context.published in the source group"
    )
    forwarded_by = serializers.CharField(required=False, help_text="received: the forwarder")


class ContextCrossingSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    to_group = serializers.CharField()
    sequence = serializers.IntegerField()
    forwarded_by = serializers.CharField()


class ContextPackageSerializer(serializers.Serializer):
    id = serializers.CharField()
    source_group = serializers.CharField(help_text="whose log event_range is of")
    versions = ContextVersionSerializer(many=True)
    forwarded = ContextCrossingSerializer(many=True)
    received_from = serializers.CharField(allow_null=True)
    forwarded_by = serializers.CharField(allow_null=True)


class ContextVersionRefSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    digest = serializers.CharField()
    sequence = serializers.IntegerField()
    recorded_at = serializers.CharField()


class ContextPackageSummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    source_group = serializers.CharField(help_text="whose log event_range is of")
    received_from = serializers.CharField(allow_null=True)
    forwarded_by = serializers.CharField(allow_null=True)
    latest = ContextVersionSerializer(help_text="the highest version, signed")
    versions = ContextVersionRefSerializer(many=True)


class ContextPackageListSerializer(serializers.Serializer):
    packages = ContextPackageSummarySerializer(many=True)
    next_after = serializers.CharField(
        allow_null=True, help_text="pass as after for the next page; null: nothing left"
    )


class ContextEventPageSerializer(serializers.Serializer):
    group = serializers.CharField(help_text="the source group, whose log the events are of")
    event_range = serializers.ListField(child=serializers.IntegerField())
    events = EventSerializer(many=True)
    next_after = serializers.IntegerField()
