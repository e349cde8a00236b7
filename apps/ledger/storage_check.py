"""Do the archive and the online log agree? (issue 33 §1; R16-08, R16-10)

Every event is in exactly one of the two stores: events 1..F (F the group's floor,
``archived_through``) in the archive, F+1..head online (:mod:`apps.ledger.archive`). The
database holds that for every role but the schema owner (migration ``0010_archive_floor``);
what the owner could still do by hand — a stray archived row above the floor, an online row
left at or below it, a row beyond the head — would let two readers of the same sequence see
two different events, while each store's own chain still verifies. So the verifiers
(``rebuild_projections --verify``, ``verify_export`` where the group is stored, the
dashboard's chain check) ask this module too, and fail on any disagreement.

``quick`` checks cost two index probes (the dashboard, on every timeline page); the full check
also counts both stores (the command-line verifiers).
"""

from __future__ import annotations

from .models import ArchivedEvent, Event, GroupLog

#: how many sequences a problem names at most
_NAMED = 5


def _sequences(query: object) -> list[int]:
    return list(query.order_by("sequence").values_list("sequence", flat=True)[:_NAMED])  # type: ignore[attr-defined]


def _named(sequences: list[int]) -> str:
    text = ", ".join(f"#{sequence}" for sequence in sequences)
    return text + (", …" if len(sequences) == _NAMED else "")


def storage_problems(group_id: str, *, quick: bool = False) -> list[str]:
    """What is wrong with where the group's events are kept, in words; empty when nothing."""
    row = GroupLog.objects.filter(group_id=group_id).values_list(
        "archived_through", "head_sequence"
    )
    if not row:
        return []
    floor, head = row[0]
    problems = []
    stray = _sequences(ArchivedEvent.objects.filter(group_id=group_id, sequence__gt=floor))
    if stray:
        problems.append(f"archived events above the floor {floor}: {_named(stray)}")
    left = _sequences(Event.objects.filter(group_id=group_id, sequence__lte=floor))
    if left:
        problems.append(f"online events at or below the floor {floor}: {_named(left)}")
    beyond = _sequences(Event.objects.filter(group_id=group_id, sequence__gt=head))
    if beyond:
        problems.append(f"online events beyond the head {head}: {_named(beyond)}")
    if quick:
        return problems
    archived = ArchivedEvent.objects.filter(group_id=group_id, sequence__lte=floor).count()
    if archived != floor:
        problems.append(f"the archive holds {archived} of the {floor} events 1..{floor}")
    online = Event.objects.filter(group_id=group_id, sequence__gt=floor, sequence__lte=head).count()
    if online != head - floor:
        problems.append(
            f"the online log holds {online} of the {head - floor} events {floor + 1}..{head}"
        )
    return problems
