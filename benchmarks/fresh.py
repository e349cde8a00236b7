"""What every benchmark run shares once Django is set up: its log line and a fresh database."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from django.core.management import call_command

from .config import BenchConfig
from .database import reset_database
from .facts import load_average, machine_facts
from .results import Results


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def fresh_results(config: BenchConfig, command: str) -> Results:
    """Results of a new run on a freshly reset and migrated bench database."""
    results = Results(command=command, config=config, started_at=datetime.now(UTC))
    results.load_before = load_average()
    log(f"resetting {config.database_url} and migrating")
    reset_database(config.database_url)
    call_command("migrate", verbosity=0)
    results.facts = machine_facts(config.database_url)
    return results
