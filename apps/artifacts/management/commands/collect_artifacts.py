"""``manage.py collect_artifacts [--apply] [--older-than SECONDS]``.

Lists the blobs no group's log references and nobody uploaded for the given age (default
``MWP_ARTIFACT_GC_AGE_S``); deletes them, object then rows, only with ``--apply``. Spools of
uploads idle for an hour are counted, and removed with ``--apply``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.artifacts.collection import collect
from missionweave.wording import counted


class Command(BaseCommand):
    help = "Delete artifacts no group references (a dry run unless --apply)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--apply", action="store_true", help="delete; otherwise only list")
        parser.add_argument(
            "--older-than",
            type=float,
            default=None,
            metavar="SECONDS",
            help="minimum age since the last upload (default MWP_ARTIFACT_GC_AGE_S)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        older_than = options["older_than"]
        report = collect(
            older_than_s=settings.MWP_ARTIFACT_GC_AGE_S if older_than is None else older_than,
            apply=options["apply"],
        )
        deleted = set(report.deleted)
        for digest, size in report.candidates:
            if not report.applied:
                verb = "would delete"
            elif digest in deleted:
                verb = "deleted"
            else:
                verb = "kept (in use)"
            self.stdout.write(f"{verb} {digest} ({size} bytes)")
        summary = (
            f"{counted(len(report.candidates), 'unreferenced blob')}, "
            f"{counted(report.candidate_bytes, 'byte')}, older than {report.cutoff.isoformat()}; "
            f"{counted(report.spools, 'stale spool')}"
        )
        if report.applied:
            summary += f"; deleted {len(report.deleted)}"
        else:
            summary += "; dry run, nothing deleted (--apply deletes)"
        self.stdout.write(summary)
