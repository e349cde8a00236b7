"""The figures a fault test measured: printed, and under ``make chaos`` also written to
``$MWP_CHAOS_REPORT/<name>.json`` for ``docs/reliability.md``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def report(name: str, figures: dict[str, Any]) -> None:
    text = json.dumps(figures, indent=2, sort_keys=True)
    print(f"\n{name} figures:\n{text}")
    folder = os.environ.get("MWP_CHAOS_REPORT")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(text + "\n")
