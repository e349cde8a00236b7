"""The production ASGI server's protocol choices, in one place (docs/deploy.md).

uvicorn serves ``missionweave.asgi:application`` in production, in ``manage.py demo`` and in
the benchmarks. What they share is how it speaks the protocols; where it listens, with how
many processes and on which event loop, each decides:

- ``--ws websockets-sansio``: the websockets library's current protocol (uvicorn's
  ``websockets`` one runs the library's deprecated legacy server);
- no permessage-deflate: compressing every ~600-byte ``EVENT`` frame per socket cost latency
  at 100 subscribers (p50 14 → 8 ms without it, docs/deploy.md);
- no lifespan: Channels' router has none to run;
- no access log: a line per command costs CPU the GIL-bound write path needs;
- ``--http`` uvicorn's httptools protocol with deadlines on reading a request's headers and
  body (``missionweave.http_deadlines``: a request that never finishes arriving is closed).
"""

from __future__ import annotations

APPLICATION = "missionweave.asgi:application"

HTTP_PROTOCOL = "missionweave.http_deadlines:DeadlineHttpToolsProtocol"

UVICORN_PROTOCOL_FLAGS: tuple[str, ...] = (
    "--http",
    HTTP_PROTOCOL,
    "--ws",
    "websockets-sansio",
    "--ws-per-message-deflate",
    "false",
    "--lifespan",
    "off",
    "--no-access-log",
)
