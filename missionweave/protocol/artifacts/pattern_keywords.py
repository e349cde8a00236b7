"""The Draft 2020-12 keywords that run a contract's patterns, on RE2 (see ``patterns``).

jsonschema runs patterns with Python's backtracking ``re`` in four places: ``pattern``,
``patternProperties``, and, through the properties a ``patternProperties`` covers,
``additionalProperties`` and ``unevaluatedProperties``. Each is replaced here, keeping
jsonschema's messages, so the validator in ``schemas`` runs no pattern of a contract on
``re`` (a test walks jsonschema's keyword table for any other user of ``re``).

``unevaluatedProperties`` needs the keys the schema's adjacent and in-place keywords
evaluated (Draft 2020-12 §11.3): :func:`_evaluated_keys` collects them as jsonschema does,
resolving ``$ref`` and ``$dynamicRef`` through the validator's own resolver, which is how
jsonschema's keywords follow references too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from .patterns import search


def pattern(
    validator: Validator, source: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(source, instance):
        yield ValidationError(f"{instance!r} does not match {source!r}")


def pattern_properties(
    validator: Validator, patterns: Mapping[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for source, subschema in patterns.items():
        for key, value in instance.items():
            if search(source, key):
                yield from validator.descend(value, subschema, path=key, schema_path=source)


def additional_properties(
    validator: Validator, additional: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = [key for key in instance if not _declared(key, schema)]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(key) for key in sorted(extras))
            patterns = ", ".join(repr(source) for source in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            yield ValidationError(
                f"Additional properties are not allowed ({_listed(sorted(extras))} unexpected)"
            )


def unevaluated_properties(
    validator: Validator, unevaluated: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failing = [
        key
        for key in instance
        if key not in evaluated
        and not _valid(validator.descend(instance[key], unevaluated, path=key, schema_path=key))
    ]
    if not failing:
        return
    if unevaluated is False:
        yield ValidationError(
            f"Unevaluated properties are not allowed ({_listed(sorted(failing))} unexpected)"
        )
    else:
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({_listed(failing)} unevaluated and invalid)"
        )


def _declared(key: str, schema: dict[str, Any]) -> bool:
    """Whether ``properties`` or ``patternProperties`` of ``schema`` covers ``key``."""
    return key in schema.get("properties", {}) or any(
        search(source, key) for source in schema.get("patternProperties", {})
    )


def _evaluated_keys(validator: Validator, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluated successfully (§11.3's annotations
    of ``properties``, ``patternProperties``, ``additionalProperties``,
    ``unevaluatedProperties`` and of the in-place applicators that hold)."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if reference is not None:
            # the resolver in force here, as jsonschema's own keywords follow a reference
            resolved = validator._resolver.lookup(reference)  # type: ignore[attr-defined]
            target = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(target, instance, resolved.contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys.update(
                key
                for key, value in instance.items()
                if _valid(validator.descend(value, subschema))
            )
    for source in schema.get("patternProperties", {}):
        keys.update(key for key in instance if search(source, key))
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys |= _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys |= _evaluated_keys(validator, instance, schema["else"])
    return keys


def _valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _listed(keys: list[str]) -> str:
    """jsonschema's ``'a', 'b' were`` / ``'a' was``."""
    verb = "was" if len(keys) == 1 else "were"
    return f"{', '.join(repr(key) for key in keys)} {verb}"
