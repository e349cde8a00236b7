"""``--only stream`` (section 7) and ``--only replay`` (section 8): measure, or load the saved
figures, then replace only that section of the report."""

from __future__ import annotations

import argparse
import json

from .config import ROOT, BenchConfig
from .fresh import fresh_results, log
from .must_holds import splice_must_holds
from .replay import ReplayResult, measure_replay, replay_events
from .stream import StreamResult, measure_stream, stream_plan
from .stream_report import splice_replay, splice_stream


def run(config: BenchConfig, args: argparse.Namespace) -> int:
    section, quick, render_only = args.only, args.quick, args.render_only
    command = f"python -m benchmarks.run --only {section}" + (" --quick" if quick else "")
    saved = ROOT / "var" / "benchmarks" / f"{section}{'-quick' if quick else ''}.json"
    result: StreamResult | ReplayResult
    if render_only:
        data = json.loads(saved.read_text())
        command = data["command"]
        loaded = StreamResult.from_dict if section == "stream" else ReplayResult.from_dict
        result = loaded(data[section])
    elif section == "stream":
        if not config.redis_url:
            raise SystemExit("--only stream measures the Redis channel layer: set BENCH_REDIS_URL")
        fresh_results(config, command)  # reset and migrate the benchmark database
        result = measure_stream(config, stream_plan(quick=quick), log=log)
    else:
        result = measure_replay(config, replay_events(quick=quick), log=log)
    document = config.output.read_text() if config.output.exists() else "# Benchmarks\n"
    if isinstance(result, StreamResult):
        document = splice_stream(document, result, command)
    else:
        document = splice_replay(document, result, command)
    config.output.write_text(splice_must_holds(document))
    if not render_only:
        saved.parent.mkdir(parents=True, exist_ok=True)
        payload = {"command": command, section: result.as_dict()}
        saved.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    log(f"wrote section {7 if section == 'stream' else 8} of {config.output}")
    return 0
