"""The servers the artifact tests run against: a uvicorn serving the product with its objects
in a folder or bucket of its own, and a real ``moto_server`` speaking S3 over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx

from apps.artifacts.storage import Storage
from tests.live_server import BASE_DIR, LiveServer

MOTO_SERVER = BASE_DIR / ".venv" / "bin" / "moto_server"
#: the servers' limit: small, so "over the limit" is cheap to send
MAX_BYTES = 6 * 1024 * 1024
#: the servers verify objects above this in two passes (the 8 MiB default, scaled down so
#: small test objects exercise the streaming path too)
IN_MEMORY_BYTES = 64 * 1024
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class ArtifactServer:
    """A uvicorn serving the product, and the storage it keeps objects in."""

    live: LiveServer
    storage: Storage

    @property
    def url(self) -> str:
        return self.live.url

    def artifact_url(self, digest: str) -> str:
        return f"{self.live.url}/api/v1/artifacts/{digest}"

    def spools(self) -> list[Path]:
        folder = self.storage.spool_dir
        return sorted(folder.iterdir()) if folder.is_dir() else []


@dataclass(frozen=True)
class MotoServer:
    endpoint_url: str

    def client(self) -> Any:
        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name="us-east-1")

    def new_bucket(self) -> str:
        name = f"mwp-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name


def server_env(folder: Path) -> dict[str, str]:
    """The artifact settings of a test server keeping its objects under ``folder``."""
    return {
        "MWP_ARTIFACT_DIR": str(folder),
        "MWP_ARTIFACT_MAX_BYTES": str(MAX_BYTES),
        "MWP_ARTIFACT_VERIFY_IN_MEMORY_BYTES": str(IN_MEMORY_BYTES),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            httpx.get(url, timeout=1)
            return True
        except httpx.HTTPError:
            time.sleep(0.1)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def run_moto_server() -> Iterator[MotoServer]:
    """``moto_server`` on a free port until the block exits. It binds the port itself, so
    another process may take the port first: then it is tried again on another."""
    log = Path(tempfile.mkdtemp(prefix="mwp-moto-")) / "moto.log"
    for _attempt in range(3):
        port = _free_port()
        with log.open("ab") as sink:
            process = subprocess.Popen(
                [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
                env={**os.environ, **S3_CREDENTIALS},
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        if not _answers(url, process):
            _stop(process)
            continue
        try:
            yield MotoServer(url)
        finally:
            _stop(process)
        return
    raise RuntimeError(f"moto_server could not start:\n{log.read_text(errors='replace')}")
