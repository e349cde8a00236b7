"""The artifact store's disk full (issue 16 §8).

A server process (uvicorn, as deployed) whose artifact folder is a small ``tmpfs`` of its
own: the server is started inside a mount namespace of its own (``unshare --mount``) that
mounts the ``tmpfs`` over ``MWP_ARTIFACT_DIR`` and then ``exec``s the server, so the machine's
filesystems are untouched and the mount ends with the process. The test sees the server's
view of the folder through ``/proc/<pid>/root``.

What must hold: an upload the disk has no room for is refused with 507 ``STORAGE_FULL`` in
the wire.md §8 shape — no 500, no hang — and nothing of it is left: no object, no spool file,
the room it took given back. What was stored before is served and verified as before, an
upload that fits is still stored, and the refused digest is unknown (404).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import factories
from tests.faults.reporting import report
from tests.live_server import LiveServer, session_server

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

MiB = 1024 * 1024
DISK_BYTES = 4 * MiB
#: mounts the small disk over the artifact folder, then becomes the server (``exec``)
MOUNT_AND_SERVE = (
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "--",
    "sh",
    "-c",
    f'mount -t tmpfs -o size={DISK_BYTES} mwp-full-disk "$MWP_ARTIFACT_DIR" && exec "$@"',
    "mount-and-serve",
)


@pytest.fixture
def small_disk_server(transactional_db: None, worker_id: str) -> Iterator[LiveServer]:
    folder = tempfile.mkdtemp(prefix="mwp-full-disk-")
    with session_server(
        worker_id,
        server="uvicorn",
        extra_env={"MWP_ARTIFACT_DIR": folder},
        wrapper=MOUNT_AND_SERVE,
    ) as server:
        yield server
    os.rmdir(folder)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _folder(server: LiveServer) -> Path:
    """The server's artifact folder, as its mount namespace sees it."""
    env = Path(f"/proc/{server.pid}/environ").read_bytes().split(b"\0")
    value = next(item for item in env if item.startswith(b"MWP_ARTIFACT_DIR="))
    return Path(f"/proc/{server.pid}/root") / value.split(b"=", 1)[1].decode().lstrip("/")


def test_an_upload_the_disk_has_no_room_for_is_507_and_leaves_nothing(
    small_disk_server: LiveServer,
) -> None:
    """Issue 16 §8; wire.md §4 (artifacts), §8."""
    agent = factories.agent("full-disk-agent", factories.organization("org-full-disk"))
    agent.open_session()
    server = small_disk_server
    folder = _folder(server)
    headers = {"Authorization": f"Bearer {agent.token}", "Content-Type": "application/octet-stream"}
    stored, too_big, fits = os.urandom(1 * MiB), os.urandom(6 * MiB), os.urandom(1 * MiB)

    def put(data: bytes) -> httpx.Response:
        return http.put(f"/api/v1/artifacts/{_digest(data)}", content=data, headers=headers)

    def files() -> dict[str, int]:
        return {
            str(path.relative_to(folder)): path.stat().st_size
            for path in folder.rglob("*")
            if path.is_file()
        }

    with httpx.Client(base_url=server.url, timeout=60) as http:
        assert put(stored).status_code == 201
        before = files()
        free_before = os.statvfs(folder).f_bavail

        refused = put(too_big)
        assert refused.status_code == 507, refused.text
        error = refused.json()["error"]
        assert (error["code"], error["requirement"]) == ("STORAGE_FULL", "wire§8")
        assert "nothing was stored" in error["message"]
        # nothing half-written: the same files, the room given back
        assert files() == before
        assert os.statvfs(folder).f_bavail == free_before

        again = put(too_big)  # the same refusal, and still nothing left behind
        assert again.status_code == 507
        assert files() == before

        served = http.get(f"/api/v1/artifacts/{_digest(stored)}", headers=headers)
        assert (served.status_code, served.content == stored) == (200, True)
        unknown = http.head(f"/api/v1/artifacts/{_digest(too_big)}", headers=headers)
        assert unknown.status_code == 404
        assert put(fits).status_code == 201

    assert " 500 " not in server.log()
    report(
        "artifact_disk_full",
        {
            "disk_bytes": DISK_BYTES,
            "refused_upload_bytes": len(too_big),
            "answer": f"{refused.status_code} {error['code']}",
            "files_before": len(before),
            "files_after_refusal": len(before),
            "free_blocks_before_and_after_refusal": free_before,
        },
    )
