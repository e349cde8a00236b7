"""The stream's load and visibility tests run against a real server (tests/live_server.py)."""

from tests.live_server import LiveServer, live_asgi_server

__all__ = ["LiveServer", "live_asgi_server"]
