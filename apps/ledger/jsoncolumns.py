"""JSON columns on the hot path, written and read through orjson.

A sweep of due leases spent about a quarter of its time in the standard library's ``json``:
encoding each WorkItem's projection row for PostgreSQL and decoding the rows it read back
(py-spy, ``benchmarks/sweep.py``, issue 15). orjson does both in C, several times faster, and
gives the same Python values for the JSON these columns hold — objects with string keys,
arrays, strings, booleans, null, and numbers the protocol keeps within ±(2^53−1) or as
doubles (wire.md §1, ``strictjson``). Where it could differ, the standard library answers:

- writing, any value orjson refuses (an integer past 64 bits, a non-string key, a type it
  does not know) goes to ``json.dumps``, which is what Django would have called;
- reading, a text with a number of 16 or more digits (where an integer past 2^53 could
  hide, which ``ProjectionJSONDecoder`` turns back into a double) goes to the field's
  decoder, as does any text orjson refuses. Digits inside a string are not a number: a
  digest with a run of 16 decimal digits in its hex, which every WorkItem of the sweep
  benchmark's template had, sent each of them the slow way (a sixth of the sweep's time).

Only fields without a custom encoder, and whose decoder is the standard one or declares
``orjson_equivalent`` (``ProjectionJSONDecoder``), take these paths; the ORM elsewhere (the
dashboard, the admin) keeps Django's. ``tests/ledger/test_jsoncolumns.py`` holds both ways
equal to Django's for any JSON value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

#: a JSON text's bytes mapped so that a number of 16 or more digits — where an integer too
#: large for a double's exact range could be (2^53 has 16) — shows as ``s`` and 16 ``0``:
#: digits become ``0``; ``:``, ``[`` and ``,``, after which a number's token starts, become
#: ``s``; spaces and minus signs go; anything else is ``x``. A run of digits inside a
#: string (a ``sha256:`` digest's hex) then shows only if it follows one of those
#: characters there too, which sends that text the slow, exact way and nothing worse.
_DIGIT_CLASSES = bytes(
    b"0"[0] if byte in b"0123456789" else b"s"[0] if byte in b":[," else b"x"[0]
    for byte in range(256)
)
_DROPPED = b" -\t\n\r"
_LONG_NUMBER = b"s" + b"0" * 16
#: the plain JSON values orjson writes exactly as ``json.dumps`` means them
_PLAIN = (dict, list, str, int, float, bool)

Prep = Callable[[Any, BaseDatabaseWrapper], Any]
Load = Callable[[Any], Any]


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value).encode()


def takes_fast_path(field: models.Field[Any, Any]) -> bool:
    """Whether ``field`` is a JSON column these functions may write and read."""
    if not isinstance(field, models.JSONField) or field.encoder is not None:
        return False
    return field.decoder is None or getattr(field.decoder, "orjson_equivalent", False)


def prep(field: models.Field[Any, Any]) -> Prep:
    """``field.get_db_prep_save`` as the hot path calls it: through orjson on PostgreSQL for
    a plain JSON value, Django's own call otherwise (``None``, expressions, other backends)."""
    if not takes_fast_path(field):
        return field.get_db_prep_save

    def prepared(value: Any, db: BaseDatabaseWrapper) -> Any:
        if db.vendor == "postgresql" and type(value) in _PLAIN:
            from psycopg.types.json import Jsonb  # noqa: PLC0415 - PostgreSQL only

            return Jsonb(value, dumps=_dumps)
        return field.get_db_prep_save(value, db)

    return prepared


def loader(field: models.Field[Any, Any]) -> Load | None:
    """A decoder of ``field``'s column text giving what ``field.from_db_value`` gives, or
    ``None`` when the field does not take the fast path."""
    if not takes_fast_path(field):
        return None
    decoder = field.decoder

    def load(text: Any) -> Any:
        if not isinstance(text, str) or _may_hold_a_long_number(text):
            return _standard(text, decoder)
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return _standard(text, decoder)

    return load


def _may_hold_a_long_number(text: str) -> bool:
    """Whether ``text`` may hold a number token of 16 or more digits (``_DIGIT_CLASSES``):
    one ``bytes.translate`` and one search, ~4 µs for a WorkItem's 3 KB, where a regular
    expression for the same took 20–60 µs, more than orjson's whole parse."""
    return _LONG_NUMBER in b"s" + text.encode().translate(_DIGIT_CLASSES, _DROPPED)


def _standard(text: Any, decoder: type[json.JSONDecoder] | None) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text, cls=decoder)
    except json.JSONDecodeError:
        return text  # what JSONField.from_db_value returns for text it cannot decode
