"""Replaying a group's log into pure state: the other half of "projections are disposable".

``replay`` folds ``decider.apply`` — the very function the write path projects with — over
every event in sequence order — the archived ones first (via :func:`history`) — checking the
hash chain as it goes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from missionweave.protocol import decider
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import chains
from missionweave.protocol.facts import Fact, StateKey

from .history import history

PAGE = 5000


@dataclass
class Replay:
    state: dict[StateKey, Any] = field(default_factory=dict)
    events: int = 0
    head_hash: str = ZERO_HASH
    chain_break: int | None = None


def iter_events(group_id: str, *, through: int) -> Iterator[dict[str, Any]]:
    """Events 1..``through`` of a group, archive then online log (R16-08), in keyset pages.

    Stops at the first event in neither store; :func:`replay` reports that as a chain break.
    """
    try:
        for text in history(group_id, through=through, page=PAGE):
            yield json.loads(text)
    except LookupError:
        return


def replay(group_id: str, *, through: int, progress: Callable[[int], None] | None = None) -> Replay:
    """Fold the log of ``group_id`` up to ``through`` into aggregates; note any chain break."""
    result = Replay()
    for expected_sequence, event in enumerate(iter_events(group_id, through=through), start=1):
        if result.chain_break is None and not chains(
            event, previous_hash=result.head_hash, previous_sequence=expected_sequence - 1
        ):
            result.chain_break = expected_sequence
        fact = Fact.of_event(event)
        decider.apply(result.state, fact)
        result.head_hash = event["hash"]
        result.events += 1
        if progress is not None:
            progress(1)
    if result.chain_break is None and result.events != through:
        result.chain_break = result.events + 1
    return result


def differences(rebuilt: dict[StateKey, Any], live: dict[StateKey, Any]) -> list[str]:
    """Human-readable differences between a rebuild and the live projection rows."""
    found: list[str] = []
    for key in sorted(set(rebuilt) | set(live)):
        kind, ident = key
        if key not in live:
            found.append(f"{kind} {ident}: missing from the live projection")
        elif key not in rebuilt:
            found.append(f"{kind} {ident}: in the live projection but not in the log")
        elif rebuilt[key] != live[key]:
            found.append(f"{kind} {ident}: live {live[key]!r} != rebuilt {rebuilt[key]!r}")
    return found
