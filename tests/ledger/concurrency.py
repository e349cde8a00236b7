"""Real threads against the real database, for the tests that prove the locking.

Each thread gets its own database connection (Django's connections are per thread) and
closes it when done, so a transactional test's teardown is not blocked by idle sessions.
The threads wait on a barrier so their first commands really collide.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import connection


def run_in_threads[T](count: int, work: Callable[[int], T], *, timeout: float = 900) -> list[T]:
    """Run ``work(index)`` in ``count`` threads started together; their results in order.

    An exception in a thread is re-raised here (the first one), after every thread ended.
    """
    barrier = threading.Barrier(count)
    results: list[T | None] = [None] * count
    errors: list[BaseException] = []

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except BaseException as error:  # report it in the main thread
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"threads still running after {timeout} s")
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]
