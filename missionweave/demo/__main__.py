"""``python -m missionweave.demo {coordinator,reviewer} --authority URL --agent ID --key FILE``

Runs one agent of the demo's organisation as its own process, talking to the authority over
HTTP through the SDK: the coordinator (plans, offers, judges) or the reviewer (answers review
requests). The workers are ``missionweave-worker`` processes. ``manage.py demo`` starts them
all; each may also be started by hand against any authority where these agents exist.

One beat every ``--interval`` seconds; each command's outcome is a line on stdout. SIGTERM
or Ctrl-C stops it between beats (exit 0). An unreachable authority is reported and tried
again next beat; a broken hash chain stops the agent (exit 1): it must not act on a log it
cannot trust (R16-03).
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from missionweave.client.errors import ApiError, ChainBroken, Unavailable

from .coordinator import Coordinator
from .organisation import GROUPS
from .personas import Persona
from .reviewer import Reviewer


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m missionweave.demo", description=__doc__)
    parser.add_argument("role", choices=("coordinator", "reviewer"))
    parser.add_argument("--authority", required=True, help="the authority's URL")
    parser.add_argument("--agent", required=True, help="the agent id")
    parser.add_argument("--key", required=True, type=Path, help="its base64url key seed file")
    parser.add_argument(
        "--groups", default=",".join(GROUPS), help="comma-separated groups (both demo groups)"
    )
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between beats")
    parser.add_argument("--seed", type=int, default=None, help="the coordinator's dice")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse(argv)
    persona = Persona.from_key_file(options.agent, options.key)
    groups = tuple(group for group in options.groups.split(",") if group)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    with persona.client(options.authority) as client:
        agent: Coordinator | Reviewer
        if options.role == "coordinator":
            agent = Coordinator(client, groups, random.Random(options.seed))  # noqa: S311
        else:
            agent = Reviewer(client, groups)
        print(f"{options.agent}: {options.role} of {', '.join(groups)}", flush=True)
        while not stopping.is_set():
            try:
                lines = agent.beat()
            except ChainBroken as broken:
                print(f"{options.agent}: stopping, the log cannot be trusted: {broken}")
                return 1
            except (Unavailable, ApiError) as problem:
                lines = [f"{options.agent}: the authority did not answer: {problem}"]
            for line in lines:
                print(line, flush=True)
            stopping.wait(options.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
