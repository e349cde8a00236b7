"""Throughput and latency benchmarks of the write path, measured next to their ceilings.

Run with ``make bench`` (``python -m benchmarks.run``); the numbers land in
``docs/benchmarks.md``. ``README.md`` here says where the runner, the scenarios and the
report are.
"""
