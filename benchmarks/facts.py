"""Facts about the machine and software a run happened on, printed at the top of the report."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import django
from django.conf import settings

from .config import ROOT
from .database import server_facts
from .servers import describe_pool_options


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "?"


def _git_revision() -> str:
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return "?"
    return completed.stdout.strip() or "?"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def harness_pool() -> str:
    """What the settings gave this process (and so the in-process threads): the pool or not."""
    return describe_pool_options(settings.DATABASES["default"].get("OPTIONS", {}).get("pool"))


def machine_facts(database_url: str) -> dict[str, str]:
    return {
        "nproc": str(len(os.sched_getaffinity(0))),
        "cpu": _cpu_model(),
        "memory": _memory_gib(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "django": django.get_version(),
        **{f"postgresql_{key}": value for key, value in server_facts(database_url).items()},
        "git_revision": _git_revision(),
        "harness_db_pool": harness_pool(),
    }
