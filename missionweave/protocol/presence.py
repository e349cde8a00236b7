"""Presence: an agent's current capacity (R11.1-11), the body of ``POST /presence`` (wire.md §4).

The Agent Card declares the most an agent may run at once (``max_concurrency``); Presence
says how much of it is free *now*: ``slots`` (the slots it runs, which its config may set
below or above the card's figure), ``slots_free``, and for each named resource it has
(``resources``: ``gpu``, ``memory_gb``, …, issue 35 §8) its ``total`` and what is ``free``.

Capacity is the agent's as a whole, never by group (R11.2-02): the body names no group,
item or mission, so a report cannot tell one group anything of another's work. Presence is
soft state, not a fact of any group's log: the authority keeps the latest report per agent
with the time it arrived, and whoever reads it judges its age.
"""

from __future__ import annotations

from typing import Any

from .validation import check_fields, is_number, malformed

REQUIREMENT = "R11.1-11"
#: the most named resources one report may carry
MAX_RESOURCES = 64


def _count(value: object, path: str, *, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise malformed(f"expected an integer of at least {minimum}", path, REQUIREMENT)
    if maximum is not None and value > maximum:
        raise malformed(f"expected at most {maximum}", path, REQUIREMENT)
    return value


def validate_presence(body: object) -> dict[str, Any]:
    """The report, normalised (``resources`` defaults to ``{}``), or ``MALFORMED`` at the
    first bad field's path."""
    if not isinstance(body, dict):
        raise malformed("a presence report is a JSON object", "$", REQUIREMENT)
    check_fields(body, required=("slots", "slots_free"), optional=("resources",))
    slots = _count(body["slots"], "$.slots", minimum=1, maximum=10_000)
    free = _count(body["slots_free"], "$.slots_free", minimum=0, maximum=slots)
    resources = body.get("resources", {})
    if not isinstance(resources, dict) or len(resources) > MAX_RESOURCES:
        raise malformed(
            f"an object of at most {MAX_RESOURCES} named resources", "$.resources", REQUIREMENT
        )
    checked: dict[str, dict[str, float | int]] = {}
    for name, amounts in resources.items():
        if not name or len(name) > 128:
            raise malformed("a resource is named by 1..128 characters", "$.resources", REQUIREMENT)
        where = f"$.resources.{name}"
        if not isinstance(amounts, dict):
            raise malformed("expected {total, free}", where, REQUIREMENT)
        check_fields(amounts, required=("total", "free"), path=where)
        total, left = amounts["total"], amounts["free"]
        if not is_number(total) or total < 0:
            raise malformed("expected a non-negative number", f"{where}.total", REQUIREMENT)
        if not is_number(left) or not 0 <= left <= total:
            raise malformed("expected a number from 0 to total", f"{where}.free", REQUIREMENT)
        checked[name] = {"total": total, "free": left}
    return {"slots": slots, "slots_free": free, "resources": checked}
