"""A refused execution stops its start-by clock (issue 34, R10.2-06).

The core now clears a queued item's ``start_deadline`` when its revision is refused, and a
refused queued item is never due (``WorkItem.due``), so the sweep leaves it for a corrected
contract or a cancel. Rows written before hold the old projection: this brings each refused
queued row to what a replay of its log gives (``rebuild_projections --verify``) — no start
deadline, nothing due, and the ``execution_refused`` view screens read.
"""

from typing import Any

from django.db import migrations

BATCH = 2_000


def stop_refused_clocks(apps: Any, schema_editor: Any) -> None:
    work_item = apps.get_model("work", "WorkItem")
    rows = (
        work_item.objects.filter(state="queued", data__refusal__isnull=False)
        .exclude(data__refusal=None)
        .order_by("id")
        .only("id", "data", "due_at", "due_reason")
    )
    last = 0
    while True:
        batch = list(rows.filter(id__gt=last)[:BATCH])
        if not batch:
            return
        for row in batch:
            refusal = row.data["refusal"]
            row.data = {
                **row.data,
                "start_deadline": None,
                "execution_refused": {
                    "by": refusal["principal"],
                    "reason": refusal["comment"],
                    "at": refusal["recorded_at"],
                    "revision": refusal["revision"],
                    "waits_for": "corrected_contract",
                },
            }
            row.due_at = None
            row.due_reason = ""
        work_item.objects.bulk_update(batch, ["data", "due_at", "due_reason"])
        last = batch[-1].id


class Migration(migrations.Migration):
    dependencies = [("work", "0011_no_group_only_index")]

    operations = [migrations.RunPython(stop_refused_clocks, migrations.RunPython.noop)]
