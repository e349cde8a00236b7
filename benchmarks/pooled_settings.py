"""The project's settings plus Django's psycopg connection pool, for ``BENCH_DB_POOL=1``.

Under ASGI every request runs in a new thread and so opens a new PostgreSQL connection; a
pool hands it an open one instead. This module only exists so the benchmark can measure
that difference without changing the project's settings (needs ``psycopg[pool]``).
"""

from __future__ import annotations

from missionweave.settings import *  # noqa: F403
from missionweave.settings import DATABASES

DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django refuses persistent connections with a pool
DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 4, "max_size": 16}
