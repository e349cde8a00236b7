"""The ``outputs`` map of ``work.submit``: which submitted artifact is which declared output.

``work.submit`` may carry ``outputs`` ``{output name: digest}`` beside its ``artifacts``
(additive to wire.md §9). The map is what lets the authority find "the summary" among the
digests and hold it to the schema the contract declares for it: R13.2-03 step 1, "validate
Artifact integrity and required output schemas", before any review. Integrity is the store's
job (a digest is the hash of its bytes); this module is the rest, as pure functions:

- :func:`validate_outputs_field`: the field's shape (``MALFORMED``);
- :func:`check_outputs`: the map against the contract and the submission's ``artifacts``
  (``MALFORMED`` for a wrong map, ``EVIDENCE_MISSING`` for an output not submitted);
- :func:`parse_json_output` and :func:`validate_against_schema`: one output's bytes against
  its inline schema (``TOO_LARGE``, ``MALFORMED``; ``CONTRACT_INVALID`` when the schema
  itself cannot be evaluated).
"""

from __future__ import annotations

from typing import Any

from ..canonical import is_digest
from ..errors import ErrorCode, ProtocolError
from ..strictjson import parse
from ..validation import malformed
from .jsonpath import child_path
from .schemas import SchemaUnusable, validate_document

#: the largest output held to its schema while the submission waits; the strict parser's
#: depth limit (32) applies too, so validation never recurses deeply
MAX_SCHEMA_OUTPUT_BYTES = 8 * 1024 * 1024

SUBMISSION = "R13.2-02"
REVIEW = "R13.2-03"


def validate_outputs_field(value: object, path: str = "$.outputs") -> dict[str, str]:
    """``{output name: sha256 digest}``, or ``MALFORMED`` naming the first bad entry."""
    if not isinstance(value, dict):
        raise malformed("outputs maps each output name to a sha256 digest", path, SUBMISSION)
    for name, digest in value.items():
        where = child_path(path, str(name))
        if not isinstance(name, str) or not name.strip():
            raise malformed("an output name is a non-empty string", where, SUBMISSION)
        if not is_digest(digest):
            raise malformed("expected sha256:<64 lowercase hex>", where, SUBMISSION)
    return value


def declared_outputs(contract: dict[str, Any]) -> list[str]:
    """The names of the contract's outputs, in contract order."""
    return [output["name"] for output in contract.get("outputs", [])]


def schema_outputs(contract: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Output name → inline JSON Schema, for each output whose ``schema`` is an object.

    A ``null`` or string (a reference to a schema published elsewhere) ``schema`` is not
    checked by the authority, which fetches nothing.
    """
    return {
        output["name"]: output["schema"]
        for output in contract.get("outputs", [])
        if isinstance(output.get("schema"), dict)
    }


def check_outputs(contract: dict[str, Any], outputs: dict[str, str], artifacts: list[str]) -> None:
    """The submission accounts for every declared output (R13.2-02, R13.2-03 step 1).

    Refused, in this order:

    1. a name the contract does not declare, or a digest not among ``artifacts``: 400
       ``MALFORMED`` naming ``$.outputs.<name>`` (the submission contradicts itself);
    2. an output that declares an inline schema and is not mapped — it cannot be checked
       unmapped — or more declared outputs than artifacts left to stand for them: 409
       ``EVIDENCE_MISSING`` with ``details.missing`` the output names, in contract order.

    Without a map (``outputs`` empty) this is a count: at least one distinct artifact per
    declared output. With a partial map, the artifacts not mapped must cover the outputs not
    mapped; which of those are reported missing is the last ones, in contract order.
    """
    declared = declared_outputs(contract)
    distinct = set(artifacts)
    for name, digest in outputs.items():
        where = child_path("$.outputs", name)
        if name not in declared:
            raise malformed(f"the contract declares no output {_shown(name)}", where, SUBMISSION)
        if digest not in distinct:
            raise malformed(f"{digest} is not among the submission's artifacts", where, SUBMISSION)
    with_schema = schema_outputs(contract)
    unmapped_with_schema = [
        name for name in declared if name in with_schema and name not in outputs
    ]
    others = [name for name in declared if name not in with_schema and name not in outputs]
    spare = len(distinct - set(outputs.values()))
    missing = unmapped_with_schema + others[spare:]
    if not missing:
        return
    if unmapped_with_schema:
        message = (
            f"outputs {', '.join(map(_shown, unmapped_with_schema))} declare a schema and "
            "must be mapped to an artifact in $.outputs"
        )
    else:
        message = f"no artifact submitted for outputs {', '.join(map(_shown, missing))}"
    raise ProtocolError(
        ErrorCode.EVIDENCE_MISSING,
        message,
        requirement=REVIEW if unmapped_with_schema else SUBMISSION,
        details={"missing": missing},
    )


def too_large(output: str, size: int) -> ProtocolError:
    """413 ``TOO_LARGE``: an output too large to validate against its schema."""
    return ProtocolError(
        ErrorCode.TOO_LARGE,
        f"output {_shown(output)} is {size} bytes; a schema is checked on at most "
        f"{MAX_SCHEMA_OUTPUT_BYTES}",
        requirement=REVIEW,
        details={"output": output, "size": size, "limit": MAX_SCHEMA_OUTPUT_BYTES},
    )


def parse_json_output(data: bytes, *, output: str) -> Any:
    """The output's bytes as strict JSON (wire.md §1 rules), or a refusal naming the output.

    Over :data:`MAX_SCHEMA_OUTPUT_BYTES` is 413 ``TOO_LARGE``; anything the strict parser
    refuses (invalid UTF-8, duplicate keys, NaN, nesting deeper than 32...) is 400
    ``MALFORMED`` with ``details.path`` ``$``, the whole document.
    """
    if len(data) > MAX_SCHEMA_OUTPUT_BYTES:
        raise too_large(output, len(data))
    try:
        return parse(data)
    except ProtocolError as exc:
        reason = f"output {_shown(output)} is not JSON: {exc.message}"
        raise _refusal(output, reason, "$", [{"path": "$", "message": exc.message}]) from None


def validate_against_schema(document: Any, schema: dict[str, Any], *, output: str) -> None:
    """``document`` (strictly parsed) satisfies ``schema`` (Draft 2020-12), or a refusal.

    400 ``MALFORMED`` (R13.2-03) names the output and the first failing location inside it;
    ``details.errors`` lists up to 10 ``{path, message, schema_path}`` sorted by path then
    message, with ``details.omitted`` counting the others collected, so the same submission
    always gets the same answer. ``format`` is not asserted (see ``schemas``). A schema that
    cannot be evaluated is the contract's fault: 400 ``CONTRACT_INVALID`` naming the output.
    """
    try:
        report = validate_document(document, schema)
    except SchemaUnusable as exc:
        raise ProtocolError(
            ErrorCode.CONTRACT_INVALID,
            f"the schema of output {_shown(output)} cannot be evaluated: {exc}",
            requirement=REVIEW,
            details={"output": output},
        ) from None
    if report.valid:
        return
    first = report.errors[0]
    reason = (
        f"output {_shown(output)} does not match its schema at {first['path']}: " + first["message"]
    )
    error = _refusal(output, reason, first["path"], list(report.errors))
    error.details["schema_path"] = first["schema_path"]
    if report.omitted:
        error.details["omitted"] = report.omitted
    raise error


def _refusal(output: str, message: str, path: str, errors: list[dict[str, str]]) -> ProtocolError:
    """400 ``MALFORMED`` about one output: ``details.path`` is inside the output document."""
    return ProtocolError(
        ErrorCode.MALFORMED,
        message,
        requirement=REVIEW,
        details={"output": output, "path": path, "errors": errors},
    )


def _shown(name: str) -> str:
    """A name quoted for a message, cut short: output names may be long."""
    return repr(name if len(name) <= 80 else name[:79] + "…")
