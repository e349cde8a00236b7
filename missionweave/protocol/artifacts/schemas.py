"""Inline JSON Schemas of a Work Contract (R13.2-03 step 1): checked, then applied to outputs.

A contract may give an output an inline schema (``outputs[i].schema``) or a ``schema`` check
(``acceptance_criteria[i].checks[j]``). Both are JSON Schema Draft 2020-12, evaluated here
with two rules that keep the evaluation a pure function of (schema, document):

- **Nothing is fetched.** jsonschema's default registry still downloads a remote ``$ref``
  (a deprecated fallback): that is I/O inside the protocol core and a server-side request
  forgery for whoever writes the contract. Every validator here gets an empty
  ``referencing.Registry``, so only references inside the schema itself resolve, and the
  contract validator refuses any other reference up front.
- **``format`` is an annotation, not an assertion** (Draft 2020-12's default). Which formats
  jsonschema can assert depends on optional packages installed next to it, so asserting them
  would let two authorities disagree about the same output.

And one rule that keeps it quick enough to run under the group's lock:

- **Patterns run on RE2**, in time linear in the text (``patterns``): ``pattern``,
  ``patternProperties`` and the keywords that consult them are replaced
  (``pattern_keywords``), and the contract validator checks every pattern with the same
  engine through the meta-schema's ``format: regex``, so a pattern RE2 cannot run (a
  lookahead, a backreference) is refused with the contract, not met at submission.

``uniqueItems`` is replaced by a linear version: jsonschema compares unsortable items (any
list of objects) pair by pair, and an 8 MiB output of a million small objects would hold a
submission for hours. Canonical bytes (RFC 8785) are equal exactly when two JSON values are
(``1`` and ``1.0`` alike, ``true`` and ``1`` not), so a set of them decides the same thing.

Errors are returned sorted by (document path, message), at most :data:`MAX_COLLECTED_ERRORS`
collected, so a response or evidence item built from them is the same on every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from ..canonical import canonical_bytes
from . import pattern_keywords
from .jsonpath import Location, format_path
from .patterns import PatternRefused, check_pattern

#: the dialect of every inline schema; ``$schema`` may be absent or say exactly this
DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: errors gathered before sorting: enough to show the first few, bounded for a hostile document
MAX_COLLECTED_ERRORS = 100
#: how many errors a refusal or an evidence item shows
MAX_SHOWN_ERRORS = 10
#: jsonschema puts the offending value's ``repr`` in its messages; an 8 MiB value must not
#: end up in a response or in the log
MAX_MESSAGE = 300
#: a schema that loops without consuming the document (``{"$ref": "#"}``) recurses on any
#: value; these cheap probes catch the usual cases when the contract is validated
_PROBES: tuple[Any, ...] = (None, True, 0, 0.5, "", [], {}, [None], {"": None})

_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef")

#: an empty registry without ``retrieve``: an unknown URI is ``Unresolvable``, never fetched
_NO_RETRIEVAL: Registry[Any] = Registry()


def _is_pattern(instance: object) -> bool:
    """The meta-schema's ``format: regex`` (every ``pattern`` and ``patternProperties`` key),
    asserted by the engine that runs the patterns."""
    if isinstance(instance, str):
        check_pattern(instance)
    return True


#: the draft's format checks for the contract's schemas, with ``regex`` meaning RE2's syntax
_SCHEMA_FORMATS = FormatChecker(formats=())
_SCHEMA_FORMATS.checkers.update(Draft202012Validator.FORMAT_CHECKER.checkers)
_SCHEMA_FORMATS.checks("regex", raises=PatternRefused)(_is_pattern)
_META_VALIDATOR = Draft202012Validator(
    Draft202012Validator.META_SCHEMA, format_checker=_SCHEMA_FORMATS
)


def _unique_items(
    validator: Validator, unique: object, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """``uniqueItems`` in linear time, without ``repr`` of the whole list in the message."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: dict[bytes, int] = {}
    for index, item in enumerate(instance):
        key = canonical_bytes(item)
        if key in seen:
            yield ValidationError(
                f"item [{index}] repeats item [{seen[key]}]; items must be unique"
            )
            return
        seen[key] = index


_Validator = validators.extend(
    Draft202012Validator,
    validators={
        "uniqueItems": _unique_items,
        "pattern": pattern_keywords.pattern,
        "patternProperties": pattern_keywords.pattern_properties,
        "additionalProperties": pattern_keywords.additional_properties,
        "unevaluatedProperties": pattern_keywords.unevaluated_properties,
    },
)


class SchemaUnusable(Exception):
    """The schema cannot be evaluated on this document (an unresolvable or looping reference).

    The contract validator refuses the usual causes; this is what remains for the callers to
    report as a fault of the contract, never of the output.
    """


@dataclass(frozen=True, slots=True)
class SchemaReport:
    """The outcome of validating one document: the first errors and how many were collected."""

    errors: tuple[dict[str, str], ...]
    collected: int

    @property
    def valid(self) -> bool:
        return self.collected == 0

    @property
    def omitted(self) -> int:
        """Collected errors not shown (more may exist beyond :data:`MAX_COLLECTED_ERRORS`)."""
        return self.collected - len(self.errors)


# --- when the contract is validated --------------------------------------------------------


def schema_problems(schema: dict[str, Any]) -> list[tuple[Location, str]]:
    """Why ``schema`` is not a usable inline schema: ``(location inside it, message)`` pairs.

    In order: the Draft 2020-12 meta-schema (every violation, sorted by location), then the
    dialect, then each reference that does not resolve inside the schema, then a reference
    loop. Empty when the schema is usable.
    """
    problems = [
        (tuple(error.absolute_path), _meta_message(error))
        for error in _META_VALIDATOR.iter_errors(schema)
    ]
    if problems:
        return sorted(problems, key=_sort_key)
    dialect = schema.get("$schema", DIALECT)
    if dialect != DIALECT:
        return [(("$schema",), f"inline schemas are JSON Schema Draft 2020-12 ({DIALECT})")]
    try:
        problems = list(_unresolvable_references(schema))
    except ValueError as exc:  # urllib's answer to an $id or $ref such as "http://[x"
        return [((), f"an identifier or reference is not a usable URI: {_short(str(exc))}")]
    if problems:
        return problems
    try:
        for probe in _PROBES:
            validate_document(probe, schema)
    except SchemaUnusable as exc:
        return [((), str(exc))]
    return []


def _meta_message(error: ValidationError) -> str:
    """jsonschema's message, except for a refused pattern, whose own reason is clearer
    than "... is not a 'regex'"."""
    if isinstance(error.cause, PatternRefused):
        return _short(str(error.cause))
    return _short(error.message)


def _sort_key(problem: tuple[Location, str]) -> tuple[str, str]:
    return format_path(problem[0]), problem[1]


def _unresolvable_references(schema: dict[str, Any]) -> Iterator[tuple[Location, str]]:
    """Each ``$ref``/``$dynamicRef`` that names nothing inside the schema.

    The walk follows referencing's own idea of where subschemas are (so a ``const`` holding
    a ``"$ref"`` key is data, not a reference) and resolves each reference against the base
    URI in force there, as validation will.
    """
    root = DRAFT202012.create_resource(schema)
    root_uri = root.id() or ""
    registry = _NO_RETRIEVAL.with_resource(uri=root_uri, resource=root).crawl()
    pending: list[tuple[Resource[Any], str]] = [(root, root_uri)]
    while pending:
        resource, base = pending.pop()
        base = urljoin(base, resource.id() or "")
        contents = resource.contents
        if isinstance(contents, dict):
            for keyword in _REFERENCE_KEYWORDS:
                reference = contents.get(keyword)
                if not isinstance(reference, str):
                    continue
                try:
                    registry.resolver(base_uri=base).lookup(reference)
                except Unresolvable:
                    yield (
                        (*_location_of(schema, contents), keyword),
                        "a reference must resolve inside the schema; nothing is fetched",
                    )
        pending.extend((child, base) for child in resource.subresources())


def _location_of(schema: dict[str, Any], target: dict[str, Any]) -> Location:
    """Where the object ``target`` sits inside ``schema`` (by identity), for the error path."""
    stack: list[tuple[Any, Location]] = [(schema, ())]
    while stack:
        node, location = stack.pop()
        if node is target:
            return location
        if isinstance(node, dict):
            stack.extend((child, (*location, key)) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, (*location, index)) for index, child in enumerate(node))
    return ()


# --- when an output is checked ---------------------------------------------------------------


def validate_document(document: Any, schema: dict[str, Any]) -> SchemaReport:
    """The errors of ``document`` against ``schema``, sorted, or :class:`SchemaUnusable`.

    ``document`` is what the strict parser returned (wire.md §1 rules), which is what makes
    every value in it canonicalisable for ``uniqueItems``.
    """
    validator = _Validator(schema, registry=_NO_RETRIEVAL)
    collected: list[dict[str, str]] = []
    try:
        for error in validator.iter_errors(document):
            collected.append(_describe(error))
            if len(collected) == MAX_COLLECTED_ERRORS:
                break
    except Unresolvable as exc:
        raise SchemaUnusable(f"a reference does not resolve: {_short(str(exc))}") from None
    except ValueError as exc:  # an $id or $ref urllib cannot parse
        raise SchemaUnusable(f"a URI in the schema is not usable: {_short(str(exc))}") from None
    except RecursionError:
        raise SchemaUnusable("a reference loops back without consuming the document") from None
    except PatternRefused as exc:  # a contract accepted before its patterns were checked
        raise SchemaUnusable(_short(str(exc))) from None
    collected.sort(key=lambda item: (item["path"], item["message"]))
    return SchemaReport(errors=tuple(collected[:MAX_SHOWN_ERRORS]), collected=len(collected))


def _describe(error: ValidationError) -> dict[str, str]:
    """One error as ``{path, message, schema_path}``; both paths are ``$``-rooted.

    ``schema_path`` is jsonschema's keyword path, which goes through ``$ref`` rather than to
    where the referenced subschema is written.
    """
    return {
        "path": format_path(tuple(error.absolute_path)),
        "message": _short(error.message),
        "schema_path": format_path(tuple(error.absolute_schema_path)),
    }


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"
