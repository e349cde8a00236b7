"""``manage.py rebuild_projections [--group G] [--verify]``.

Without ``--verify``: replay each group's log and replace its projection rows, holding the
group's head lock so no command lands mid-rebuild. With ``--verify``: replay and compare
with the live rows instead, print every difference, and exit non-zero if there is any (or
if the hash chain does not verify, or the archive and the online log disagree about where
an event is kept: ``apps.ledger.storage_check``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from tqdm import tqdm

from apps.ledger.head import lock_head
from apps.ledger.models import GroupLog
from apps.ledger.projections import bulk_replace, load_all
from apps.ledger.replay import differences, replay
from apps.ledger.storage_check import storage_problems
from missionweave.wording import counted

PROGRESS_FROM = 1000  # events; shorter logs finish before a bar would be useful


class Command(BaseCommand):
    help = "Replay group logs into the projections (or, with --verify, compare with them)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--group", action="append", help="only this group (repeatable)")
        parser.add_argument(
            "--verify", action="store_true", help="compare with the live rows; change nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        groups = options["group"] or list(
            GroupLog.objects.order_by("group_id").values_list("group_id", flat=True)
        )
        failures = 0
        for group_id in groups:
            failures += self._one(group_id, verify=options["verify"])
        if failures:
            differ = "differs from its" if failures == 1 else "differ from their"
            raise CommandError(f"{counted(failures, 'group')} {differ} log")

    def _one(self, group_id: str, *, verify: bool) -> int:
        # Inside a caller's transaction (a task, a test) the isolation level is already
        # fixed, so verify takes the head lock instead of its own snapshot.
        own_transaction = not connection.in_atomic_block
        with transaction.atomic():
            if verify and connection.vendor == "postgresql" and own_transaction:
                # A consistent snapshot without stopping writers.
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                head = GroupLog.objects.filter(group_id=group_id).first()
                through = head.head_sequence if head else None
            else:
                locked = lock_head(group_id)
                through = locked.sequence if locked else None
            if through is None:
                raise CommandError(f"no group {group_id!r}")
            # before the replay, which a store holding the wrong rows may stop
            problems = storage_problems(group_id) if verify else []
            with tqdm(
                total=through,
                desc=group_id,
                unit="ev",
                file=self.stderr._out,
                disable=through < PROGRESS_FROM,
            ) as bar:
                result = replay(group_id, through=through, progress=bar.update)
            if result.chain_break is not None:
                for problem in problems:
                    self.stderr.write(f"{group_id}: storage: {problem}")
                self.stderr.write(f"{group_id}: hash chain breaks at sequence {result.chain_break}")
                return 1
            if verify:
                found = [f"storage: {problem}" for problem in problems]
                found += differences(result.state, load_all(group_id))
                for line in found:
                    self.stdout.write(f"{group_id}: {line}")
                if found:
                    return 1
                self.stdout.write(f"{group_id}: {result.events} events, projections match")
                return 0
            bulk_replace(group_id, result.state)
            self.stdout.write(f"{group_id}: rebuilt from {result.events} events")
            return 0
