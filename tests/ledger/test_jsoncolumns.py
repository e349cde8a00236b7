"""``apps/ledger/jsoncolumns.py``: orjson writes and reads the JSON columns of the hot path
exactly as Django's ``JSONField`` does (issue 15), checked through real PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.ledger import jsoncolumns
from apps.work.models import WorkItem

FIELD = WorkItem._meta.get_field("data")  # decoder=ProjectionJSONDecoder

# What PostgreSQL can hold in jsonb: no NUL and no lone surrogate in any string.
text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)


def _stored(parameter: Any) -> str | None:
    """What PostgreSQL keeps of a prepared parameter, as the text it sends back."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [parameter])
        return cursor.fetchone()[0]


@pytest.mark.django_db
@settings(max_examples=300, deadline=None)
@given(value=values)
def test_orjson_writes_what_django_writes_and_reads_what_django_reads(value: Any) -> None:
    """Any JSON value (integers well past 2^64 included): the same jsonb stored, and the same
    Python value read back as ``JSONField.from_db_value`` gives."""
    fast, django = jsoncolumns.prep(FIELD), FIELD.get_db_prep_save

    stored = _stored(fast(value, connection))

    assert stored == _stored(django(value, connection))
    assert jsoncolumns.loader(FIELD)(stored) == FIELD.from_db_value(stored, None, connection)


@pytest.mark.parametrize(
    "stored",
    [
        '{"basis": 1000000000000000000000}',  # jsonb's rewriting of the double 1e21
        "[9007199254740993, -9007199254740993]",
        '{"hash": "sha256:1234567890123456789012345678901234567890"}',  # digits in a string
        '{"note": "see [1234567890123456789]"}',  # ... after a bracket: the slow way, harmless
        '"not json',
    ],
)
def test_texts_that_orjson_could_read_otherwise_go_to_the_fields_decoder(stored: str) -> None:
    """Integers past 2^53 become doubles again (``ProjectionJSONDecoder``), as through the ORM."""
    read = jsoncolumns.loader(FIELD)(stored)

    assert read == FIELD.from_db_value(stored, None, connection)
    assert json.dumps(read) == json.dumps(FIELD.from_db_value(stored, None, connection))


def test_only_plain_json_fields_take_the_fast_path() -> None:
    assert jsoncolumns.takes_fast_path(FIELD)
    assert not jsoncolumns.takes_fast_path(models.JSONField(encoder=DjangoJSONEncoder))
    assert not jsoncolumns.takes_fast_path(models.JSONField(decoder=json.JSONDecoder))
    assert not jsoncolumns.takes_fast_path(models.CharField())


#: strings made to look like numbers: digit runs after ``:``, ``,``, ``[``, spaces and minus
number_like = st.text("0123456789:,[- ", max_size=40)
digit_values = st.recursive(
    st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | number_like,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(number_like, inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.django_db
@settings(max_examples=300, deadline=None)
@given(value=digit_values)
def test_long_numbers_are_told_from_digits_in_strings(value: Any) -> None:
    """The check for a number of 16 or more digits looks at number tokens only: whatever
    digits the strings hold, the value read is the one ``JSONField.from_db_value`` gives."""
    stored = _stored(jsoncolumns.prep(FIELD)(value, connection))

    assert jsoncolumns.loader(FIELD)(stored) == FIELD.from_db_value(stored, None, connection)


def test_a_digest_with_a_run_of_decimal_digits_is_read_by_orjson(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sixth of the sweep's time went to the slow decoder for digests like this one."""
    monkeypatch.setattr(jsoncolumns, "_standard", pytest.fail)
    stored = '{"digest": "sha256:607d5aefb906bdf57d54eeeb2b7378722235247168c9f76b722d", "n": 5}'

    assert jsoncolumns.loader(FIELD)(stored) == json.loads(stored)
