"""The inbox's triage controls (issue 37 §5): which entries a person asked to see and in
what order, read from the page's GET parameters.

``?group=<id>&kind=<section>&sort=<order>`` filters and orders; ``show=<section>&page=<n>``
pages one section (``PAGE`` entries at a time); ``snoozed=show`` lists the snoozed entries
too. A value that cannot be read is not guessed at: it is kept with a sentence saying why,
shown beside its field, and the page answers 400 with the controls and nothing filtered
by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from .inbox_entries import Entry

#: the kinds a person filters by, in the inbox's order, as the filter names them
KINDS = {
    "asked": "Asked of me by name",
    "approvals": "Execution approvals",
    "reviews": "Reviews",
    "missions": "Final approvals (missions)",
    "blocked": "Blocked work",
}
#: the orders a person may choose; the first is the inbox's own
SORTS = {
    "urgency": "Most urgent first",
    "oldest": "Oldest first",
    "newest": "Newest first",
    "deadline": "Nearest deadline first",
}
DEFAULT_SORT = "urgency"
#: entries one page of a section shows (the section's own preview shows ``SHOWN``)
PAGE = 50


def _since(entry: Entry) -> float:
    return entry.since.timestamp() if entry.since is not None else float("inf")


def _oldest(entry: Entry) -> tuple[Any, ...]:
    return (_since(entry), entry.group.id, entry.title)


def _newest(entry: Entry) -> tuple[Any, ...]:
    # an entry whose wait began at an unknown time sorts last either way
    since = entry.since.timestamp() if entry.since is not None else float("-inf")
    return (-since, entry.group.id, entry.title)


def _deadline(entry: Entry) -> tuple[Any, ...]:
    return (entry.deadline is None, entry.deadline or "", *entry.sort_key)


SORT_KEYS: dict[str, Callable[[Entry], tuple[Any, ...]]] = {
    "urgency": lambda entry: entry.sort_key,
    "oldest": _oldest,
    "newest": _newest,
    "deadline": _deadline,
}


@dataclass(frozen=True)
class Triage:
    """What the person asked the inbox for; ``errors`` maps a field to why its value was
    not understood (the value itself is kept, to be shown in the field again)."""

    group: str = ""
    kind: str = ""
    sort: str = DEFAULT_SORT
    show: str = ""
    page: int = 1
    show_snoozed: bool = False
    errors: dict[str, str] = field(default_factory=dict)
    #: the values as typed, for the form to show them again
    raw: dict[str, str] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def filtered(self) -> bool:
        return bool(self.group or self.kind)

    def wants_group(self, group: str) -> bool:
        return not self.group or self.group == group

    def wants_kind(self, kind: str) -> bool:
        return not self.kind or self.kind == kind

    def order(self, entries: Sequence[Entry]) -> list[Entry]:
        return sorted(entries, key=SORT_KEYS.get(self.sort, SORT_KEYS[DEFAULT_SORT]))

    def params(self, **changes: object) -> dict[str, str]:
        """The page's GET parameters that differ from the defaults, with ``changes``."""
        values: dict[str, object] = {
            "group": self.group,
            "kind": self.kind,
            "sort": "" if self.sort == DEFAULT_SORT else self.sort,
            "show": self.show,
            "page": self.page if self.show and self.page > 1 else "",
            "snoozed": "show" if self.show_snoozed else "",
        }
        values.update(changes)
        return {key: str(value) for key, value in values.items() if value not in ("", None, 1)}

    def query(self, **changes: object) -> str:
        """``?…`` for a link that keeps the person's filters (empty when there are none)."""
        params = self.params(**changes)
        return f"?{urlencode(params)}" if params else ""


def triage_from(data: Mapping[str, str], groups: Mapping[str, str]) -> Triage:
    """The triage ``data`` (a ``request.GET``) asks for, among the person's ``groups``
    (id → name). Unknown values are errors, never a 500 and never silently ignored."""
    errors: dict[str, str] = {}
    raw = {key: str(data.get(key, "")) for key in ("group", "kind", "sort", "show", "page")}
    group = raw["group"].strip()
    if group and group not in groups:
        errors["group"] = "You are not a member of a group with this id: choose one of your groups."
        group = ""
    kind = raw["kind"].strip()
    if kind and kind not in KINDS:
        errors["kind"] = "There is no such kind of entry: choose one from the list."
        kind = ""
    sort = raw["sort"].strip() or DEFAULT_SORT
    if sort not in SORTS:
        errors["sort"] = "The inbox cannot be sorted that way: choose an order from the list."
        sort = DEFAULT_SORT
    show = raw["show"].strip()
    if show not in KINDS:
        show = ""  # a stale "show all" link: the inbox as usual
    page = 1
    if raw["page"]:
        try:
            page = int(raw["page"])
        except ValueError:
            page = 0
        if page < 1:
            errors["page"] = "There is no such page: the pages are numbered from 1."
            page = 1
    return Triage(
        group=group,
        kind=kind,
        sort=sort,
        show=show,
        page=page,
        show_snoozed=data.get("snoozed") == "show",
        errors=errors,
        raw=raw,
    )
