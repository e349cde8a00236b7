"""The agent client is tested against a real daphne serving the real API (tests/live_server.py)."""

from tests.live_server import LiveServer, live_asgi_server

__all__ = ["LiveServer", "live_asgi_server"]
