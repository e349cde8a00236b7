"""The demo's simulated organisation, run as agents (issue 14 §8).

Agent-side like ``missionweave.worker``: the protocol core, the client SDK and the worker
runtime only, never Django or ``apps`` (import-linter's "Agent-side code" contract).
``organisation`` names the groups and agents, ``personas`` is the one agent class the demo,
the tests and the benchmarks share, ``coordinator`` and ``reviewer`` are the two agents that
are not workers, and ``work`` is the workers' deterministic task handler.
"""
