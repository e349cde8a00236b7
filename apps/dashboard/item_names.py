"""WorkItems named in a sentence the way people know them: by their goals.

"3 WorkItems are not finished: m-37a8…-gather, m-37a8…-write" told a person nothing she
could act on; "“Gather the sources”, “Write it up”" does. A sentence names the first
``SHOWN`` items (each goal cut to a title, the id when no goal is known) and counts the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from apps.work.models import WorkItem

from .event_words import short_title
from .selectors import mission_goal

#: how many WorkItems a sentence names before it counts the rest ("and 2 more")
SHOWN = 5


def titles_of(
    group_id: str, work_items: Iterable[str], *, limit: int | None = SHOWN
) -> dict[str, str]:
    """``id -> goal`` of the first ``limit`` of ``work_items`` in ``group_id`` (all of them
    with ``None``; one query; the goal is the projection's ``title`` column). Items without a
    goal are left out, so they are named by id."""
    wanted = list(dict.fromkeys(work_items))[:limit]
    if not wanted:
        return {}
    rows = WorkItem.objects.filter(group_id=group_id, work_item_id__in=wanted)
    return {item: title for item, title in rows.values_list("work_item_id", "title") if title}


def item_named(group_id: str, work_item: str) -> str:
    """One WorkItem for a sentence ("Approved revision 1 of “Gather the sources”"): its goal
    in quotes, its id when it has none."""
    return item_names([work_item], titles_of(group_id, [work_item]))


def mission_named(group_id: str, mission: str) -> str:
    """One mission for a sentence: its goal in quotes, its id when the group has none."""
    found = mission_goal(group_id, mission)
    return short_title(found) if found and found.strip() else mission


def item_names(work_items: Sequence[str], titles: Mapping[str, str] | None = None) -> str:
    """ "“Gather the sources”, “Write it up”, wi-3 and 2 more": the first ``SHOWN`` of
    ``work_items`` by their goals (``titles``: id -> goal), by id when none is known, and by
    goal and id when two share a goal."""
    titles = titles or {}
    shown = work_items[:SHOWN]
    said = [short_title(titles[item]) if titles.get(item, "").strip() else item for item in shown]
    # two items with one goal would read as one: each of them is told apart by its id
    repeated = {title for title in said if said.count(title) > 1}
    named = ", ".join(
        f"{title} ({item})" if title in repeated else title
        for item, title in zip(shown, said, strict=True)
    )
    rest = len(work_items) - SHOWN
    return f"{named} and {rest} more" if rest > 0 else named
