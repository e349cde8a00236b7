"""``--only sweep``: section 6 alone, on a freshly reset database, spliced into the report."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from .config import ROOT, BenchConfig
from .facts import load_average
from .fresh import fresh_results, log
from .must_holds import splice_must_holds
from .report import render, splice_sweep
from .results import Results
from .sweep import SweepResult, measure_sweep


def measure_sweep_section(config: BenchConfig) -> SweepResult:
    log(
        f"sweep: seeding {config.sweep_leases:,} leases in {config.sweep_groups} groups, "
        f"{config.sweep_due_fraction:.0%} due"
    )
    return measure_sweep(
        leases=config.sweep_leases,
        due_fraction=config.sweep_due_fraction,
        groups=config.sweep_groups,
        limit=config.sweep_limit,
        log=log,
    )


def measure_sweep_only(config: BenchConfig, command: str) -> Results:
    """Section 6 alone, on a freshly reset database."""
    results = fresh_results(config, command)
    results.sweep = measure_sweep_section(config)
    results.load_after = load_average()
    results.finished_at = datetime.now(UTC)
    return results


def run(config: BenchConfig, args: argparse.Namespace) -> int:
    command = "python -m benchmarks.run --only sweep" + (" --quick" if args.quick else "")
    saved = ROOT / "var" / "benchmarks" / ("sweep-quick.json" if args.quick else "sweep.json")
    if args.render_only:
        results = Results.load_sweep(saved, config)
        config.output.write_text(
            splice_must_holds(splice_sweep(config.output.read_text(), results))
        )
        log(f"rendered section 6 of {config.output} again from {saved}")
        return 0
    results = measure_sweep_only(config, command)
    if config.output.exists():
        config.output.write_text(
            splice_must_holds(splice_sweep(config.output.read_text(), results))
        )
    else:
        config.output.write_text(render(results))
    results.dump(saved)
    log(f"wrote section 6 of {config.output}")
    return 0
