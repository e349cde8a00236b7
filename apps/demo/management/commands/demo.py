"""``manage.py demo [--no-serve] [--port P] [--interval S]``: seed demo data and run it live.

Seeds the demo world (:mod:`apps.demo.cast`: the organisation of
:mod:`missionweave.demo.organisation`) and its first WorkItems (:mod:`apps.demo.story`), both
idempotent, then runs the product and a simulated organisation as separate processes:

- uvicorn serving the API, the websocket stream and the dashboard on 127.0.0.1, one process,
  with the production server's protocol choices (docs/deploy.md): it hands request bodies to
  the application as they arrive, so the command edge refuses an unauthenticated or oversized
  request from its headers, before the body is read (issue 16 §1);
- a Celery worker with an embedded beat (``celery -A missionweave worker -B``), so the
  time-driven sweeps (missed start deadlines, expired leases) and the authority's review of
  each submission happen as in production. It uses kombu's ``filesystem://`` broker under
  ``var/celery`` (no server) unless ``CELERY_BROKER_URL`` says otherwise; log
  ``var/celery.log``;
- the organisation's agents (:mod:`missionweave.demo.launch`): a coordinator planning
  missions across two groups, three ``missionweave-worker`` processes with 1, 2 and 3 slots,
  and a reviewer agent — all talking HTTP and websockets through the client SDK, exactly as
  an outside agent would. Their logs are in ``var/demo/logs``; the coordinator's and the
  reviewer's lines are echoed here.

On the embedded default the in-memory channel layer cannot carry one process's hints to
another's consumers; the server's consumers notice the new events by polling the head
(``MWP_STREAM_POLL_S``), as the README explains.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from apps.demo import agent_state
from apps.demo.cast import DemoWorld, OlderDemo, demo_seed
from apps.demo.story import seed_work
from missionweave.demo.launch import Organisation
from missionweave.demo.organisation import GROUPS
from missionweave.production_server import APPLICATION, UVICORN_PROTOCOL_FLAGS

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 30
STOP_TIMEOUT_S = 10


class Command(BaseCommand):
    help = "Seed demo data (idempotent), then serve it on 127.0.0.1 while its agents work."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-serve", action="store_true", help="seed only, then exit")
        parser.add_argument("--port", type=int, default=8000, help="port to serve on (8000)")
        parser.add_argument(
            "--interval",
            type=float,
            default=2.0,
            help="seconds between the coordinator's and reviewer's beats (2; 0: no agents)",
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
        try:
            world = demo_seed(keys_dir=keys_dir, password=password)
        except OlderDemo as older:
            raise CommandError(
                f"the demo database in {settings.VAR_DIR} was made by an older demo ({older}):"
                " `make clean` resets it"
            ) from None
        seed_work(world)
        if options["no_serve"]:
            self.stdout.write(self.style.SUCCESS(f"Demo data ready in group {world.group}."))
            self._credentials(world, f"http://{HOST}:{options['port']}")
            return
        agents_folder = Path(settings.VAR_DIR) / "demo"
        if agent_state.forget_if_from_another_history(
            agents_folder, agent_state.history_of(list(GROUPS))
        ):
            self.stdout.write(
                "The demo's database is not the one its agents last worked with: their saved"
                f" state in {agents_folder / 'agents'} was cleared, and they start afresh."
            )
        connections.close_all()  # from here on only the servers and the agents write
        self._serve(world, port=options["port"], interval=options["interval"])

    # --- serving ---------------------------------------------------------------------------

    def _serve(self, world: DemoWorld, *, port: int, interval: float) -> None:
        if _listening(port):
            raise CommandError(f"port {port} is already in use (is a demo already running?)")
        stopping = _stop_on_sigterm()
        server = subprocess.Popen(  # noqa: S603 - fixed arguments, our own interpreter
            _server_command(port), cwd=settings.BASE_DIR, env=_server_env(port)
        )
        interrupted = False
        children = [server]
        organisation: Organisation | None = None
        try:
            celery_log = Path(settings.VAR_DIR) / "celery.log"
            celery = _start_celery(celery_log, port)
            children.append(celery)
            self._wait_until_up(server, port)
            organisation = Organisation(
                f"http://{HOST}:{port}",
                world.keys_dir,
                Path(settings.VAR_DIR) / "demo",
                interval_s=interval,
            )
            if interval > 0:
                organisation.start()
            self._banner(world, f"http://{HOST}:{port}", organisation, celery_log)
            self._watch(server, celery, organisation, stopping)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            exited_by_itself = server.poll()
            if organisation is not None:
                # first: the workers checkpoint and release their leases while still served
                for name, status in organisation.stop().items():
                    if status:
                        self.stderr.write(f"  {name} exited with status {status}")
            _stop(*children)
        if exited_by_itself is not None and not (interrupted or stopping):
            raise CommandError(f"the server exited with status {exited_by_itself}")
        self.stdout.write("Demo stopped.")

    def _wait_until_up(self, server: subprocess.Popen, port: int) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _listening(port):
            if server.poll() is not None:
                raise CommandError(f"the server exited with status {server.returncode} at start")
            if time.monotonic() > deadline:
                raise CommandError(f"the server did not listen on {HOST}:{port} within 30 s")
            time.sleep(0.1)

    def _watch(
        self,
        server: subprocess.Popen,
        celery: subprocess.Popen,
        organisation: Organisation,
        stopping: list[int],
    ) -> None:
        """Echo the coordinator's and the reviewer's lines until stopped; report a child that
        exits (the demo still serves without it)."""
        echoed = {agent.name: 0 for agent in organisation.agents if "worker" not in agent.name}
        reported: set[str] = set()
        while server.poll() is None and not stopping:
            time.sleep(0.5)
            if celery.poll() is not None and "celery" not in reported:
                reported.add("celery")
                self.stderr.write(
                    f"  the Celery worker exited with status {celery.returncode}: sweeps "
                    f"stopped (see {Path(settings.VAR_DIR) / 'celery.log'})"
                )
            for agent in organisation.exited():
                if agent.name not in reported:
                    reported.add(agent.name)
                    self.stderr.write(
                        f"  {agent.name} exited with status {agent.process.returncode}"
                        f" (see {agent.log_path})"
                    )
            for agent in organisation.agents:
                if agent.name in echoed and agent.log_path.exists():
                    echoed[agent.name] = self._echo(agent.log_path, echoed[agent.name])

    def _echo(self, path: Path, offset: int) -> int:
        """Write the complete lines of ``path`` after ``offset``; the new offset."""
        with path.open("rb") as log:
            log.seek(offset)
            chunk = log.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        for line in complete.decode(errors="replace").splitlines():
            self.stdout.write(f"  {line}")
        self.stdout.flush()  # show it now, also when the output is a pipe or a file
        return offset + len(complete)

    # --- output ----------------------------------------------------------------------------

    def _banner(
        self, world: DemoWorld, url: str, organisation: Organisation, celery_log: Path
    ) -> None:
        line = "=" * 66
        self.stdout.write(self.style.SUCCESS(line))
        self.stdout.write(self.style.SUCCESS("  MissionWeave demo is running"))
        self.stdout.write(self.style.SUCCESS(line))
        self._credentials(world, url)
        if organisation.agents:
            names = ", ".join(agent.name for agent in organisation.agents)
            self.stdout.write(f"  Agents:     {names}")
            self.stdout.write(f"              (logs: {organisation.folder / 'logs'})")
            self.stdout.write(
                "  Work moves in g-demo and g-demo-lab: sign in as olivia and as omar to "
                "approve the WorkItem that needs both, as rita to review a result."
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
        self.stdout.write(f"  Mail:       {mail_destination()}")
        self.stdout.write(f"  API token:  {world.api_token}")
        self.stdout.write(
            f"  Try:        curl -H 'Authorization: Bearer {world.api_token}' "
            f"{url}/api/v1/groups/{world.group}/events"
        )


def mail_destination() -> str:
    """Where the notification emails go (issue 36): the embedded default's folder, one file
    per email (``missionweave/mail_settings.py``), or the server ``EMAIL_URL`` names."""
    mailer = settings.MAILERS["default"]
    folder = mailer.get("OPTIONS", {}).get("file_path")
    if mailer["BACKEND"].endswith("filebased.EmailBackend") and folder:
        return f"{folder}/  (each email a file; EMAIL_URL sends them instead)"
    return f"sent by {mailer['BACKEND'].rsplit('.', 2)[-2]} (EMAIL_URL)"


def _server_command(port: int) -> list[str]:
    """uvicorn as docs/deploy.md runs it in production, as one process on 127.0.0.1 (the
    embedded default's SQLite and in-memory channel layer are one machine's, one process's)."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        APPLICATION,
        *("--host", HOST, "--port", str(port), "--loop", "auto"),
        *UVICORN_PROTOCOL_FLAGS,
    ]


def _server_env(port: int) -> dict[str, str]:
    """The environment for the server: the chosen port's origins are trusted (dashboard forms,
    browser websockets), and its cookies are not marked Secure (it serves plain HTTP, so a
    browser would not send them back), unless the environment already says otherwise."""
    env = dict(os.environ)
    env.setdefault("CSRF_TRUSTED_ORIGINS", f"http://{HOST}:{port},http://localhost:{port}")
    env.setdefault("MWP_INSECURE_COOKIES", "1")
    return env


def _start_celery(log_path: Path, port: int) -> subprocess.Popen:
    """``celery -A missionweave worker -B``: one worker (one pool process) with beat inside.

    Production runs workers and one beat as separate processes (docs/protocol.md); one
    process tree is enough for a demo. The broker is the filesystem one under ``var/celery``
    unless ``CELERY_BROKER_URL`` is set, also when ``REDIS_URL`` is: only this worker and its
    beat use it. No mingle, gossip or heartbeats: there are no other workers to talk to.
    """
    env = dict(os.environ)
    env.setdefault("CELERY_BROKER_URL", "filesystem://")
    env.setdefault("MWP_PUBLIC_URL", f"http://{HOST}:{port}")  # the links in its emails
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
    """SIGTERM to all at once (the server closes, Celery finishes its task), then SIGKILL."""
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
    """SIGKILL the process group it leads (Celery), or the process alone (the server)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # not a group leader
        process.kill()
