"""Problems of a batch on the host's cores at once: one host thread per problem in turn.

A compiled call releases the GIL, so K independent problems (one-vs-rest classes, the points of a C
grid, one-vs-one pairs) run on as many cores as there are threads, each thread taking the next problem
when its own is done (``svmopt.driver`` runs them so on one CPU device). A dual CD pass is serial: this
is what puts a second core to work there.
"""
from __future__ import annotations

import os
import threading

__all__ = ["host_threads", "for_each"]


def host_threads() -> int:
    """Problems of a batch run at the same time on the CPU: the cores this process may use, or
    ``SVMOPT_THREADS`` when set (1: one after another)."""
    env = os.environ.get("SVMOPT_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"SVMOPT_THREADS must be a positive integer, got {env!r}") from None
        if n < 1:
            raise ValueError(f"SVMOPT_THREADS must be a positive integer, got {env!r}")
        return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def for_each(fn, size: int, workers: int, stop: threading.Event) -> None:
    """fn(0), ..., fn(size - 1), ``workers`` at a time (in this thread when 1). ``fn`` returns at its
    next chance once ``stop`` is set. An exception in any call (Ctrl-C in this thread, an error in a
    worker) sets ``stop``, every worker is joined, and it is raised here."""
    if workers <= 1:
        for i in range(size):
            fn(i)
        return
    pending = iter(range(size))  # (next() on a shared range iterator hands each index out once)
    failure: list = []
    lock = threading.Lock()
    left = [workers]
    all_done = threading.Event()

    def worker():
        try:
            for i in pending:
                if stop.is_set():
                    return
                fn(i)
        except BaseException as exc:  # noqa: BLE001  (re-raised by the caller's thread)
            failure.append(exc)
            stop.set()
        finally:
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    all_done.set()

    threads = [threading.Thread(target=worker, daemon=True, name=f"svmopt-lane-{j}") for j in range(workers)]
    for t in threads:
        t.start()
    try:
        while not all_done.wait(0.05):  # (a timed wait, not a join: Ctrl-C reaches this thread)
            pass
    except BaseException:
        stop.set()
        raise
    finally:
        for t in threads:  # (every lane ends at its next chunk)
            t.join()
    if failure:
        raise failure[0]
