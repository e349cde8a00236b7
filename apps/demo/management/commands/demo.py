"""``manage.py demo [--no-serve] [--port P] [--interval S]``: seed live demo data and serve it.

Seeds the demo world (:mod:`apps.demo.cast`) and its WorkItems
(:mod:`apps.demo.story`), both idempotent, then serves the API, the websocket stream
and the dashboard with daphne on 127.0.0.1 and, while it runs, plays one beat of the live
workflow every few seconds: missions arrive, the coordinator offers WorkItems, the workers
accept, start, report, checkpoint and submit, results are accepted — all as signed commands
through the write path, so open pages have something to watch.

daphne runs as a child process and this process keeps writing. On the embedded default the
in-memory channel layer cannot carry this process's hints to daphne's consumers; they notice
the new events by polling the head (``MWP_STREAM_POLL_S``), as the README explains.

A Celery worker with an embedded beat (``celery -A missionweave worker -B``) runs as a second
child, so the time-driven sweeps (missed start deadlines, expired leases) happen in the demo
as in production. It uses kombu's ``filesystem://`` broker under ``var/celery`` (no server)
unless ``CELERY_BROKER_URL`` says otherwise, and logs to ``var/celery.log``.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, close_old_connections

from apps.demo.cast import DemoWorld, demo_seed
from apps.demo.story import seed_work, tick

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 30
STOP_TIMEOUT_S = 10


class Command(BaseCommand):
    help = "Seed demo data (idempotent), then serve it on 127.0.0.1 while work moves live."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-serve", action="store_true", help="seed only, then exit")
        parser.add_argument("--port", type=int, default=8000, help="port to serve on (8000)")
        parser.add_argument(
            "--interval",
            type=float,
            default=3.0,
            help="seconds between beats of the live workflow (3; 0 turns it off)",
        )
        parser.add_argument(
            "--keys-dir",
            type=Path,
            default=None,
            help="where the demo agents' private keys are kept (var/demo-keys)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        keys_dir = options["keys_dir"] or Path(settings.VAR_DIR) / "demo-keys"
        password = os.environ.get("MWP_DEMO_PASSWORD", "missionweave-demo")
        world = demo_seed(keys_dir=keys_dir, password=password)
        seed_work(world)
        if options["no_serve"]:
            self.stdout.write(self.style.SUCCESS(f"Demo data ready in group {world.group}."))
            self._credentials(world, f"http://{HOST}:{options['port']}")
            return
        self._serve(world, port=options["port"], interval=options["interval"])

    # --- serving ---------------------------------------------------------------------------

    def _serve(self, world: DemoWorld, *, port: int, interval: float) -> None:
        if _listening(port):
            raise CommandError(f"port {port} is already in use (is a demo already running?)")
        stopping = _stop_on_sigterm()
        daphne = subprocess.Popen(  # noqa: S603 - fixed arguments, our own interpreter
            [
                sys.executable,
                "-m",
                "daphne",
                "--bind",
                HOST,
                "--port",
                str(port),
                "missionweave.asgi:application",
            ],
            cwd=settings.BASE_DIR,
            env=_server_env(port),
        )
        interrupted = False
        children = [daphne]
        try:
            celery_log = Path(settings.VAR_DIR) / "celery.log"
            celery = _start_celery(celery_log)
            children.append(celery)
            self._wait_until_up(daphne, port)
            self._banner(world, f"http://{HOST}:{port}", interval, celery_log)
            self._produce(world, daphne, celery, interval, stopping)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            exited_by_itself = daphne.poll()
            _stop(*children)
        if exited_by_itself is not None and not (interrupted or stopping):
            raise CommandError(f"daphne exited with status {exited_by_itself}")
        self.stdout.write("Demo stopped.")

    def _wait_until_up(self, daphne: subprocess.Popen, port: int) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _listening(port):
            if daphne.poll() is not None:
                raise CommandError(f"daphne exited with status {daphne.returncode} at start")
            if time.monotonic() > deadline:
                raise CommandError(f"daphne did not listen on {HOST}:{port} within 30 s")
            time.sleep(0.1)

    def _produce(
        self,
        world: DemoWorld,
        daphne: subprocess.Popen,
        celery: subprocess.Popen,
        interval: float,
        stopping: list[int],
    ) -> None:
        """Play a beat of the live workflow every ``interval`` seconds until stopped."""
        rng = random.Random()  # noqa: S311 - the demo's dice, not a secret
        next_at = time.monotonic() + interval
        celery_reported = False
        while daphne.poll() is None and not stopping:
            time.sleep(0.2)
            if celery.poll() is not None and not celery_reported:
                # The demo still serves; only the time-driven sweeps stop.
                celery_reported = True
                self.stderr.write(
                    f"  the Celery worker exited with status {celery.returncode}: sweeps "
                    f"stopped (see {Path(settings.VAR_DIR) / 'celery.log'})"
                )
            if interval <= 0 or time.monotonic() < next_at:
                continue
            next_at = time.monotonic() + interval
            # daphne (another process) shares the database: a fresh connection each beat
            close_old_connections()
            try:
                lines = tick(world, rng)
            except DatabaseError as problem:
                # a locked database (SQLite) or a lost connection: the next beat tries again
                self.stderr.write(f"  live beat skipped: {problem}")
                continue
            finally:
                close_old_connections()
            for line in lines:
                (self.stderr if line.startswith("  refused") else self.stdout).write(line)
            self.stdout.flush()  # show it now, also when the output is a pipe or a file

    # --- output ----------------------------------------------------------------------------

    def _banner(self, world: DemoWorld, url: str, interval: float, celery_log: Path) -> None:
        line = "=" * 66
        self.stdout.write(self.style.SUCCESS(line))
        self.stdout.write(self.style.SUCCESS("  MissionWeave demo is running"))
        self.stdout.write(self.style.SUCCESS(line))
        self._credentials(world, url)
        if interval > 0:
            self.stdout.write(
                f"  Work moves in {world.group} every {interval:g} s: sign in as olivia and as "
                "omar to approve the WorkItem that needs both, as rita to review a result."
            )
        self.stdout.write(
            f"  Sweeps:     a Celery worker with beat, every {settings.MWP_SWEEP_INTERVAL_S:g} s "
            f"(log: {celery_log})"
        )
        self.stdout.write("  Press Ctrl-C to stop.")
        self.stdout.write(self.style.SUCCESS(line))
        self.stdout.flush()

    def _credentials(self, world: DemoWorld, url: str) -> None:
        self.stdout.write(f"  Dashboard:  {url}")
        self.stdout.write(f"  Username:   {world.admin_username}  (admin and mission owner)")
        for person in world.people:
            self.stdout.write(f"              {person.username:<10} ({person.does})")
        self.stdout.write(f"  Password:   {world.password}  (the same for everyone)")
        self.stdout.write(f"  API token:  {world.api_token}")
        self.stdout.write(
            f"  Try:        curl -H 'Authorization: Bearer {world.api_token}' "
            f"{url}/api/v1/groups/{world.group}/events"
        )


def _server_env(port: int) -> dict[str, str]:
    """The environment for daphne: the chosen port's origins are trusted (dashboard forms,
    browser websockets) unless the environment already says which origins to trust."""
    env = dict(os.environ)
    env.setdefault("CSRF_TRUSTED_ORIGINS", f"http://{HOST}:{port},http://localhost:{port}")
    return env


def _start_celery(log_path: Path) -> subprocess.Popen:
    """``celery -A missionweave worker -B``: one worker (one pool process) with beat inside.

    Production runs workers and one beat as separate processes (docs/protocol.md); one
    process tree is enough for a demo. The broker is the filesystem one under ``var/celery``
    unless ``CELERY_BROKER_URL`` is set, also when ``REDIS_URL`` is: only this worker and its
    beat use it. No mingle, gossip or heartbeats: there are no other workers to talk to.
    """
    env = dict(os.environ)
    env.setdefault("CELERY_BROKER_URL", "filesystem://")
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "--app",
                "missionweave",
                "worker",
                "--beat",
                "--loglevel",
                "INFO",
                "--concurrency",
                "1",
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
            ],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            # A group of its own: if it must be killed, its pool and its beat go with it
            # (SIGKILL to the worker alone leaves beat running). Ctrl-C reaches this command,
            # which stops it.
            start_new_session=True,
        )


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0


def _stop_on_sigterm() -> list[int]:
    """A list that gets the signal number when SIGTERM arrives (checked by the loop)."""
    received: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: received.append(signum))
    return received


def _stop(*processes: subprocess.Popen) -> None:
    """SIGTERM to all at once (daphne closes, Celery finishes its task), then SIGKILL."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill(process)
            process.wait()


def _kill(process: subprocess.Popen) -> None:
    """SIGKILL the process group it leads (Celery), or the process alone (daphne)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # not a group leader
        process.kill()
