"""The stream benchmark's smoke test runs against a real server (tests/live_server.py)."""

from tests.live_server import LiveServer, live_asgi_server

__all__ = ["LiveServer", "live_asgi_server"]
