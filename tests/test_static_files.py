"""Static files under ASGI are streamed without Django's synchronous-iterator warning
(issue 34 §7), byte for byte, with WhiteNoise's headers and conditional answers kept.

Against a real uvicorn serving the product: before ``missionweave.static_files`` each of
these requests printed "StreamingHttpResponse must consume synchronous iterators" into the
server's log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live_server import LiveServer, session_server

pytestmark = pytest.mark.django_db(transaction=True)

STATIC = Path(__file__).resolve().parents[1] / "static" / "dashboard"
FILES = ("dashboard.css", "stream.js", "favicon.svg")
WARNING = "StreamingHttpResponse must consume"


@pytest.fixture(scope="module")
def server(django_db_setup: None, worker_id: str) -> Iterator[LiveServer]:
    with session_server(worker_id, server="uvicorn") as live:
        yield live


def test_static_files_arrive_whole_and_the_server_logs_no_streaming_warning(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url) as client:
        for name in FILES:
            response = client.get(f"/static/dashboard/{name}")
            assert response.status_code == 200, name
            assert response.content == (STATIC / name).read_bytes(), name
            assert int(response.headers["content-length"]) == len(response.content)
            etag = response.headers["etag"]
            again = client.get(f"/static/dashboard/{name}", headers={"If-None-Match": etag})
            assert (again.status_code, again.content) == (304, b""), name
            head = client.head(f"/static/dashboard/{name}")
            assert (head.status_code, head.content) == (200, b""), name
    assert WARNING not in server.log()
