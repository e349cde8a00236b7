"""Columns and indexes for the dashboard's mission and WorkItem lists (issue 13).

``urgency`` and ``title`` copy the contract's requested urgency and goal out of ``data`` so
the WorkItem list can filter and search on them; existing rows are filled from ``data``.
"""

from typing import Any

from django.db import migrations, models

BATCH = 2_000


def fill_from_contract(apps: Any, schema_editor: Any) -> None:
    work_item = apps.get_model("work", "WorkItem")
    rows = work_item.objects.order_by("id").only("id", "data")
    last = 0
    while True:
        batch = list(rows.filter(id__gt=last)[:BATCH])
        if not batch:
            return
        for row in batch:
            contract = row.data.get("contract") or {}
            row.urgency = str(contract.get("urgency") or "")
            row.title = str(contract.get("goal") or "")
        work_item.objects.bulk_update(batch, ["urgency", "title"])
        last = batch[-1].id


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0001_initial"),
        ("work", "0006_mission_usage_series"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="workitem",
            name="work_workit_group_i_42a677_idx",
        ),
        migrations.AddField(
            model_name="workitem",
            name="title",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="workitem",
            name="urgency",
            field=models.CharField(blank=True, default="", max_length=16),
        ),
        migrations.RunPython(fill_from_contract, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="mission",
            index=models.Index(fields=["group", "created_sequence"], name="mission_group_newest"),
        ),
        migrations.AddIndex(
            model_name="mission",
            index=models.Index(
                fields=["group", "state", "created_sequence"], name="mission_group_state"
            ),
        ),
        migrations.AddIndex(
            model_name="mission",
            index=models.Index(fields=["group", "created_by"], name="mission_group_creator"),
        ),
        migrations.AddIndex(
            model_name="workitem",
            index=models.Index(fields=["group", "state", "id"], name="work_item_group_state"),
        ),
        migrations.AddIndex(
            model_name="workitem",
            index=models.Index(fields=["group", "id"], name="work_item_group_order"),
        ),
        migrations.AddIndex(
            model_name="workitem",
            index=models.Index(fields=["group", "owner"], name="work_item_group_owner"),
        ),
        migrations.AddIndex(
            model_name="workitem",
            index=models.Index(fields=["group", "urgency"], name="work_item_group_urgency"),
        ),
    ]
