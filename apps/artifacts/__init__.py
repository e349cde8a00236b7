"""The content-addressed artifact store (R13.1-01, R13.1-02, R13.1-05, R13.1-06).

Bytes are kept outside every group log, under their ``sha256:`` digest, on the filesystem or
in an S3-compatible bucket; ``PUT``/``GET /api/v1/artifacts/{digest}`` are served by a raw
ASGI handler (``apps.artifacts.asgi``) mounted ahead of Django so uploads stream.
"""
