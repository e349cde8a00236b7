"""Load docs/deploy.md's nginx block into a real nginx and check the limits it claims.

The block under "nginx in front" is the one the docs show; it is read from the page, not
kept in a second copy, so the two cannot drift. nginx runs it on a free port, in front of a
stub upstream that reads each body whole and answers 200, and this checks:

- ``nginx -t`` accepts it;
- a form declaring 256 MiB is refused (413) from its headers, within 1 s;
- a 1.5 MiB form passes through (the application refuses it itself, with its own answer);
- ``commands:batch`` and artifact uploads pass bodies over the default limit, and are
  refused past their own;
- a request whose headers never end is closed by ``client_header_timeout``.

    make nginx-check    # nginx from the distribution: apt-get install -y nginx
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "deploy.md"
MIB = 1024 * 1024
HEADER_TIMEOUT_S = 10


def documented_block() -> str:
    """The fenced ``nginx`` block after "nginx in front" in docs/deploy.md."""
    text = DEPLOY.read_text()
    start = text.index("**nginx in front**")
    match = re.compile(r"```nginx\n(.*?)```", re.DOTALL).search(text, start)
    if match is None:
        raise SystemExit("docs/deploy.md: no ```nginx block after 'nginx in front'")
    return match[1]


class _Stub(BaseHTTPRequestHandler):
    """The application's place: reads a body whole (as the proxy sends it) and says 200."""

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        remaining = length
        while remaining:
            remaining -= len(self.rfile.read(min(remaining, 64 * 1024)))
        body = f"upstream read {length}\n".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _configuration(folder: Path, block: str, port: int, upstream: int) -> Path:
    block = block.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    block = block.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};")
    for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (folder / name).mkdir()
    conf = folder / "nginx.conf"
    conf.write_text(
        f"""daemon off;
master_process off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{}}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{block}
}}
"""
    )
    return conf


def _status(port: int, method: str, path: str, declared: int, body: bytes = b"") -> int:
    """The status nginx answers to ``method path`` declaring ``declared`` bytes and sending
    ``body`` (all of them, or none to see a refusal from the headers)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {declared}\r\n"
            "Connection: close\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split()[1]) if answer else 0


def _check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}")
    return ok


def _checks(port: int) -> list[bool]:
    results = []
    started = time.monotonic()
    status = _status(port, "POST", "/login/", 256 * MIB)
    elapsed = time.monotonic() - started
    results.append(
        _check("a form declaring 256 MiB: 413 from its headers", status == 413 and elapsed < 1)
    )
    form = b"a" * (3 * MIB // 2)
    status = _status(port, "POST", "/login/", len(form), form)
    results.append(_check("a 1.5 MiB form reaches the application", status == 200, str(status)))
    batch = "/api/v1/groups/g-1/commands:batch"
    big = b"a" * (3 * MIB)
    status = _status(port, "POST", batch, len(big), big)
    results.append(_check("a 3 MiB commands:batch reaches it", status == 200, str(status)))
    status = _status(port, "POST", batch, 10 * MIB)
    results.append(_check("a batch declaring 10 MiB: 413", status == 413, str(status)))
    artifact = "/api/v1/artifacts/sha256:" + "0" * 64
    status = _status(port, "PUT", artifact, len(big), big)
    results.append(_check("a 3 MiB artifact upload reaches it", status == 200, str(status)))
    status = _status(port, "PUT", artifact, 102 * MIB)
    results.append(_check("an upload declaring 102 MiB: 413", status == 413, str(status)))
    with socket.create_connection(("127.0.0.1", port), timeout=HEADER_TIMEOUT_S + 5) as sock:
        sock.sendall(b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        started = time.monotonic()
        try:
            while sock.recv(4096):
                pass
        except (ConnectionResetError, TimeoutError):
            pass  # closed by a reset, or not at all (the elapsed time says which)
        elapsed = time.monotonic() - started
    results.append(
        _check(
            f"headers that never end: closed after client_header_timeout ({HEADER_TIMEOUT_S} s)",
            HEADER_TIMEOUT_S - 1 <= elapsed <= HEADER_TIMEOUT_S + 2,
            f"{elapsed:.1f} s",
        )
    )
    return results


def main() -> int:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        print("nginx is not installed: apt-get install -y nginx", file=sys.stderr)
        return 2
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="mwp-nginx-") as tmp:
        folder = Path(tmp)
        conf = _configuration(folder, documented_block(), port, upstream.server_address[1])
        command = [nginx, "-p", str(folder), "-c", str(conf)]
        # the distribution's nginx on a configuration written here: nothing untrusted
        test = subprocess.run([*command, "-t"], check=False, capture_output=True, text=True)  # noqa: S603
        if not _check("nginx -t accepts the documented block", test.returncode == 0):
            print(test.stderr, file=sys.stderr)
            return 1
        server = subprocess.Popen(command)  # noqa: S603
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            results = _checks(port)
        finally:
            server.terminate()
            server.wait(timeout=10)
            upstream.shutdown()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
