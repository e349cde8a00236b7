"""Named deterministic checks: the business rules a contract can ask the authority to run.

R13.2-03 step 2: "run deterministic tests or business rules where available". A contract's
criterion with ``"method": "deterministic"`` may list ``checks`` (additive to wire.md §10)::

    {"id": "c1", "method": "deterministic", ...,
     "checks": [{"check": "json_path_equals", "output": "report", "path": "$.status",
                 "value": "complete"}]}

Each check has a name, an ``output`` (a name the contract declares) and its own parameters.
The registry :data:`CHECKS` ties a name to two functions: one that validates the parameters
when the contract is validated (so a bad check is ``CONTRACT_INVALID`` up front, not a
surprise at review), and one that a task later runs over the output's bytes.

A run is **total**: any bytes, or ``None`` for an output not mapped to an artifact, give an
evidence result ``{"verdict": "pass"|"fail"|"inconclusive", "summary", "data"}`` (wire.md §9,
R13.2-04) and never raise, so a hostile output can only fail its check, never the task that
records the evidence. ``fail`` means the output does not meet the rule (unparseable JSON
included); ``inconclusive`` means the rule could not be applied (an output beyond
:data:`MAX_CHECKED_OUTPUT_BYTES`, a schema that cannot be evaluated, a check that is not
valid). ``data`` never echoes an object or list from the output, whose keys could include
``reasoning`` and make the evidence unrecordable (R13.2-05).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..canonical import canonical_bytes
from ..errors import ProtocolError
from ..strictjson import parse
from ..validation import is_number
from .jsonpath import JsonPathError, child_path, format_path, parse_path, resolve
from .outputs import MAX_SCHEMA_OUTPUT_BYTES
from .schemas import SchemaUnusable, schema_problems, validate_document

Result = dict[str, Any]
#: ``(JSON path, message)``: what is wrong with a check, in the contract validator's terms
Problem = tuple[str, str]

VERDICTS = ("pass", "fail", "inconclusive")
#: a check reads at most this much; bigger outputs are ``inconclusive``, not parsed
MAX_CHECKED_OUTPUT_BYTES = MAX_SCHEMA_OUTPUT_BYTES
#: per criterion: every check is a task's work at review time
MAX_CHECKS_PER_CRITERION = 32
MAX_TEXT = 10_000
#: a string taken from an output is shown in ``data`` up to this many characters
MAX_SHOWN_TEXT = 200
_COMMON_FIELDS = ("check", "output")


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One named check: its parameters, how they are validated and how it runs."""

    name: str
    #: parameter names beside ``check`` and ``output`` (required or optional)
    params: tuple[str, ...]
    #: the problems of a check's parameters, at contract validation time
    validate: Callable[[dict[str, Any], str], list[Problem]]
    #: the result over an output's bytes (``None``: not mapped), under the size limit
    run: Callable[[dict[str, Any], bytes | None], Result]


def result(verdict: str, summary: str, data: dict[str, Any] | None = None) -> Result:
    """An evidence item's ``result`` (wire.md §9)."""
    return {"verdict": verdict, "summary": summary, "data": data or {}}


# --- shared pieces ------------------------------------------------------------------------


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:79] + "…")


def _text_problems(value: dict[str, Any], name: str, path: str) -> list[Problem]:
    where = child_path(path, name)
    if name not in value:
        return [(where, "missing")]
    text = value[name]
    if not isinstance(text, str) or not text.strip():
        return [(where, "expected a non-empty string")]
    if len(text) > MAX_TEXT:
        return [(where, f"longer than {MAX_TEXT} characters")]
    return []


def _path_problems(value: dict[str, Any], path: str) -> list[Problem]:
    where = child_path(path, "path")
    if "path" not in value:
        return [(where, "missing")]
    try:
        parse_path(value["path"])
    except JsonPathError as exc:
        return [(where, f"not a path of the supported subset ($, .name, ['name'], [0]): {exc}")]
    return []


def _document(data: bytes, output: str) -> tuple[Any, Result | None]:
    """The output parsed as strict JSON, or the ``fail`` result saying why it is not JSON."""
    try:
        return parse(data), None
    except ProtocolError as exc:
        summary = f"output {_shown(output)} is not JSON: {exc.message}"
        return None, result("fail", summary, {"json": False, "reason": exc.message})


def _value_shown(found: bool, value: Any) -> dict[str, Any]:
    """What ``data`` may say about a value taken from an output: scalars only (R13.2-05)."""
    if not found:
        return {"found": False}
    if isinstance(value, dict | list):
        kind = "object" if isinstance(value, dict) else "array"
        return {"found": True, "actual_type": kind, "actual_size": len(value)}
    if isinstance(value, str) and len(value) > MAX_SHOWN_TEXT:
        return {"found": True, "actual": value[:MAX_SHOWN_TEXT], "actual_truncated": True}
    return {"found": True, "actual": value}


# --- schema: the output validates against an inline JSON Schema ---------------------------


def _schema_params(value: dict[str, Any], path: str) -> list[Problem]:
    where = child_path(path, "schema")
    if "schema" not in value:
        return [(where, "missing")]
    schema = value["schema"]
    if not isinstance(schema, dict):
        return [(where, "expected an inline JSON Schema (an object)")]
    return [
        (format_path(location, where), message) for location, message in schema_problems(schema)
    ]


def _run_schema(check: dict[str, Any], data: bytes | None) -> Result:
    output = check["output"]
    assert data is not None
    document, refusal = _document(data, output)
    if refusal is not None:
        return refusal
    try:
        report = validate_document(document, check["schema"])
    except SchemaUnusable as exc:
        return result("inconclusive", f"the schema cannot be evaluated: {exc}", {})
    errors = [dict(error) for error in report.errors]
    if report.valid:
        return result("pass", f"output {_shown(output)} matches the schema", {"errors": []})
    first = errors[0]
    summary = (
        f"output {_shown(output)} does not match the schema at {first['path']}: {first['message']}"
    )
    return result("fail", summary, {"errors": errors, "omitted": report.omitted})


# --- digest_present: the output is mapped to a submitted artifact -------------------------


def _no_params(value: dict[str, Any], path: str) -> list[Problem]:
    return []


def _run_digest_present(check: dict[str, Any], data: bytes | None) -> Result:
    output = check["output"]
    if data is None:
        return result("fail", f"output {_shown(output)} is not mapped to an artifact", {})
    return result("pass", f"output {_shown(output)} is mapped to an artifact", {})


# --- json_path_equals: the value at a path equals the expected one -----------------------


def _equals_params(value: dict[str, Any], path: str) -> list[Problem]:
    problems = _path_problems(value, path)
    where = child_path(path, "value")
    if "value" not in value:
        problems.append((where, "missing"))
    else:
        try:
            canonical_bytes(value["value"])
        except ValueError:  # a caller that skipped the strict parser handed us a non-JSON value
            problems.append((where, "not a JSON value"))
    return problems


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality: ``1 == 1.0``, ``true != 1``, objects regardless of key order.

    Two JSON values are equal exactly when their RFC 8785 bytes are, which also makes this
    the same equality the schema check's ``uniqueItems`` uses.
    """
    return canonical_bytes(left) == canonical_bytes(right)


def _run_json_path_equals(check: dict[str, Any], data: bytes | None) -> Result:
    output, path = check["output"], check["path"]
    assert data is not None
    document, refusal = _document(data, output)
    if refusal is not None:
        return refusal
    found, actual = resolve(document, parse_path(path))
    shown = {"path": path, **_value_shown(found, actual)}
    if not found:
        return result("fail", f"nothing at {path} in output {_shown(output)}", shown)
    if json_equal(actual, check["value"]):
        return result("pass", f"{path} in output {_shown(output)} is the expected value", shown)
    return result("fail", f"{path} in output {_shown(output)} differs from the expected", shown)


# --- json_path_within: the number at a path lies within bounds ----------------------------


def _within_params(value: dict[str, Any], path: str) -> list[Problem]:
    problems = _path_problems(value, path)
    bounds_ok = True
    for name in ("min", "max"):
        if name in value and not is_number(value[name]):
            problems.append((child_path(path, name), "expected a number"))
            bounds_ok = False
    if "min" not in value and "max" not in value:
        problems.append((path, "expected min, max or both"))
    elif bounds_ok and "min" in value and "max" in value and value["max"] < value["min"]:
        problems.append((child_path(path, "max"), "less than min"))
    return problems


def _run_json_path_within(check: dict[str, Any], data: bytes | None) -> Result:
    output, path = check["output"], check["path"]
    low, high = check.get("min"), check.get("max")
    assert data is not None
    document, refusal = _document(data, output)
    if refusal is not None:
        return refusal
    found, actual = resolve(document, parse_path(path))
    shown = {"path": path, "min": low, "max": high, **_value_shown(found, actual)}
    where = f"{path} in output {_shown(output)}"
    if not found:
        return result("fail", f"nothing at {where}", shown)
    if not is_number(actual):
        return result("fail", f"{where} is not a number", shown)
    if (low is not None and actual < low) or (high is not None and actual > high):
        return result("fail", f"{where} is outside [{low}, {high}]", shown)
    return result("pass", f"{where} is within [{low}, {high}]", shown)


# --- text_contains: the output, as UTF-8 text, contains a string --------------------------


def _contains_params(value: dict[str, Any], path: str) -> list[Problem]:
    problems = _text_problems(value, "text", path)
    if "case_sensitive" in value and not isinstance(value["case_sensitive"], bool):
        problems.append((child_path(path, "case_sensitive"), "expected true or false"))
    return problems


def _run_text_contains(check: dict[str, Any], data: bytes | None) -> Result:
    output, needle = check["output"], check["text"]
    case_sensitive = check.get("case_sensitive", True)
    assert data is not None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        summary = f"output {_shown(output)} is not UTF-8 text (invalid byte at {exc.start})"
        return result("fail", summary, {"utf8": False, "offset": exc.start})
    if not case_sensitive:
        # casefold, not lower: "Straße" contains "STRASSE" when case does not matter
        text, needle = text.casefold(), needle.casefold()
    found = needle in text
    verb = "contains" if found else "does not contain"
    summary = f"output {_shown(output)} {verb} the expected text"
    return result("pass" if found else "fail", summary, {"found": found})


# --- the registry -------------------------------------------------------------------------

CHECKS: dict[str, CheckSpec] = {
    spec.name: spec
    for spec in (
        CheckSpec("schema", ("schema",), _schema_params, _run_schema),
        CheckSpec("digest_present", (), _no_params, _run_digest_present),
        CheckSpec("json_path_equals", ("path", "value"), _equals_params, _run_json_path_equals),
        CheckSpec(
            "json_path_within", ("path", "min", "max"), _within_params, _run_json_path_within
        ),
        CheckSpec(
            "text_contains", ("text", "case_sensitive"), _contains_params, _run_text_contains
        ),
    )
}


def validate_check(value: object, path: str) -> list[Problem]:
    """Every problem of one check, as ``(JSON path, message)``; empty when it is valid.

    Whether ``output`` names an output the contract declares is the contract validator's
    question (it sees the whole contract); this answers everything else.
    """
    if not isinstance(value, dict):
        return [(path, "expected an object")]
    problems: list[Problem] = []
    name = value.get("check")
    spec = CHECKS.get(name) if isinstance(name, str) else None
    if "check" not in value:
        problems.append((child_path(path, "check"), "missing"))
    elif spec is None:
        problems.append((child_path(path, "check"), "expected one of " + ", ".join(CHECKS)))
    problems.extend(_text_problems(value, "output", path))
    if spec is None:
        return problems
    problems.extend(spec.validate(value, path))
    allowed = set(_COMMON_FIELDS) | set(spec.params)
    problems.extend((child_path(path, key), "unknown field") for key in value if key not in allowed)
    return problems


def run_check(check: object, output_bytes: bytes | None) -> Result:
    """The result of one check over one output's bytes (``None``: not mapped); never raises."""
    problems = validate_check(check, "$")
    if problems:
        where, message = problems[0]
        return result("inconclusive", f"the check is not valid: {where}: {message}", {})
    assert isinstance(check, dict)
    spec = CHECKS[check["check"]]
    output = check["output"]
    if spec.name == "digest_present":
        outcome = spec.run(check, output_bytes)
    elif output_bytes is None:
        outcome = result("fail", f"output {_shown(output)} is not mapped to an artifact", {})
    elif len(output_bytes) > MAX_CHECKED_OUTPUT_BYTES:
        summary = (
            f"output {_shown(output)} is {len(output_bytes)} bytes; checks read at most "
            f"{MAX_CHECKED_OUTPUT_BYTES}"
        )
        outcome = result("inconclusive", summary, {"size": len(output_bytes)})
    else:
        outcome = spec.run(check, output_bytes)
    outcome["data"] = {"check": spec.name, "output": output, **outcome["data"]}
    return outcome


def run_criterion_checks(criterion: dict[str, Any], outputs: dict[str, bytes | None]) -> Result:
    """One result for all the checks of one criterion (R13.2-03 step 2).

    ``fail`` if any check fails; else ``inconclusive`` if any is; else ``pass``. A criterion
    without checks is ``inconclusive``: there is nothing the authority can decide for it.
    ``data.checks`` lists every check's own result, in the contract's order.
    """
    checks = criterion.get("checks")
    if not isinstance(checks, list) or not checks:
        return result("inconclusive", "no deterministic checks declared", {"checks": []})
    results = [
        run_check(check, outputs.get(check["output"]) if _names_output(check) else None)
        for check in checks
    ]
    verdicts = [item["verdict"] for item in results]
    counted = f"{len(results)} check{'s' if len(results) != 1 else ''}"
    for verdict in ("fail", "inconclusive"):
        hits = [item["data"].get("check", "?") for item in results if item["verdict"] == verdict]
        if hits:
            named = ", ".join(hits[:3]) + (f" and {len(hits) - 3} more" if len(hits) > 3 else "")
            summary = (
                f"{len(hits)} of {counted} {'failed' if verdict == 'fail' else verdict}: {named}"
            )
            return result(verdict, summary, {"checks": results})
    assert set(verdicts) == {"pass"}
    return result("pass", f"all {counted} passed", {"checks": results})


def _names_output(check: object) -> bool:
    return isinstance(check, dict) and isinstance(check.get("output"), str)
