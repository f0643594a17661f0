"""Progress of an eager run: chunk sizing, progress lines (logger "svmopt") and history tables."""
from __future__ import annotations

import logging
import math

import numpy as np

from .problem import relative_gap

__all__ = ["Progress", "ensure_logging", "log"]

log = logging.getLogger("svmopt")
"""The logger progress lines go to (``verbose=True``)."""


class Progress:
    """Chunk sizing, progress lines and history for one eager run.

    verbose: False/0 (quiet), True (a line about every second), an int k (every k
    iterations), or a callable ``f(info: dict)`` called with iteration, objective, gap,
    relative_gap, elapsed after every chunk.
    """

    TARGET = 0.2  # seconds per chunk: Ctrl-C and progress lines are seen about this often
    GROWTH = 8  # a chunk has at most this many times the iterations of the one before

    def __init__(self, verbose=False, history=False, record_every=1, label=""):
        self.verbose, self.history, self.record_every, self.label = verbose, history, int(record_every), label
        self.rows: list = []
        self.last_print = -math.inf
        self.last_k = 0
        self.last_step = 1

    def next_until(self, k, max_iter, per_iter, chunks=None, cap=None):
        """The iteration the next chunk runs to: about TARGET seconds at the measured per-iteration
        time. The first chunk is one iteration (one iteration of a cutting plane or AL-FPGM on a
        large problem can take a second) and a chunk grows at most ``GROWTH``-fold over the last,
        so a slow iteration after fast ones cannot make a chunk run far past TARGET.
        ``chunks`` (the number of chunks run so far) replaces the timing rule by a fixed doubling
        16, 32, ... 1024: several processes must run chunks of the same length (the collectives
        inside must match), so no clock may decide it."""
        if self.history and cap is None:  # one record per chunk (batches)
            step = self.record_every
        elif chunks is not None:
            step = min(16 << min(chunks, 6), 1024)
        else:
            step = 1 if per_iter is None else int(min(self.TARGET / max(per_iter, 1e-9), self.GROWTH * self.last_step))
            every = self.every()
            if every:  # a callback with ``every`` sees exactly the multiples of every
                step = every - k % every if per_iter is None else min(step, every - k % every)
        if cap is not None:  # records inside the loop: chunks end on multiples of record_every
            e = self.record_every
            step = max(e, min(step, cap) // e * e - k % e)
        step = max(1, step)
        self.last_step = step
        return int(min(max_iter, k + step))

    def every(self):
        """Iterations between progress lines (verbose=k, or a callable with an ``every`` attribute)."""
        v = self.verbose
        if isinstance(v, int) and not isinstance(v, bool) and v > 1:
            return v
        return int(getattr(v, "every", 0) or 0) if callable(v) else 0

    def report(self, k, primal, dual, elapsed, force=False):
        primal, dual = float(primal), float(dual)
        gap = primal - dual
        rel = float(relative_gap(primal, dual))
        if self.history:
            self.rows.append((k, primal, gap, elapsed))
        v = self.verbose
        if not v:
            return
        info = dict(iteration=k, objective=primal, gap=gap, relative_gap=rel, elapsed=elapsed, label=self.label)
        if callable(v) and not isinstance(v, bool):
            every = self.every()  # a callback with every=k sees the multiples of k, then the end, once each
            if (force or not every or k % every == 0) and k != getattr(self, "_cb_k", None):
                self._cb_k = k
                v(info)
            return
        every_k = isinstance(v, int) and not isinstance(v, bool) and v > 1
        due = (k // v > self.last_k // v) if every_k else (elapsed - self.last_print >= 1.0)
        if due or force:
            self.last_print, self.last_k = elapsed, k
            log.info("%siter %7d  objective %.10g  gap %.3g  rel.gap %.3g  %.2f s", self.label, k, primal, gap,
                     rel, elapsed)

    def table(self, dtype=np.float64):
        if not self.rows:
            return None
        it, obj, gap, t = map(np.asarray, zip(*self.rows))
        return {"iteration": it.astype(np.int64), "objective": obj.astype(dtype), "gap": gap.astype(dtype),
                "time": t}


def ensure_logging(verbose):
    """verbose=True with no logging configured: show svmopt's lines on stderr."""
    if verbose and not callable(verbose) and not log.handlers and not logging.getLogger().handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("svmopt: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        log.propagate = False

