"""How aggregates of the pure core are stored as projection rows, and loaded back.

Each aggregate kind (``membership``, ``mission``, ``work_item``…) is registered with its
:class:`ModelProjection` by the app that owns the model, from its ``AppConfig.ready()``: the
ledger sits below those apps and cannot import their models. The write path and
``rebuild_projections`` both go through :func:`load_view` and :func:`save_aggregates`, so
there is one way a row is written.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import models

from missionweave.protocol.facts import StateKey

from .reads import Read, Row, run_together
from .statements import instances_from_rows, statements_for


@dataclass(frozen=True)
class ModelProjection:
    """One aggregate kind stored as rows of ``model`` keyed by (group, ``id_field``)."""

    model: type[models.Model]
    id_field: str
    to_state: Callable[[Any], Any]
    to_fields: Callable[[Any], dict[str, Any]]


_PROJECTIONS: dict[str, ModelProjection] = {}


def register_projection(kind: str, projection: ModelProjection) -> None:
    """Store ``kind`` as ``projection``; a second, different claim on a kind is a mistake, not
    an override, so it is refused rather than silently winning."""
    registered = _PROJECTIONS.setdefault(kind, projection)
    if registered is not projection:
        raise ImproperlyConfigured(
            f"projection kind {kind!r} is already stored in {registered.model.__name__}"
        )


#: no integer a client sends exceeds this (the strict parser refuses it, wire.md §1)
_MAX_SAFE_INTEGER = 2**53 - 1


def _int_or_double(text: str) -> int | float:
    number = int(text)
    return float(number) if abs(number) > _MAX_SAFE_INTEGER else number


class ProjectionJSONDecoder(json.JSONDecoder):
    """Reads projection JSON back with PostgreSQL's rewriting of large doubles undone.

    jsonb stores numbers as ``numeric`` and writes them back without an exponent: a double
    the strict parser accepted, say ``1e21`` in a selection basis or a contract, comes back as
    the integer ``1000000000000000000000``, which RFC 8785 refuses to canonicalise. An event
    that copies it from the projection (the re-offer of ``work.reassign`` copies the selection
    basis, R11.5-01) could then never be hashed, and the item would be stuck. No client
    integer is that large, so such an integer was a double, and becomes one again exactly —
    while the JSON is parsed, at no extra cost for the numbers that are not.
    """

    #: orjson reads the same values wherever no integer reaches 2^53 (``jsoncolumns``)
    orjson_equivalent = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "parse_int": _int_or_double})


def load_view(group_id: str, keys: Iterable[StateKey]) -> dict[StateKey, Any]:
    """The aggregates at ``keys`` (``None`` where none exists): one query per kind, compiled
    once per model (``statements``), all sent together (``reads``)."""
    view: dict[StateKey, Any] = {}
    for answer in run_together(view_reads(group_id, keys)):
        view.update(answer)
    return view


def view_reads(group_id: str, keys: Iterable[StateKey]) -> list[Read[dict[StateKey, Any]]]:
    """The reads of the aggregates at ``keys``, one per kind, each answering its keys
    (``None`` where none exists)."""
    by_kind: dict[str, set[str]] = defaultdict(set)
    for kind, ident in keys:
        by_kind[kind].add(ident)
    reads = []
    for kind, idents in by_kind.items():
        projection = _PROJECTIONS[kind]
        statements = statements_for(projection.model, projection.id_field)
        wanted = sorted(idents)
        reads.append(
            Read(
                statements.load_sql(wanted),
                [group_id, *wanted],
                partial(_aggregates, kind, projection, wanted),
            )
        )
    return reads


def _aggregates(
    kind: str, projection: ModelProjection, idents: list[str], rows: list[Row]
) -> dict[StateKey, Any]:
    found = {
        getattr(row, projection.id_field): projection.to_state(row)
        for row in instances_from_rows(projection.model, rows)
    }
    return {(kind, ident): found.get(ident) for ident in idents}


def owned_ids(group_id: str, kind: str, owner: str, states: Collection[str]) -> tuple[str, ...]:
    """The ids of ``kind`` aggregates ``owner`` owns in ``states``, ascending: what a
    membership revocation fences (wire.md §4). Reads the projection's ``owner`` and ``state``
    columns (the (group, state) index narrows it)."""
    projection = _PROJECTIONS[kind]
    rows = projection.model.objects.filter(group_id=group_id, owner=owner, state__in=states)
    return tuple(sorted(rows.values_list(projection.id_field, flat=True)))


def save_aggregates(
    group_id: str,
    state: Mapping[StateKey, Any],
    keys: Iterable[StateKey],
    *,
    existing: Collection[StateKey],
) -> None:
    """Write the aggregates at ``keys`` from ``state`` to their projection rows.

    ``existing`` names the keys that already have a row (the write path knows: it loaded
    them under the group lock), so no update is sent that finds nothing before an insert.
    The rows of each kind are written with one ``executemany`` for the new and one for the
    changed, compiled once (``statements``): a batch of commands writes its projections in
    bulk, not a statement per aggregate.
    """
    creates: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    updates: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for key in keys:
        kind, ident = key
        target = updates if key in existing else creates
        target[kind].append((ident, _PROJECTIONS[kind].to_fields(state[key])))
    for kind, rows in creates.items():
        projection = _PROJECTIONS[kind]
        statements_for(projection.model, projection.id_field).create_many(group_id, rows)
    for kind, rows in updates.items():
        projection = _PROJECTIONS[kind]
        statements_for(projection.model, projection.id_field).update_many(group_id, rows)


def bulk_replace(group_id: str, state: Mapping[StateKey, Any]) -> None:
    """Replace every projection row of ``group_id`` with ``state`` (used by rebuilds)."""
    for kind, projection in _PROJECTIONS.items():
        projection.model.objects.filter(group_id=group_id).delete()
        projection.model.objects.bulk_create(
            [
                projection.model(
                    group_id=group_id,
                    **{projection.id_field: ident},
                    **projection.to_fields(aggregate),
                )
                for (k, ident), aggregate in state.items()
                if k == kind
            ],
            batch_size=2000,
        )


def load_all(group_id: str) -> dict[StateKey, Any]:
    """Every live aggregate of a group, as pure state (for ``--verify``)."""
    state: dict[StateKey, Any] = {}
    for kind, projection in _PROJECTIONS.items():
        for row in projection.model.objects.filter(group_id=group_id).iterator(chunk_size=2000):
            state[(kind, getattr(row, projection.id_field))] = projection.to_state(row)
    return state
