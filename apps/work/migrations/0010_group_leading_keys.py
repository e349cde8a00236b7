"""The work projections' primary keys lead with the group (issue 15 §6).

Their unique keys (``mission_once_per_group``, ``work_item_once_per_group``,
``proposal_once_per_group``, ``one_graph_per_group``, ``context_package_once_per_group``)
lead with ``group_id`` already; their primary keys become ``(group_id, id)`` on PostgreSQL
while the ORM keeps ``id`` (see :mod:`apps.ledger.group_keys`, which also says why SQLite
keeps ``PRIMARY KEY (id)``). The pages that order a group's WorkItems by ``id`` read
``(group_id, id)``, which the new key serves as well as ``work_item_group_order`` did.
``work_sweeprun`` is not per group (one row per beat task).
"""

from django.db import migrations

from apps.ledger.group_keys import LeadPrimaryKeyWithGroup


class Migration(migrations.Migration):
    dependencies = [("work", "0009_sweep_run_record")]

    operations = [
        LeadPrimaryKeyWithGroup("mission"),
        LeadPrimaryKeyWithGroup("workitem"),
        LeadPrimaryKeyWithGroup("workproposal"),
        LeadPrimaryKeyWithGroup("dependencyedges"),
        LeadPrimaryKeyWithGroup("contextpackage"),
    ]
