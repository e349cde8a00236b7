"""Issue 35: a retry policy counts fresh attempts only.

A ``work.started`` that resumes after a deliberate stop (a released checkpoint, a block, a
replaced session) no longer counts as a new attempt, so every WorkItem's ``attempts`` (with the
new ``resumes_attempt``, and ``blocked_for``: what a blocked item waits for) are recomputed by
replaying each group's log with the current rules: projections are rebuildable by replay, and
this is the one place that needs it. The logs
themselves are untouched. With no group yet (a fresh database) there is nothing to do.
"""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.db import migrations


def replay_every_group(apps: Any, schema_editor: Any) -> None:
    group_log = apps.get_model("ledger", "GroupLog")
    if group_log.objects.exists():
        call_command("rebuild_projections")


class Migration(migrations.Migration):
    dependencies = [
        ("work", "0012_refused_execution_stops"),
        ("ledger", "0011_signed_heads"),
        ("registry", "0004_agent_presence"),
        ("artifacts", "0003_no_group_only_index"),
        ("stream", "0003_no_group_only_index"),
    ]

    operations = [migrations.RunPython(replay_every_group, migrations.RunPython.noop)]
