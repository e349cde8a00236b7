"""The demo agents' saved state belongs to one history of the demo's groups.

The workers keep what they have seen and done per group under ``var/demo/agents`` (their
acknowledged cursor, the chain's last hash, results not yet settled: docs/worker.md). When
the demo's database is replaced — its file deleted, another ``DATABASE_URL`` — and that
folder is kept, every worker meets a log that no longer continues what it saw: it rightly
distrusts the group (a forked chain) and takes no more work there, and the demo sits still
with no word why. So ``manage.py demo`` writes down which history the folder belongs to (the
hashes of each demo group's first event) and, when the database holds another one, forgets
the agents' state before they start, and says so.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from apps.ledger.models import Event

#: the file beside the agents' folder naming the history their state belongs to
MARKER = "history"


def history_of(groups: list[str]) -> str:
    """Which history the database holds for ``groups``: their first events' hashes."""
    firsts = dict(
        Event.objects.filter(group_id__in=groups, sequence=1).values_list("group_id", "hash")
    )
    return " ".join(f"{group}={firsts.get(group, '')}" for group in sorted(groups))


def forget_if_from_another_history(folder: Path, history: str) -> bool:
    """Remove ``folder/agents`` when it was saved against another history than ``history``;
    record ``history`` either way. Whether anything was forgotten.

    A folder saved before the marker existed cannot be told apart, so it is kept."""
    marker = folder / MARKER
    agents = folder / "agents"
    known = marker.read_text().strip() if marker.exists() else None
    stale = known is not None and known != history and agents.exists()
    if stale:
        shutil.rmtree(agents)
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text(history + "\n")
    return stale
