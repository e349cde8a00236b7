"""The Work Contract (wire.md §10, R10.1-01): a versioned schema, validated field by field.

A contract arrives inside ``work.propose``, ``work.authorize`` and ``work.offer``. The
authority refuses it with ``CONTRACT_INVALID`` naming *every* bad field by JSON path, so a
client fixes its contract in one round trip rather than one field per attempt.

Layout: a tiny error collector, generic checkers that append to it, then one checker per
contract field grouped by the item of R10.1-01 it serves, and a table that ties field names
to checkers. Free prose lives only in ``notes`` (R10.1-06) and never stands in for a field:
every other field is required whatever the notes say (R10.1-07).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from .artifacts.deterministic import MAX_CHECKS_PER_CRITERION, validate_check
from .artifacts.jsonpath import format_path
from .artifacts.schemas import schema_problems
from .canonical import canonical_bytes, digest, is_digest
from .errors import ErrorCode, ProtocolError
from .identifiers import is_id
from .strictjson import MAX_SAFE_INTEGER
from .timefmt import parse_timestamp
from .validation import BUDGET_DIMENSIONS, is_number

CONTRACT_SCHEMA = "mwp.contract/1"
REQUIREMENT = "R10.1-01"

MAX_TEXT = 10_000
MAX_NOTES = 100_000
#: details.errors is capped so a hostile contract cannot make the answer huge; the count of
#: the others is given as ``omitted``.
MAX_REPORTED_ERRORS = 200

METHODS = ("deterministic", "agent_review", "human_review")
DEPENDENCY_POLICIES = ("all_verified", "all_terminal")
URGENCIES = ("low", "normal", "high", "critical")
BUSINESS_IMPACTS = ("low", "medium", "high", "critical")
RISK_CLASSES = ("low", "medium", "high", "critical")
DEFAULT_APPROVALS_REQUIRED = 1

#: Keys that never count as a change of substance (R10.1-05): prose, and the authority's counter.
_NOT_SUBSTANTIAL = ("notes", "revision")

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --- the error collector -------------------------------------------------------------------


class _Errors:
    """Bad fields gathered while walking a contract, in the order they were found."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def add(self, path: str, message: str) -> None:
        self.items.append({"path": path, "message": message})

    def raise_if_any(self) -> None:
        if not self.items:
            return
        count = len(self.items)
        paths = [item["path"] for item in self.items]
        shown = ", ".join(paths[:5]) + (f" and {count - 5} more" if count > 5 else "")
        if count == 1:
            summary = f"1 field is invalid: {shown} ({self.items[0]['message']})"
        else:
            summary = f"{count} fields are invalid: {shown}"
        details: dict[str, Any] = {"errors": self.items[:MAX_REPORTED_ERRORS]}
        if count > MAX_REPORTED_ERRORS:
            details["omitted"] = count - MAX_REPORTED_ERRORS
        raise ProtocolError(
            ErrorCode.CONTRACT_INVALID, summary, requirement=REQUIREMENT, details=details
        )


def _child(path: str, key: object) -> str:
    """``$.a.b`` for plain keys, ``$.a["odd key"]`` otherwise, so every path is unambiguous."""
    if isinstance(key, str) and _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(str(key), ensure_ascii=False)}]"


# --- generic checkers: each appends what is wrong and says whether the value is usable -----


def _object(
    errors: _Errors,
    value: object,
    path: str,
    *,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    open_ended: bool = False,
) -> dict[str, Any] | None:
    """An object with every ``required`` key; only ``optional`` others unless ``open_ended``."""
    if not isinstance(value, dict):
        errors.add(path, "expected an object")
        return None
    for name in required:
        if name not in value:
            errors.add(_child(path, name), "missing")
    allowed = set(required) | set(optional)
    for name in value:
        if not open_ended and name not in allowed:
            errors.add(_child(path, name), "unknown field")
    return value


def _list(errors: _Errors, value: object, path: str, *, non_empty: bool = False) -> list | None:
    if not isinstance(value, list):
        errors.add(path, "expected a list")
        return None
    if non_empty and not value:
        errors.add(path, "expected at least one entry")
        return None
    return value


def _text(errors: _Errors, value: object, path: str, *, max_length: int = MAX_TEXT) -> bool:
    """A string with something in it besides whitespace, at most ``max_length`` characters."""
    if not isinstance(value, str) or not value.strip():
        errors.add(path, "expected a non-empty string")
        return False
    if len(value) > max_length:
        errors.add(path, f"longer than {max_length} characters")
        return False
    return True


def _texts(errors: _Errors, value: object, path: str) -> None:
    """A list (possibly empty) of non-empty strings."""
    items = _list(errors, value, path)
    for index, item in enumerate(items or ()):
        _text(errors, item, f"{path}[{index}]")


def _choice(errors: _Errors, value: object, choices: tuple[str, ...], path: str) -> None:
    if not isinstance(value, str) or value not in choices:
        errors.add(path, "expected one of " + ", ".join(choices))


def _integer(errors: _Errors, value: object, path: str, *, minimum: int) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        errors.add(path, "expected an integer")
        return False
    if value < minimum:
        errors.add(path, f"expected an integer of at least {minimum}")
        return False
    if value > MAX_SAFE_INTEGER:
        errors.add(path, f"integers are limited to {MAX_SAFE_INTEGER}")
        return False
    return True


def _number(errors: _Errors, value: object, path: str, *, minimum: float) -> bool:
    """A JSON number (never a bool) at least ``minimum``, integers within the safe range."""
    if not is_number(value):
        errors.add(path, "expected a number")
        return False
    if value < minimum:  # type: ignore[operator]
        errors.add(path, f"expected a number of at least {minimum:g}")
        return False
    # Beyond this an integer loses precision in other languages and has no RFC 8785 form.
    if isinstance(value, int) and value > MAX_SAFE_INTEGER:
        errors.add(path, f"integers are limited to ±{MAX_SAFE_INTEGER}")
        return False
    return True


# --- the version ---------------------------------------------------------------------------


def _check_schema(errors: _Errors, value: object, path: str) -> None:
    """The contract is versioned (R10.1-01): only ``mwp.contract/1`` is understood here."""
    if value == CONTRACT_SCHEMA:
        return
    if isinstance(value, str):
        shown = value if len(value) <= 100 else value[:100] + "…"
        errors.add(path, f"unsupported contract schema {shown!r}; supported: {CONTRACT_SCHEMA}")
    else:
        errors.add(path, f"expected the string {CONTRACT_SCHEMA!r}")


# --- R10.1-01(a): a goal and required outputs ----------------------------------------------


def _check_goal(errors: _Errors, value: object, path: str) -> None:
    _text(errors, value, path)


def _check_outputs(errors: _Errors, value: object, path: str) -> None:
    outputs = _list(errors, value, path, non_empty=True) or ()
    for index, item in enumerate(outputs):
        where = f"{path}[{index}]"
        output = _object(errors, item, where, required=("name", "media_type", "schema"))
        if output is None:
            continue
        if "name" in output:
            _text(errors, output["name"], f"{where}.name")
        if "media_type" in output:
            _text(errors, output["media_type"], f"{where}.media_type")
        if "schema" in output:
            _check_output_schema(errors, output["schema"], f"{where}.schema")
    _check_schema_output_names(errors, outputs, path)


def _check_schema_output_names(errors: _Errors, outputs: Sequence[object], path: str) -> None:
    """An output with an inline schema is the only output of its name.

    work.submit maps an output *name* to one artifact, which is then held to that output's
    schema (R13.2-03 step 1); two outputs of one name with a schema between them would leave
    open which schema applies. Duplicate names without inline schemas stay valid, as before.
    """
    named = [
        (index, item["name"], isinstance(item.get("schema"), dict))
        for index, item in enumerate(outputs)
        if isinstance(item, dict) and isinstance(item.get("name"), str)
    ]
    with_schema = {name for _, name, has_schema in named if has_schema}
    first_seen: dict[str, int] = {}
    for index, name, _ in named:
        if name not in first_seen:
            first_seen[name] = index
        elif name in with_schema:
            first = first_seen[name]
            message = f"duplicate name of an output with an inline schema (first at [{first}])"
            errors.add(f"{path}[{index}].name", message)


def _check_output_schema(errors: _Errors, value: object, path: str) -> None:
    """``null``, a schema reference (string) or an inline JSON Schema (Draft 2020-12).

    The authority holds a submitted output to an inline schema (R13.2-03 step 1), so the
    schema must be one it can evaluate: valid against the meta-schema, with every ``$ref``
    resolving inside it (nothing is fetched). A reference is only recorded.
    """
    if value is None:
        return
    if isinstance(value, str):
        _text(errors, value, path)
        return
    if not isinstance(value, dict):
        errors.add(path, "expected null, a string or an object")
        return
    try:
        canonical_bytes(value)
    except ValueError:  # a caller that skipped the strict parser handed us a non-JSON value
        errors.add(path, "not a JSON value")
        return
    for location, message in schema_problems(value):
        errors.add(format_path(location, path), message)


# --- R10.1-01(b): acceptance criteria and required Evidence --------------------------------


def _check_acceptance_criteria(errors: _Errors, value: object, path: str) -> None:
    first_seen: dict[str, int] = {}
    for index, item in enumerate(_list(errors, value, path, non_empty=True) or ()):
        where = f"{path}[{index}]"
        criterion = _object(
            errors,
            item,
            where,
            required=("id", "description", "method", "evidence"),
            optional=("checks",),
        )
        if criterion is None:
            continue
        if "id" in criterion:
            _check_criterion_id(errors, criterion["id"], f"{where}.id", index, first_seen)
        if "description" in criterion:
            _text(errors, criterion["description"], f"{where}.description")
        if "method" in criterion:
            _choice(errors, criterion["method"], METHODS, f"{where}.method")
        if "evidence" in criterion:
            _texts(errors, criterion["evidence"], f"{where}.evidence")
        if "checks" in criterion:
            _check_checks(errors, criterion, f"{where}.checks")


def _check_checks(errors: _Errors, criterion: dict[str, Any], path: str) -> None:
    """Named deterministic checks the authority runs (R13.2-03 step 2); see
    ``artifacts/deterministic.py``. Only a deterministic criterion has them: a review by an
    agent or a person is not a rule the authority can run."""
    if criterion.get("method") != "deterministic":
        errors.add(path, "checks are allowed only when method is deterministic")
        return
    checks = _list(errors, criterion["checks"], path)
    if checks is None:
        return
    if len(checks) > MAX_CHECKS_PER_CRITERION:
        errors.add(path, f"at most {MAX_CHECKS_PER_CRITERION} checks per criterion")
        return
    for index, check in enumerate(checks):
        for where, message in validate_check(check, f"{path}[{index}]"):
            errors.add(where, message)


def _check_criterion_id(
    errors: _Errors, value: object, path: str, index: int, first_seen: dict[str, int]
) -> None:
    """Evidence and verdicts name a criterion by id, so ids are unique within the contract."""
    if not is_id(value):
        errors.add(path, "an id is 1..128 characters of [A-Za-z0-9._:-]")
        return
    assert isinstance(value, str)
    if value in first_seen:
        errors.add(path, f"duplicate criterion id (first at [{first_seen[value]}])")
    else:
        first_seen[value] = index


# --- R10.1-01(c): input and dependency references ------------------------------------------


def _check_inputs(errors: _Errors, value: object, path: str) -> None:
    for index, item in enumerate(_list(errors, value, path) or ()):
        where = f"{path}[{index}]"
        entry = _object(errors, item, where, required=("ref",))
        if entry is not None and "ref" in entry and not is_digest(entry["ref"]):
            errors.add(f"{where}.ref", "expected a digest sha256:<64 lowercase hex>")


def _check_dependency_policy(errors: _Errors, value: object, path: str) -> None:
    _choice(errors, value, DEPENDENCY_POLICIES, path)


# --- R10.1-01(d): allowed tools, data, operations and resource constraints ----------------


def _check_allowed(errors: _Errors, value: object, path: str) -> None:
    allowed = _object(errors, value, path, required=("tools", "data", "operations"))
    for name in ("tools", "data", "operations"):
        if allowed is not None and name in allowed:
            _texts(errors, allowed[name], f"{path}.{name}")


def _check_resources(errors: _Errors, value: object, path: str) -> None:
    """``max_concurrency`` is required; further named limits are non-negative numbers."""
    resources = _object(errors, value, path, required=("max_concurrency",), open_ended=True)
    for name, amount in (resources or {}).items():
        where = _child(path, name)
        if name == "max_concurrency":
            _integer(errors, amount, where, minimum=1)
        elif not isinstance(name, str) or not name:
            errors.add(where, "a resource is named by a non-empty string")
        else:
            _number(errors, amount, where, minimum=0)


# --- R10.1-01(e): required capability IDs and versions -------------------------------------


def _check_capabilities(errors: _Errors, value: object, path: str) -> None:
    for index, item in enumerate(_list(errors, value, path) or ()):
        where = f"{path}[{index}]"
        capability = _object(errors, item, where, required=("id", "version"))
        if capability is None:
            continue
        for name in ("id", "version"):
            if name in capability:
                _text(errors, capability[name], f"{where}.{name}")


# --- R10.1-01(f): deadline, requested urgency and business impact --------------------------


def _check_deadline(errors: _Errors, value: object, path: str) -> None:
    try:
        parse_timestamp(value)
    except ValueError:
        errors.add(path, "expected an RFC 3339 UTC timestamp ending in Z")


def _check_urgency(errors: _Errors, value: object, path: str) -> None:
    _choice(errors, value, URGENCIES, path)


def _check_business_impact(errors: _Errors, value: object, path: str) -> None:
    _choice(errors, value, BUSINESS_IMPACTS, path)


# --- R10.1-01(g): budgets in six dimensions, as applicable ---------------------------------


def _check_budgets(errors: _Errors, value: object, path: str) -> None:
    """Non-negative numbers by dimension; a dimension left out is unlimited (wire.md §10)."""
    if not isinstance(value, dict):
        errors.add(path, "expected an object keyed by budget dimension")
        return
    for name, amount in value.items():
        where = _child(path, name)
        if name not in BUDGET_DIMENSIONS:
            errors.add(where, "unknown budget dimension; one of " + ", ".join(BUDGET_DIMENSIONS))
        else:
            _number(errors, amount, where, minimum=0)


# --- R10.1-01(h): retry and backoff policy -------------------------------------------------


def _check_retry(errors: _Errors, value: object, path: str) -> None:
    retry = _object(
        errors,
        value,
        path,
        required=("max_attempts", "initial_backoff_s", "backoff_multiplier", "max_backoff_s"),
    )
    if retry is None:
        return
    if "max_attempts" in retry:
        _integer(errors, retry["max_attempts"], f"{path}.max_attempts", minimum=1)
    initial_ok = "initial_backoff_s" in retry and _number(
        errors, retry["initial_backoff_s"], f"{path}.initial_backoff_s", minimum=0
    )
    if "backoff_multiplier" in retry:
        _number(errors, retry["backoff_multiplier"], f"{path}.backoff_multiplier", minimum=1)
    if "max_backoff_s" in retry:
        where = f"{path}.max_backoff_s"
        ceiling = retry["max_backoff_s"]
        valid = _number(errors, ceiling, where, minimum=0)
        if valid and initial_ok and ceiling < retry["initial_backoff_s"]:
            errors.add(where, "less than initial_backoff_s")


# --- R10.1-01(h): timeout and cost policy (issue 35 §8; optional, additive) -------------------


def _check_timeout(errors: _Errors, value: object, path: str) -> None:
    """``attempt_s``: the most wall-clock seconds one attempt may run (at least 1)."""
    timeout = _object(errors, value, path, required=("attempt_s",))
    if timeout is not None and "attempt_s" in timeout:
        _number(errors, timeout["attempt_s"], f"{path}.attempt_s", minimum=1)


def _check_cost_policy(errors: _Errors, value: object, path: str) -> None:
    """``retry_below``: the share (0, 1] of each budget under which a retry may start."""
    policy = _object(errors, value, path, required=("retry_below",))
    if policy is None or "retry_below" not in policy:
        return
    where = f"{path}.retry_below"
    share = policy["retry_below"]
    if _number(errors, share, where, minimum=0) and not 0 < share <= 1:
        errors.add(where, "expected a share above 0 and at most 1")


# --- R10.1-01(i): risk classification and pre-execution approval ---------------------------


def _check_risk(errors: _Errors, value: object, path: str) -> None:
    risk = _object(
        errors,
        value,
        path,
        required=("class", "requires_execution_approval"),
        optional=("approvals_required",),
    )
    if risk is None:
        return
    if "class" in risk:
        _choice(errors, risk["class"], RISK_CLASSES, f"{path}.class")
    if "requires_execution_approval" in risk and not isinstance(
        risk["requires_execution_approval"], bool
    ):
        errors.add(f"{path}.requires_execution_approval", "expected true or false")
    if "approvals_required" in risk:
        _integer(errors, risk["approvals_required"], f"{path}.approvals_required", minimum=1)


# --- R10.1-06: prose may supplement the fields ---------------------------------------------


def _check_notes(errors: _Errors, value: object, path: str) -> None:
    if not isinstance(value, str):
        errors.add(path, "expected a string")
    elif len(value) > MAX_NOTES:
        errors.add(path, f"longer than {MAX_NOTES} characters")


# --- the schema as a table -----------------------------------------------------------------

_Checker = Callable[[_Errors, object, str], None]

#: Every field of ``mwp.contract/1`` in wire.md order, with its checker.
FIELDS: dict[str, _Checker] = {
    "schema": _check_schema,
    "goal": _check_goal,
    "outputs": _check_outputs,
    "acceptance_criteria": _check_acceptance_criteria,
    "inputs": _check_inputs,
    "dependency_policy": _check_dependency_policy,
    "allowed": _check_allowed,
    "resources": _check_resources,
    "capabilities": _check_capabilities,
    "deadline": _check_deadline,
    "urgency": _check_urgency,
    "business_impact": _check_business_impact,
    "budgets": _check_budgets,
    "retry": _check_retry,
    "timeout": _check_timeout,
    "cost_policy": _check_cost_policy,
    "risk": _check_risk,
    "notes": _check_notes,
}
OPTIONAL_FIELDS = ("timeout", "cost_policy", "notes")
#: R10.1-07: every field but the prose is required, whatever the prose says.
REQUIRED_FIELDS = tuple(name for name in FIELDS if name not in OPTIONAL_FIELDS)


def validate_contract(contract: object, *, path: str = "$.contract") -> dict[str, Any]:
    """The contract, normalised, or ``CONTRACT_INVALID`` naming every bad field (R10.1-01).

    Normalised means a deep copy with defaults filled: ``risk.approvals_required`` is 1 when
    absent; an absent ``notes`` stays absent. ``details.errors`` lists ``{"path", "message"}``
    for each bad field, fields in schema order and unknown keys last (the first
    :data:`MAX_REPORTED_ERRORS` of them). ``notes`` never excuses a missing field (R10.1-07).
    """
    errors = _Errors()
    if isinstance(contract, dict):
        _check_fields(errors, contract, path)
    else:
        errors.add(path, "expected an object")
    errors.raise_if_any()
    assert isinstance(contract, dict)
    return _with_defaults(contract)


def _check_fields(errors: _Errors, contract: dict[str, Any], path: str) -> None:
    for name, checker in FIELDS.items():
        where = _child(path, name)
        if name in contract:
            checker(errors, contract[name], where)
        elif name in REQUIRED_FIELDS:
            errors.add(where, "missing")
    _check_check_outputs(errors, contract, path)
    for name in contract:
        if name == "revision":
            # R10.1-05: the revision counts the authority's decisions, not the client's.
            errors.add(_child(path, name), "assigned by the authority, not by the client")
        elif name not in FIELDS:
            errors.add(_child(path, name), "unknown field")


def _check_check_outputs(errors: _Errors, contract: dict[str, Any], path: str) -> None:
    """Each check's ``output`` is one the contract declares: the one rule that spans two
    fields, checked once both are known (and only when the outputs themselves are readable,
    so a broken ``outputs`` list is reported once, where it is)."""
    outputs = contract.get("outputs")
    criteria = contract.get("acceptance_criteria")
    if not isinstance(outputs, list) or not isinstance(criteria, list):
        return
    if not all(isinstance(output, dict) for output in outputs):
        return
    declared = {output["name"] for output in outputs if isinstance(output.get("name"), str)}
    for index, criterion in enumerate(criteria):
        checks = criterion.get("checks") if isinstance(criterion, dict) else None
        if (
            not isinstance(checks, list)
            or len(checks) > MAX_CHECKS_PER_CRITERION
            or criterion.get("method") != "deterministic"
        ):
            continue
        for position, check in enumerate(checks):
            output = check.get("output") if isinstance(check, dict) else None
            if isinstance(output, str) and output.strip() and output not in declared:
                where = f"{_child(path, 'acceptance_criteria')}[{index}].checks[{position}].output"
                errors.add(where, "not an output the contract declares")


def _with_defaults(contract: dict[str, Any]) -> dict[str, Any]:
    normalised = copy.deepcopy(contract)
    risk = normalised.get("risk")
    if isinstance(risk, dict):
        risk.setdefault("approvals_required", DEFAULT_APPROVALS_REQUIRED)
    return normalised


def contract_digest(contract: dict[str, Any]) -> str:
    """``sha256:`` of the contract's RFC 8785 canonical bytes; pass the normalised contract."""
    return digest(contract)


def is_substantial_change(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """True when ``new`` differs from ``old`` in anything but ``notes`` (R10.1-05).

    A substantial change raises the revision and needs a renewed acceptance; rewording the
    prose does not, since prose only supplements the fields (R10.1-06). Both sides are
    compared after defaults are filled and in canonical form, so ``approvals_required``
    written out as 1 or left to its default is no change, and ``true`` never equals ``1``.
    A ``revision`` key, should a stored copy carry one, is the authority's counter and not
    content, so it is ignored too.
    """
    return _comparable(old) != _comparable(new)


def _comparable(contract: dict[str, Any]) -> bytes:
    substance = {k: v for k, v in contract.items() if k not in _NOT_SUBSTANTIAL}
    return canonical_bytes(_with_defaults(substance))
