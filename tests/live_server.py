"""A real ASGI server process for tests: the production server (uvicorn) by default, on a
free port, against the test database.

pytest-django's ``live_server`` runs WSGI in a thread, so it has no websockets
(TOOLCHAIN.md gotcha 2). This starts the server as a separate process, pointed at the
pytest-django test database (``MWP_TEST_DB_NAME``), with its own channel-layer prefix, and
waits until it answers ``GET /api/v1/authority``.

The server is uvicorn with the production command line's protocol choices
(``missionweave/production_server.py``) plus its access log, so a test can read what was
answered; ``server="daphne"`` (or ``MWP_TEST_SERVER=daphne`` for every default server) starts
daphne, which reads a whole request body before the application runs, as a check that the
product still works there.

Tests that use it must commit what the server should see: request ``transactional_db``,
not ``db`` (the ``live_server`` pattern). Under xdist every worker gets its own server,
port, database and prefix.

Import the fixture into a ``conftest.py`` to use it::

    from tests.live_server import live_asgi_server  # noqa: F401
"""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections
from django.test import override_settings

from apps.ledger.authority import signing_key
from missionweave.production_server import APPLICATION, UVICORN_PROTOCOL_FLAGS
from missionweave.protocol.signing import b64url_encode, private_key_seed

BASE_DIR = Path(__file__).resolve().parent.parent
DAPHNE = BASE_DIR / ".venv" / "bin" / "daphne"
UVICORN = BASE_DIR / ".venv" / "bin" / "uvicorn"
DEFAULT_APP = APPLICATION
#: the server every live server of a run is, unless a test names one
DEFAULT_SERVER = os.environ.get("MWP_TEST_SERVER") or "uvicorn"
STARTUP_TIMEOUT_S = 30.0


def in_plain_thread[T](function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``function`` in a short-lived thread with no event loop and return its result.

    Playwright's sync API keeps an event loop running in the test's thread, where Django
    refuses ORM calls and the write path cannot send its after-commit hint (``async_to_sync``
    needs a thread without a running loop). A browser test appends events through this, so
    they travel the same way as in production; the thread's connection is closed after.
    """

    def run() -> T:
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


@dataclass(frozen=True)
class LiveServer:
    url: str  # http://127.0.0.1:<port>, no trailing slash
    ws_url: str  # ws://127.0.0.1:<port>
    origin: str  # what a browser on this server sends as Origin
    channel_prefix: str
    log_path: Path
    pid: int  # the server's process (a wrapper execs it, so it keeps the wrapper's id)

    def log(self) -> str:
        """The server's output so far (for assertion messages)."""
        return self.log_path.read_text(errors="replace")


def _listening_socket(port: int = 0) -> socket.socket:
    """A socket already bound and listening: the server adopts it, so no other process can
    take the port between choosing it and binding it (the usual free-port race)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


def _authority_key_seed() -> str:
    """The test process's authority key, so the server signs heads and snapshots with it."""
    return b64url_encode(private_key_seed(signing_key()))


def _wait_until_ready(url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{log_path.stem} exited with {process.returncode}:\n"
                + log_path.read_text(errors="replace")
            )
        try:
            with urllib.request.urlopen(f"{url}/api/v1/authority", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise RuntimeError(
        f"{log_path.stem} did not answer within {STARTUP_TIMEOUT_S} s:\n"
        + log_path.read_text(errors="replace")
    )


def _server_command(server: str, fd: int, app: str) -> list[str]:
    """The command line of ``server`` serving ``app`` on the inherited listening socket."""
    if server == "daphne":
        return [str(DAPHNE), "--fd", str(fd), "-v", "1", app]
    if server == "uvicorn":
        flags = [flag for flag in UVICORN_PROTOCOL_FLAGS if flag != "--no-access-log"]
        return [str(UVICORN), "--fd", str(fd), *flags, "--log-level", "info", app]
    raise ValueError(f"unknown server {server!r}")


@contextmanager
def run_live_server(
    *,
    database_name: str,
    channel_prefix: str,
    app: str = DEFAULT_APP,
    port: int = 0,
    extra_env: dict[str, str] | None = None,
    server: str = DEFAULT_SERVER,
    wrapper: Sequence[str] = (),
) -> Iterator[LiveServer]:
    """Run ``server`` (``daphne`` or ``uvicorn``) serving ``app`` against ``database_name``
    until the block exits.

    ``port`` 0 picks a free one; a test that restarts a server passes the previous port.
    ``extra_env`` overrides settings from the environment (e.g. the channel layer).
    ``wrapper`` is a command the server's command line is handed to (it must ``exec`` it, so
    the process id stays the server's): a fault test prepares the server's world with it.
    """
    if not os.environ.get("DATABASE_URL"):
        raise RuntimeError(
            "the live server shares the test database through DATABASE_URL: run on PostgreSQL"
        )
    sock = _listening_socket(port)
    port = sock.getsockname()[1]
    application_name = f"mwp-live-{channel_prefix}-{port}"
    url, origin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}"
    origins = f"{origin},http://localhost:{port}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "missionweave.settings",
        "MWP_TEST_DB_NAME": database_name,
        "MWP_CHANNEL_PREFIX": channel_prefix,
        "MWP_STREAM_ALLOWED_ORIGINS": origins,
        "CSRF_TRUSTED_ORIGINS": origins,
        "MWP_AUTHORITY_KEY": os.environ.get("MWP_AUTHORITY_KEY") or _authority_key_seed(),
        # libpq names the server's database sessions, so stopping can wait for them to end.
        "PGAPPNAME": application_name,
        # Each request runs in a thread of its own, so a burst of 50 clients would take the
        # product's 32 pooled connections per server; with two test workers, a second server
        # and Celery processes that exhausted PostgreSQL's 100. Requests past 10 wait.
        "MWP_DB_POOL_MAX": "10",
        # served over plain HTTP: cookies marked Secure would never come back
        "MWP_INSECURE_COOKIES": "1",
        **(extra_env or {}),
    }
    # Whatever the test process relaxed, the server keeps Django's async-safety check.
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    log_dir = Path(tempfile.mkdtemp(prefix="mwp-live-"))
    log_path = log_dir / f"{server}.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [*wrapper, *_server_command(server, sock.fileno(), app)],
            cwd=BASE_DIR,
            env=env,
            pass_fds=[sock.fileno()],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    sock.close()  # the child holds its own copy of the listening socket
    try:
        _wait_until_ready(url, process, log_path)
        yield LiveServer(
            url=url,
            ws_url=f"ws://127.0.0.1:{port}",
            origin=origin,
            channel_prefix=channel_prefix,
            log_path=log_path,
            pid=process.pid,
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        _wait_for_server_sessions_to_end(application_name)


def _wait_for_server_sessions_to_end(application_name: str, timeout_s: float = 10.0) -> None:
    """A stopped server's PostgreSQL backends linger for a moment, and the test database can
    only be dropped once they are gone. They are recognised by the server's
    ``application_name``; this asks the server's maintenance database, so it needs neither
    Django's connection (blocked outside tests, refused under Playwright) nor the test DB."""
    params = connection.settings_dict
    with psycopg.connect(
        host=params["HOST"] or None,
        port=params["PORT"] or None,
        user=params["USER"] or None,
        password=params["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    ) as maintenance:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            row = maintenance.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                [application_name],
            ).fetchone()
            if row is None or row[0] == 0:
                return
            time.sleep(0.05)


@contextmanager
def _test_process_channel_prefix(prefix: str) -> Iterator[None]:
    """Make this process's Redis channel layer use the server's prefix, so the write path's
    after-commit hints reach the server's consumers (and no other worker's)."""
    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    config = layers.get("default", {}).get("CONFIG")
    if config is None or "prefix" not in config:
        yield  # the in-memory layer: the server's consumers poll the head instead
        return
    config["prefix"] = prefix
    with override_settings(CHANNEL_LAYERS=layers):
        yield


@contextmanager
def session_server(
    worker_id: str,
    *,
    server: str = DEFAULT_SERVER,
    extra_env: dict[str, str] | None = None,
    wrapper: Sequence[str] = (),
) -> Iterator[LiveServer]:
    """A server on this worker's test database, with a channel prefix of its own."""
    database_name = connection.settings_dict["NAME"]
    prefix = f"mwp-test-{worker_id}-{uuid.uuid4().hex[:8]}"
    with (
        _test_process_channel_prefix(prefix),
        run_live_server(
            database_name=database_name,
            channel_prefix=prefix,
            extra_env=extra_env,
            server=server,
            wrapper=wrapper,
        ) as live,
    ):
        yield live


@pytest.fixture(scope="session")
def live_asgi_server(django_db_setup: None, worker_id: str) -> Iterator[LiveServer]:
    """A real server for this test session (one per xdist worker): uvicorn unless
    ``MWP_TEST_SERVER`` says otherwise."""
    with session_server(worker_id) as server:
        yield server


@pytest.fixture(scope="session")
def uvicorn_server(
    request: pytest.FixtureRequest, django_db_setup: None, worker_id: str
) -> Iterator[LiveServer]:
    """A real uvicorn for this test session (one per xdist worker): request bodies reach the
    application as they arrive, as the artifact uploads need. The session's
    ``live_asgi_server`` when that is uvicorn already."""
    if DEFAULT_SERVER == "uvicorn":
        yield request.getfixturevalue("live_asgi_server")
        return
    with session_server(worker_id, server="uvicorn") as server:
        yield server
