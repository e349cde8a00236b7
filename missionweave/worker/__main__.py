"""``missionweave-worker --config worker.toml``: run one Worker until SIGTERM or SIGINT
(issue 14 §7).

Exit codes: 0 after a clean shutdown — every active slot stopped at a checkpoint that was
sent as ``work.checkpoint`` (its lease released, the item queued for this worker, R10.2-08),
finished results submitted, the offline buffer reconciled if the authority answers, the
queues' file closed; 2 for a configuration that cannot start (named by ``ConfigError``);
1 when a handler did not reach a checkpoint within ``shutdown_timeout_s`` — its thread
cannot be killed (R11.3-12 forbids interrupting it anyway), so the process ends without it and
the authority's lease sweep reassigns the item (R11.5-01).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from types import FrameType

from missionweave.client.agent import AgentClient
from missionweave.protocol.signing import parse_public_key

from .config import ConfigError, load_config
from .handlers import HandlerError, HandlerTable
from .runtime import Worker

log = logging.getLogger("missionweave.worker")

#: the client's attempts per request before the worker counts itself offline (R11.5-04)
CLIENT_ATTEMPTS = 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="missionweave-worker", description="Run a MissionWeave worker agent."
    )
    parser.add_argument("--config", required=True, help="the worker's TOML configuration")
    parser.add_argument(
        "--log-level", default="INFO", type=str.upper, choices=("DEBUG", "INFO", "WARNING", "ERROR")
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = load_config(args.config)
        key = config.private_key()
        handlers = HandlerTable.from_paths(config.handlers, search=config.python_path)
        pinned = parse_public_key(config.authority_key) if config.authority_key else None
    except (ConfigError, HandlerError, ValueError) as error:
        print(f"missionweave-worker: {error}", file=sys.stderr)
        return 2
    client = AgentClient(
        config.authority_url,
        config.agent_id,
        key,
        authority_key=pinned,
        agent_card_version=config.agent_card.version,
        max_attempts=CLIENT_ATTEMPTS,
    )
    worker = Worker(config, client, handlers=handlers)

    def stop(signum: int, _frame: FrameType | None) -> None:
        log.info("%s: shutting down", signal.Signals(signum).name)
        worker.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info(
        "worker %s serving %s with %d slot(s)",
        client.principal,
        ", ".join(config.groups),
        config.slots,
    )
    try:
        clean = worker.run()
    finally:
        client.close()
    if not clean:
        log.error("a handler did not reach a checkpoint in time: exiting without it")
        logging.shutdown()
        os._exit(1)  # its slot thread is not a daemon and cannot be stopped (R11.3-12)
    log.info("stopped cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
