"""``work.submit``: a result the authority can verify (R10.2-11, R13.2-01..03, R11.5-02).

The owner submits, under its live lease, the artifacts it produced — every one stored and
nameable by it (wire.md §9) — with evidence covering every acceptance criterion, produced by
itself with each criterion's method (R13.2-02, R13.2-04). An additive ``outputs`` map names
which artifact is which declared output; an output declared with a JSON Schema must be mapped
and is validated against it before anything is appended (R13.2-03 step 1). ``work.submitted``
is appended alone (wire.md §6); a submitted artifact with no manifest in this group gets one
recorded by the authority right after commit (a follow-up, R13.1-03), and the authority's own
checks follow as evidence (``assessment``).

A fenced former owner's result is kept for audit with 202 (R11.5-02, R11.5-03), but bounded:
one kept submission per (item, former ownership epoch, content digest); a repeat is answered
without being kept again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..artifacts.citations import named_by
from ..artifacts.manifests import (
    RECORD_MANIFEST,
    agent_card_key,
    recorded_manifest,
    unpublished,
)
from ..artifacts.naming import require_nameable
from ..artifacts.outputs import (
    MAX_SCHEMA_OUTPUT_BYTES,
    check_outputs,
    parse_json_output,
    schema_outputs,
    too_large,
    validate_against_schema,
    validate_outputs_field,
)
from ..artifacts.records import StoredArtifact, artifact_key
from ..canonical import digest
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, FollowUp, NewEvent, StateKey, View
from ..timefmt import format_timestamp
from ..validation import check_fields, check_id
from .assessment import check_producer_and_method
from .checks import (
    digests,
    evidence_list,
    evidence_missing,
    owner_with_lease,
    require_item,
    uncovered_criteria,
)
from .items import WorkItem, work_item_key

SUBMITTED = "work.submitted"
LATE_RESULT = "work.late_result_recorded"


def artifact_bytes_key(digest_: str) -> StateKey:
    """The verified bytes of a stored artifact, loaded by the write path for an output the
    contract declares with a JSON Schema (``None`` when they cannot be read)."""
    return ("artifact_bytes", digest_)


def validate_submit(body: dict[str, Any]) -> None:
    check_fields(
        body, required=("work_item", "lease_id", "artifacts", "evidence"), optional=("outputs",)
    )
    check_id(body["work_item"], "$.work_item")
    check_id(body["lease_id"], "$.lease_id")
    digests(body["artifacts"], "$.artifacts")
    evidence_list(body["evidence"], "$.evidence")
    if "outputs" in body:
        validate_outputs_field(body["outputs"])


def keys_of_submit(command: Command, view: View) -> set[StateKey]:
    """The item, the submitter's card, each artifact's record here (has it a manifest?)
    and, once the contract is known, the bytes of the outputs it declares with a schema."""
    key = work_item_key(command.body["work_item"])
    keys = {key, agent_card_key(command.actor)}
    keys.update(artifact_key(d) for d in command.body["artifacts"])
    item: WorkItem | None = view.get(key)
    if item is not None:
        outputs = command.body.get("outputs", {})
        keys.update(
            artifact_bytes_key(outputs[name])
            for name in schema_outputs(item.contract)
            if name in outputs
        )
    return keys


def decide_submit(view: View, command: Command) -> Decision:
    """R10.2-11, R13.2-02; a former owner's result is kept for audit only (R11.5-02, R11.5-03)."""
    item = require_item(view, command.body["work_item"])
    if item.owner != command.actor and command.actor in item.former_owners:
        return _late_result(item, command)
    item, _lease = owner_with_lease(view, command)
    body = command.body
    missing = uncovered_criteria(item, {e["criterion"] for e in body["evidence"]})
    if missing:
        raise evidence_missing(missing, f"no evidence for acceptance criteria {', '.join(missing)}")
    for index, evidence in enumerate(body["evidence"]):
        check_producer_and_method(item, evidence, command.actor, f"$.evidence[{index}]")
    stored = require_nameable(view, named_by(command.type, body))
    outputs: dict[str, str] = body.get("outputs", {})
    check_outputs(item.contract, outputs, body["artifacts"])
    for name, schema in schema_outputs(item.contract).items():
        data = _output_bytes(view, stored[outputs[name]], name)
        validate_against_schema(parse_json_output(data, output=name), schema, output=name)
    return Decision(
        [NewEvent(SUBMITTED, dict(body))],
        follow_ups=tuple(_manifest_follow_ups(view, item, command, stored)),
    )


def _output_bytes(view: View, stored: StoredArtifact, output: str) -> bytes:
    """An output's verified bytes; a stored object that no longer matches its digest is
    ``ARTIFACT_CORRUPTED`` (R13.1-05), one too large to validate ``TOO_LARGE``."""
    if stored.size > MAX_SCHEMA_OUTPUT_BYTES:
        raise too_large(output, stored.size)
    data = view.get(artifact_bytes_key(stored.digest))
    if data is None:
        raise ProtocolError(
            ErrorCode.ARTIFACT_CORRUPTED,
            f"output {output} ({stored.digest}) cannot be read back intact",
            requirement="R13.1-05",
            details={"output": output, "digest": stored.digest},
        )
    return data


def _manifest_follow_ups(
    view: View, item: WorkItem, command: Command, stored: dict[str, Any]
) -> list[FollowUp]:
    """A manifest recorded by the authority for each submitted artifact nobody published."""
    declared = {output["name"]: output for output in item.contract.get("outputs", [])}
    output_of = {d: declared.get(name, {}) for name, d in command.body.get("outputs", {}).items()}
    follow_ups = []
    for artifact in unpublished(view, command.body["artifacts"]):
        output = output_of.get(artifact, {})
        schema = output.get("schema")
        manifest = recorded_manifest(
            item=item,
            stored=stored[artifact],
            producer=command.actor,
            card_version=view.get(agent_card_key(command.actor)),
            media_type=output.get("media_type"),
            schema=digest(schema) if isinstance(schema, dict) else schema,
            created_at=format_timestamp(command.now),
        )
        seed = f"{command.group}\n{command.id}\n{artifact}".encode()
        follow_ups.append(
            FollowUp(
                group=command.group,
                type=RECORD_MANIFEST,
                body={"work_item": item.id, "manifest": manifest},
                command_id=f"manifest-{hashlib.sha256(seed).hexdigest()[:40]}",
            )
        )
    return follow_ups


def _late_result(item: WorkItem, command: Command) -> Decision:
    """Kept once per (former ownership epoch, content); a repeat appends nothing."""
    leases = [*item.lease_history, *([item.lease] if item.lease else [])]
    epoch = max(
        (lease.ownership_epoch for lease in leases if lease.agent == command.actor), default=0
    )
    key = f"{epoch}:{digest(command.body)}"
    result: dict[str, Any] = {"late_result": True, "state": item.state}
    kept = item.late_result_keys.get(key)
    if kept is not None:
        return Decision([], {**result, "kept_at": kept}, status=202)
    payload = {
        **command.body,
        "former_owner": command.actor,
        "former_ownership_epoch": epoch,
        "current_ownership_epoch": item.ownership_epoch,
        "late_result_key": key,
    }
    return Decision([NewEvent(LATE_RESULT, payload)], result, status=202)
