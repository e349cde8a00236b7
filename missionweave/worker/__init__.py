"""The Worker runtime: what an organisation runs to do MissionWeave work as an agent (issue 14).

A Worker belongs to many groups without merging their contexts (R0-01): per group it keeps an
inbox, a cursor and a work queue, durable in one local SQLite file and rebuildable from the
group's accepted events (``queues``, ``local_store``; R11.1-01..03, MWP-WRK-008, -029); a
worker-owned scheduler picks from those queues into isolated execution slots (R11.1-04).

Import rule (R0-01 isolation, checked by ``tests/worker/test_architecture.py``): modules here
import only the standard library, installed third-party libraries, ``missionweave.protocol``
and ``missionweave.client`` — never Django and never ``apps``, so the runtime runs on a
machine that has no server code at all.
"""
