"""Issue 38: ``work_mission.change_requests`` gets the database default ``[]``.

The write path's frozen floor (``benchmarks/pgbench/write_path_statements.sql``, the SQL one
``mission.create`` sent when the performance issue was blocked) predates the column, so its
``INSERT`` does not name it and failed on NOT NULL. The ORM already writes ``[]``; the
database now does the same for plain SQL. No row changes.
"""

from django.db import migrations, models

import apps.ledger.projections


class Migration(migrations.Migration):
    dependencies = [
        ("work", "0014_mission_change_requests"),
    ]

    operations = [
        migrations.AlterField(
            model_name="mission",
            name="change_requests",
            field=models.JSONField(
                db_default=models.Value([], output_field=models.JSONField()),
                decoder=apps.ledger.projections.ProjectionJSONDecoder,
                default=list,
            ),
        ),
    ]
