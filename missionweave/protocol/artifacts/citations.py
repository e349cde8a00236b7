"""Where commands name artifacts and where a group's log cites them (wire.md §4, §9).

One table says, for each command type, the body fields that hold digests; the same table
read over an event's payload (which records the accepted command's body) says where the log
cites them. So "a command may name an artifact only if…" (wire.md §9) and "a member of a
group whose log references it may read it" (wire.md §4) are about the same fields, and an
``artifact`` aggregate (R13.1-04) is created in a group the first time its log cites a digest.

The §4 list (contract ``inputs``, ``artifact.published``, ``work.checkpointed``,
``work.submitted``, ``evidence.recorded``, ``work.failed``) is extended additively by the other
places a digest can travel: a block's checkpoint, a late result kept for audit, an ``outputs``
map, context packages published or received (docs/protocol.md, "Artifacts"), and a checkpoint's
``state_artifact`` (issue 35 §2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..canonical import is_digest

Named = list[tuple[str, str]]  # (JSON path, digest)
Finder = Callable[[dict[str, Any]], Iterator[tuple[str, str]]]


def _list(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if is_digest(item):
                yield f"{path}[{index}]", item


def _evidence(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                yield from _list(item.get("artifacts"), f"{path}[{index}].artifacts")


def _checkpoint(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A checkpoint's artifacts and the artifact its state is stored in (issue 35 §2): cited,
    so every member of the group — the next owner after a reassignment — may read it."""
    checkpoint = body.get("checkpoint")
    if isinstance(checkpoint, dict):
        yield from _list(checkpoint.get("artifacts"), "$.checkpoint.artifacts")
        if is_digest(checkpoint.get("state_artifact")):
            yield "$.checkpoint.state_artifact", checkpoint["state_artifact"]


def _contract_inputs(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    contract = body.get("contract")
    inputs = contract.get("inputs") if isinstance(contract, dict) else None
    if isinstance(inputs, list):
        for index, entry in enumerate(inputs):
            if isinstance(entry, dict) and is_digest(entry.get("ref")):
                yield f"$.contract.inputs[{index}].ref", entry["ref"]


def _result(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A submission (or a late one): its artifacts, its outputs map and its evidence."""
    yield from _list(body.get("artifacts"), "$.artifacts")
    outputs = body.get("outputs")
    if isinstance(outputs, dict):
        for name, digest in outputs.items():
            if is_digest(digest):
                yield f"$.outputs.{name}", digest
    yield from _evidence(body.get("evidence"), "$.evidence")


def _manifest(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    manifest = body.get("manifest")
    if isinstance(manifest, dict):
        if is_digest(manifest.get("digest")):
            yield "$.manifest.digest", manifest["digest"]
        yield from _list(manifest.get("sources"), "$.manifest.sources")


def _package(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    package = body.get("package")
    if isinstance(package, dict):
        yield from _list(package.get("artifacts"), "$.package.artifacts")


def _evidence_record(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    yield from _list(body.get("artifacts"), "$.artifacts")


def _failure(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    yield from _evidence(body.get("evidence"), "$.evidence")


#: command type → where its body names artifacts
BY_COMMAND: dict[str, Finder] = {
    "work.authorize": _contract_inputs,
    "work.offer": _contract_inputs,  # a corrected contract
    "work.checkpoint": _checkpoint,
    "work.block": _checkpoint,
    "work.submit": _result,
    "evidence.record": _evidence_record,
    "work.fail": _failure,
    "artifact.publish": _manifest,
    "artifact.record_manifest": _manifest,
    "context.publish": _package,
}

#: event type → where its payload cites artifacts (payloads record the command's body)
BY_EVENT: dict[str, Finder] = {
    "work.authorized": _contract_inputs,
    "work.offered": _contract_inputs,
    "work.checkpointed": _checkpoint,
    "work.blocked": _checkpoint,
    "work.submitted": _result,
    "work.late_result_recorded": _result,
    "evidence.recorded": _evidence_record,
    "work.failed": _failure,
    "work.retry_scheduled": _failure,
    "artifact.published": _manifest,
    "context.published": _package,
    "context.received": _package,
}


def _unique(found: Iterator[tuple[str, str]]) -> Named:
    seen: set[str] = set()
    named: Named = []
    for path, digest in found:
        if digest not in seen:
            seen.add(digest)
            named.append((path, digest))
    return named


def named_by(command_type: str, body: dict[str, Any]) -> Named:
    """The ``(JSON path, digest)`` pairs ``body`` of ``command_type`` names, each digest once
    (at its first path)."""
    finder = BY_COMMAND.get(command_type)
    return _unique(finder(body)) if finder is not None else []


def cited_by(event_type: str, payload: dict[str, Any]) -> Named:
    """The ``(JSON path, digest)`` pairs an event of ``event_type`` cites, each digest once."""
    finder = BY_EVENT.get(event_type)
    return _unique(finder(payload)) if finder is not None else []
