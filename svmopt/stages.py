"""The one stage runner: a plan's method, then auto's hand-over where it did not certify.

A single solve is a batch of one, so single solves, C grids, paths and one-vs-rest follow one rule
(``svmopt.solvers.auto.Handover``), problem by problem:

1. the plan's method runs every problem to ``check`` iterations (the plan's cap without a hand-over);
2. a problem stopped at that cap (MAX_ITER) whose relative gap is within ``go_on`` resumes exactly
   (its carried state) to ``cap`` iterations in all;
3. a problem whose status is in ``when`` goes on with the next method, from the first one's point
   (w, b, alpha) where its gap is within ``warm_within``, else from zero; the new result replaces
   the first one's unless it ends uncertified with a larger gap (the smaller gap stays).

Gaps are compared as |P - D| / |P|. What ran is recorded per problem (``Outcome.stages``); the
timings add up every stage and the histories follow on from one another. A traced plan (inside a
user's jit / vmap / grad) runs inline, with no hand-over, its solution made differentiable by
``svmopt.implicit``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from . import driver, implicit, lp_certificate
from .plan import Plan
from .problem import relative_gap
from .result import Status
from .solvers.base import DUAL, PRIMAL, RESUME

__all__ = ["Outcome", "run"]


class Outcome(NamedTuple):
    """What a plan's run produced, before it becomes a Result (``svmopt.finish``)."""

    summary: Any  # driver.Summary; a leading problem axis when the plan is a batch
    history: Any  # a table (one problem), a list of tables (a batch), or None
    timings: dict  # compile and run seconds of every stage (and the batch's lanes)
    stages: list  # per problem: [dict(method, status, iterations, relative_gap[, compile, run]), ...]
    method: str  # the method that ran ("dual_cd"), the next one where it took over every problem, or both
    note: str | None  # why and what happened, for Result.extras["auto"]
    handed: dict  # batches: {label: what happened} for each problem the next method took over


def _rel(s) -> float:
    return abs(float(relative_gap(float(s.primal), float(s.dual))))


def _record(s, method, t=None) -> dict:
    rec = dict(method=method.name, status=Status(int(s.status)), iterations=int(s.iterations), relative_gap=_rel(s))
    if t is not None:
        rec.update(compile=t["compile"], run=t["run"])
    return rec


def _subset(tree, axes, idx):
    return jax.tree_util.tree_map(lambda a, ax: a if ax is None else a[np.asarray(idx)], tree, axes,
                                  is_leaf=lambda x: x is None)


def _execute(plan: Plan, method, idx, starts, cap, *, history, record_every, verbose):
    """Run ``method`` on problems ``idx`` of the plan (all when None) from ``starts``: (list of
    per-problem summaries or the stacked one, histories, timings)."""
    if plan.axes is None:
        label = f"[{plan.labels[0]}] " if plan.labels and plan.labels[0] else ""
        s, h, t = driver.run(method, plan.pb, starts, max_iter=cap, history=history, record_every=record_every,
                             verbose=verbose, label=label)
        return [s], [h], t
    pb = plan.pb if idx is None else _subset(plan.pb, plan.axes, idx)
    size = plan.size if idx is None else len(idx)
    labels = list(plan.labels) if idx is None else [plan.labels[k] for k in idx]
    out, t = driver.run_batch(method, pb, plan.axes, starts, size=size, max_iter=cap, mode=plan.batch,
                              devices=plan.devices, verbose=verbose, labels=labels, history=history,
                              record_every=record_every)
    hists = t.pop("history", None)
    return out, (hists if hists is not None else [None] * size), t


def _rows(out, size):
    """The stacked summary of a batch as per-problem summaries (host arrays)."""
    host = jax.tree_util.tree_map(np.asarray, out)
    return [jax.tree_util.tree_map(lambda a, k=k: a[k], host) for k in range(size)]


def _stack(rows):
    return jax.tree_util.tree_map(lambda *a: np.stack(a), *rows)


def _join_histories(hists, iterations):
    """One history table from the stages': each stage's iterations and times offset by the ones before."""
    out, it0, t0 = {}, 0, 0.0
    for h, k in zip(hists, iterations):
        if not h:
            continue
        part = dict(h)
        part["iteration"] = np.asarray(h["iteration"]) + it0
        if "time" in part:
            part["time"] = np.asarray(h["time"]) + t0
            t0 = float(part["time"][-1]) if len(part["time"]) else t0
        for key, v in part.items():
            out[key] = np.concatenate([out[key], np.asarray(v)]) if key in out else np.asarray(v)
        it0 += int(k)
    return out or None


def _add(timings, t):
    timings["compile"] += t["compile"]
    timings["run"] += t["run"]


def _starts(rows_of_starts, single: bool):
    if single:
        return rows_of_starts[0]
    return jax.tree_util.tree_map(lambda *a: jnp.stack([jnp.asarray(x) for x in a]), *rows_of_starts)


def run(plan: Plan, *, history: bool = False, record_every: int = 1, verbose=False) -> Outcome:
    """Run the plan: its method, and auto's hand-over problem by problem (module docstring)."""
    if plan.traced:
        return _inline(plan)
    method, ho = plan.method, plan.handover
    kw = dict(history=history, record_every=record_every, verbose=verbose)
    single = plan.axes is None
    if ho is None and single and _lp_applies(plan):
        return _lp_segments(plan, kw)
    first_cap = plan.max_iter if ho is None else min(plan.max_iter, ho.check)
    out, hists, timings = _execute(plan, method, None, plan.start, first_cap, **kw)
    timings = dict(timings)
    if ho is None:
        summary = out[0] if single else out
        stages = [[_record(summary, method, timings)]] if single else []
        hist = hists[0] if single else (hists if history else None)
        if _lp_applies(plan):  # (a batch: one LP per problem at the end)
            rows = _rows(out, plan.size)
            if _lp_certify(plan, rows, None, timings, single):
                summary = _stack(rows)
        return Outcome(summary, hist, timings, stages, method.name, plan.why, {})

    rows = out if single else _rows(out, plan.size)
    stages = [[_record(r, method, timings if single else None)] for r in rows]
    hists = list(hists)
    passes = [int(r.iterations) for r in rows]
    first_rel = [_rel(r) for r in rows]

    # 2. the same method resumed exactly where the gap at ``check`` is within go_on
    go = [k for k, r in enumerate(rows) if int(r.status) == Status.MAX_ITER and first_rel[k] <= ho.go_on
          and ho.cap > ho.check]
    if go:
        starts = [r.state._replace(level=jnp.asarray(np.asarray(r.state.level) | RESUME, jnp.int32))
                  for r in (rows[k] for k in go)]
        more, mh, t = _execute(plan, method, None if single else go, _starts(starts, single), ho.cap - ho.check, **kw)
        _add(timings, t)
        more = more if single else _rows(more, len(go))
        for j, k in enumerate(go):
            stages[k].append(_record(more[j], method, t if single else None))
            hists[k] = _join_histories([hists[k], mh[j]], [passes[k], int(more[j].iterations)])
            passes[k] += int(more[j].iterations)
            rows[k] = more[j]

    # 3. the next method where the status says so, and the one after it (``Handover.then``) where that
    # one did not certify either: each link takes the problems the link before it took
    handed, replaced, kept, links = {}, set(), set(), []
    final = [method.name] * len(rows)  # the method whose result each problem ends with
    link, prev, cand = ho, method, list(range(len(rows)))
    while link is not None:
        hand = [k for k in cand if int(rows[k].status) in [int(v) for v in link.when]]
        if not hand:
            break
        nxt = link.method.canonical(plan.pb.dtype)
        starts = []
        for k in hand:
            pbk = plan.problem(k)
            link.method.validate(pbk)  # (as configured: the canonical form's numbers are arrays)
            start = driver.cold_start(nxt, pbk)
            if _rel(rows[k]) <= link.warm_within:
                r = rows[k]
                alpha = jnp.asarray(r.extras["alpha"]) * (pbk.s > 0)
                start = start._replace(w=jnp.asarray(r.w), b=jnp.asarray(r.b), alpha=alpha,
                                       level=jnp.asarray(PRIMAL | DUAL, jnp.int32))
            starts.append(start)
        cap = nxt.default_max_iter(plan.problem(hand[0])) if link.limit is None else int(link.limit)
        new, nh, t = _execute(plan, nxt, None if single else hand, _starts(starts, single), cap, **kw)
        _add(timings, t)
        new = new if single else _rows(new, len(hand))
        took = []
        for j, k in enumerate(hand):
            before = _rel(rows[k])
            stages[k].append(_record(new[j], nxt, t if single else None))
            info = dict(index=int(k), passes=passes[k], relative_gap=before, warm=before <= link.warm_within,
                        status=Status(int(new[j].status)), iterations=int(new[j].iterations))
            if link is ho:
                handed[plan.labels[k]] = info
            else:  # a later link: under the first one's record
                entry = handed[plan.labels[k]]
                while "then" in entry:
                    entry = entry["then"]
                entry["then"] = dict(info, method=nxt.name)
            if int(new[j].status) != Status.CONVERGED and _rel(new[j]) > before:  # the smaller gap stays
                info["kept"] = final[k]
                kept.add(k)
            else:
                hists[k] = _join_histories([hists[k], nh[j]], [passes[k], int(new[j].iterations)])
                replaced.add(k)
                kept.discard(k)
                rows[k] = new[j]
                final[k] = nxt.name
                took.append(k)
            passes[k] += int(new[j].iterations)
        links.append((link, prev, hand, [k for k in hand if k not in took]))
        link, prev, cand = link.then, nxt, hand

    if _lp_applies(plan):
        _lp_certify(plan, rows, stages, timings, single)
    if single:
        summary, hist = rows[0], hists[0]
        name = final[0]
        lp = stages[0][-1] if stages[0][-1]["method"] == "lp_certificate" else None
        note = _single_note(plan, stages[0][:-1] if lp else stages[0], links)
        if lp:
            note = _lp_note(note, lp)
    else:
        summary, hist = _merge(rows, sorted(replaced)), (hists if history else None)
        names = list(dict.fromkeys(final))  # in order of first appearance
        name = "+".join(names) if len(names) > 1 else names[0]
        note = plan.why
        if handed:
            what = {"grid": "grid points", "ovr": "classes", "path": "C values"}.get(plan.task, "problems")
            unit = "passes" if method.name == "dual_cd" else "iterations"
            note = (f"{plan.why}; {ho.label} took over the {what} {method.name} had not certified "
                    f"(after {ho.check} {unit}, or {ho.cap} where the gap was within {ho.go_on:g})")
            for link, prev, hand, _ in links[1:]:
                note += f"; {link.label} took over the {len(hand)} {prev.name} had not certified"
    return Outcome(summary, hist, timings, stages, name, note, handed)


LP_FIRST = 1000
"""Iterations of a hinge + l1 run before its first LP certificate (``_lp_segments``); then at 2x, 4x, ...
On a1a (C = 1, float64) alm's point certified from 3,000 iterations, nesvm's and homotopy_nesvm's
between 3,000 and their caps (20,000 and 50,000: 4 s and 22 s)."""
LP_SHARE = 0.25
"""The LP certificates of a run may take at most this share of its time before the last one."""
LP_MIN_SECONDS = 0.5
"""The least time an LP certificate before the last one gets."""


def _lp_applies(plan: Plan) -> bool:
    return not plan.traced and lp_certificate.applies(plan.pb)


def _lp_row(plan: Plan, k: int, r, single: bool, seconds: float = lp_certificate.SECONDS):
    """(the summary with the LP's certificate, its stage record), or (None, record) where the LP's dual
    is not better than the run's own, or (None, None) where there is none (``svmopt.lp_certificate``)."""
    tol = float(np.asarray(plan.method.gap_tol()))
    cert = lp_certificate.certify(plan.problem(k), r.w, r.b, tol, seconds)
    if cert is None:
        return None, None
    primal, dual = cert["primal"], cert["dual"]
    rel = float(relative_gap(np.float64(primal), np.float64(dual)))
    ok = rel <= tol
    status = Status.CONVERGED if ok else Status(int(r.status))
    record = dict(method="lp_certificate", status=status, iterations=0, relative_gap=abs(rel), compile=0.0,
                  run=cert["seconds"], rows=cert["rows"])
    if not ok and dual <= float(r.dual):
        return None, record
    dt = np.asarray(r.primal).dtype
    extras = dict(r.extras, alpha=np.asarray(cert["alpha"], np.asarray(r.extras.get("alpha", r.primal)).dtype))
    if single:
        extras["certificate"] = dict(kind="lp", rows=cert["rows"], band=cert["delta"], relative_gap=float(rel),
                                     seconds=cert["seconds"])
    return r._replace(primal=np.asarray(primal, dt), dual=np.asarray(dual, dt), gap=np.asarray(primal - dual, dt),
                      status=np.asarray(status, np.int32), extras=extras), record


def _lp_certify(plan: Plan, rows, stages, timings, single: bool) -> bool:
    """The LP-SVM's certificate for each problem of ``rows`` (summaries, replaced in place) that ended
    uncertified at its cap, stalled or uncertified: its dual point and objectives, with CONVERGED where
    the gap is within tol; a record in ``stages`` (per problem, when given), the seconds in ``timings``,
    and for a single problem ``extras["certificate"]``. True when a problem's summary changed."""
    changed = False
    for k, r in enumerate(rows):
        if int(r.status) not in (Status.MAX_ITER, Status.STALLED, Status.UNCERTIFIED):
            continue
        new, record = _lp_row(plan, k, r, single)
        if record is not None:
            timings["run"] += record["run"]
            if stages is not None:
                stages[k].append(record)
        if new is not None:
            rows[k] = new
            changed = True
    return changed


def _lp_segments(plan: Plan, kw) -> Outcome:
    """A single hinge + l1 problem without a hand-over (a named method, or auto's pdhg): it runs in segments that end
    at ``LP_FIRST`` iterations, twice that, ... up to its cap, each resumed from the state the last one
    carried (``Method.carry``: alm's w, b, multipliers and mu; its stall and adaptation counters restart); at
    each end the LP certificate is tried (while the LPs have taken at most ``LP_SHARE`` of the time),
    and the first that certifies ends the run. The method's own CONVERGED ends it too."""
    method, cap = plan.method, plan.max_iter
    start, done, hist, timings, lp_run = plan.start, 0, None, {"compile": 0.0, "run": 0.0}, 0.0
    at, record = min(LP_FIRST, cap), None
    while True:
        (s,), (h,), t = _execute(plan, method, None, start, at - done, **kw)
        _add(timings, t)
        if done and h:  # (a segment's first row is the point the one before it ended on)
            h = {key: np.asarray(v)[1:] for key, v in h.items()}
        hist = _join_histories([hist, h], [done, int(s.iterations)]) if done else h
        done += int(s.iterations)
        s = s._replace(iterations=np.asarray(done, np.asarray(s.iterations).dtype))
        own, status = s, int(s.status)
        last = status != Status.MAX_ITER or done >= cap
        if status in (Status.MAX_ITER, Status.STALLED, Status.UNCERTIFIED) and (
                last or lp_run <= LP_SHARE * timings["run"]):
            share = LP_SHARE * timings["run"]  # (the last check: at least lp_certificate.SECONDS)
            new, record = _lp_row(plan, 0, s, True, max(share, lp_certificate.SECONDS) if last else
                                  max(share - lp_run, LP_MIN_SECONDS))
            if record is not None:
                lp_run += record["run"]
                timings["run"] += record["run"]
            if new is not None and (last or int(new.status) == Status.CONVERGED):
                s = new
        if last or int(s.status) == Status.CONVERGED:
            break
        start = s.state._replace(level=jnp.asarray(np.asarray(s.state.level) | RESUME, jnp.int32))
        at = min(2 * at, cap)
    stages = [[_record(own, method, dict(timings, run=timings["run"] - lp_run))] + ([record] if record else [])]
    return Outcome(s, hist, timings, stages, method.name, plan.why, {})


def _lp_note(note, record) -> str:
    """auto's note (or none) with the LP certificate's outcome."""
    done = "certified" if record["status"] == Status.CONVERGED else "did not certify"
    what = (f"the LP dual on the {record['rows']} rows near the margin (hinge + l1, HiGHS) {done} the result "
            f"(relative gap {record['relative_gap']:.2g})")
    return f"{note}; {what}" if note else what


def _merge(rows, replaced):
    """The stacked summary of a batch whose problems ``replaced`` another method finished: their
    fields and dual point come from that method; the carried state mixes two methods then, so a later
    ``init=`` warm-starts from (w, b, alpha) instead of resuming."""
    if not replaced:
        return _stack(rows)
    fields = ("w", "b", "primal", "dual", "gap", "status", "iterations")
    first = [k for k in range(len(rows)) if k not in replaced]
    base = rows[first[0]] if first else rows[0]
    out = {f: np.stack([np.asarray(getattr(r, f)) for r in rows]) for f in fields}
    alpha = np.stack([np.asarray(r.extras["alpha"]) for r in rows])
    extras = {key: np.stack([np.asarray(rows[k].extras[key]) if key in rows[k].extras
                             else np.zeros_like(np.asarray(base.extras[key])) for k in range(len(rows))])
              for key in base.extras if key != "alpha"
              and all(key not in r.extras or np.shape(r.extras[key]) == np.shape(base.extras[key]) for r in rows)}
    return base._replace(**out, extras={**extras, "alpha": alpha}, state=None)


def _single_note(plan, stages, links):
    """Why auto picked the method, and each hand-over that followed (``links``: (handover, the method
    before it, the problems it took, those where the result before it was kept)). ``stages``: the
    first method's records (its run and resumption), then one record per link."""
    note = plan.why
    nb = len(stages) - len(links)
    for j, (link, prev, _, kept) in enumerate(links):
        before = stages[nb + j - 1]
        ran = sum(r["iterations"] for r in stages[:nb]) if j == 0 else before["iterations"]
        unit = "passes" if prev.name == "dual_cd" else "iterations"
        how = "" if before["status"] == Status.MAX_ITER else f" ({before['status'].name})"
        warm = before["relative_gap"] <= link.warm_within
        note += (f"; {'it' if j == 0 else prev.name} had not certified after {ran} {unit}{how} (relative gap "
                 f"{before['relative_gap']:.2g}), so {link.label} took over{' from its point' if warm else ' from zero'}")
        if kept:
            note += (f", and ended at a larger gap ({stages[nb + j]['relative_gap']:.2g}): the result before it "
                     "is kept")
    return note


def _inline(plan: Plan) -> Outcome:
    """A traced plan: the whole solve inside the caller's trace (C vmapped for a grid)."""
    pb, method, start = plan.pb, plan.method, plan.start

    def one(C):
        p = pb.replace(C=C)
        out = driver.run_inline(method, jax.lax.stop_gradient(p), jax.lax.stop_gradient(start), plan.max_iter)
        return implicit.attach(out, p)

    out = one(pb.C) if plan.axes is None else jax.vmap(one)(pb.C)
    return Outcome(out, None, {}, [], method.name, None, {})
