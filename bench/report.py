"""Results -> bench/results/<stem>.md, <stem>.csv, <stem>-traces.csv, <stem>-objective.png,
<stem>-scaling.png; every file stamped with the date, machine, versions and the command.

Tables: (1) per dataset x loss, svmopt's fastest method against LIBLINEAR's fastest at
relative error 1e-2 and 1e-3 (ratio = svmopt time / LIBLINEAR time: > 1 means svmopt
is slower); (2) every method's time, test accuracy and iterations at both thresholds,
compile time apart; (3) where svmopt's time goes; (4) the references; (5) the floor;
(6) scaling slopes.
"""
from __future__ import annotations

import csv
import math
import textwrap
from pathlib import Path

import numpy as np

__all__ = ["write", "summary_rows", "detail_rows"]

PEER_GROUPS = ("liblinear", "libsvm")  # the reference peers: LIBLINEAR (linear), LIBSVM (kernel track)


def _t(x):
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.3g}"


def detail_rows(results):
    rows = []
    for e in results["traces"]:
        tr, fstar = e["trace"], e["fstar"]
        err = tr.rel_err(fstar) if tr.objectives else np.array([np.nan])
        r = dict(dataset=e["dataset"], loss=e["loss"], method=tr.method, group=tr.group,
                 compile_s=tr.compile_s, compile_total_s=tr.compile_total_s,
                 trace_s=tr.times[-1] if tr.times else math.nan, points=len(tr.times),
                 final_rel_err=float(err[-1]), best_rel_err=float(np.min(err)) if tr.objectives else math.nan,
                 s_per_iter=tr.per_iter_s, status=tr.status, note=tr.note)
        for thr in results["meta"]["thresholds"]:
            h = tr.hits.get(thr, {})
            r[f"t@{thr:g}"] = h.get("time", math.nan)
            r[f"acc@{thr:g}"] = h.get("accuracy", math.nan)
            r[f"it@{thr:g}"] = h.get("iterations", math.nan)
        rows.append(r)
    return rows


def summary_rows(results):
    """Per dataset x loss: fastest svmopt vs fastest LIBLINEAR at each threshold."""
    det = detail_rows(results)
    out = []
    for key in dict.fromkeys((r["dataset"], r["loss"]) for r in det):
        rs = [r for r in det if (r["dataset"], r["loss"]) == key]
        row = dict(dataset=key[0], loss=key[1])
        for thr in results["meta"]["thresholds"]:
            c = f"t@{thr:g}"
            for side, grps in (("svmopt", ("svmopt",)), ("liblinear", PEER_GROUPS)):
                cand = [r for r in rs if r["group"] in grps]
                hit = [r for r in cand if math.isfinite(r[c])]
                if hit:
                    b = min(hit, key=lambda r: r[c])
                    row[f"{side}@{thr:g}"] = (b["method"], b[c], False)
                elif cand:  # nobody reached it: the longest trace is a lower bound
                    b = max(cand, key=lambda r: r["trace_s"] if math.isfinite(r["trace_s"]) else -1)
                    row[f"{side}@{thr:g}"] = (b["method"], b["trace_s"], True)
                else:
                    row[f"{side}@{thr:g}"] = None
            s, l_ = row[f"svmopt@{thr:g}"], row[f"liblinear@{thr:g}"]
            if s and l_ and not l_[2] and l_[1] > 0:
                row[f"ratio@{thr:g}"] = (s[1] / l_[1], s[2])  # (value, is a lower bound)
                comp = next(r["compile_s"] for r in rs if r["method"] == s[0])
                row[f"ratio+compile@{thr:g}"] = ((s[1] + comp) / l_[1], s[2]) if math.isfinite(comp) else None
            else:
                row[f"ratio@{thr:g}"] = row[f"ratio+compile@{thr:g}"] = None
        out.append(row)
    return out


def _md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _stamp_lines(meta):
    v = ", ".join(f"{k} {val}" for k, val in meta["versions"].items())
    return [f"- date: {meta['date']}; machine: {meta['machine']}",
            f"- command: `{meta['command']}`",
            f"- versions: {v}"]


def write(results, out_dir: Path, stem: str):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = results["meta"]
    thr = meta["thresholds"]
    paths = {}
    det = detail_rows(results)
    summ = summary_rows(results)

    # ---- CSV: one row per dataset x loss x method; the traces in a second file
    p = out_dir / f"{stem}.csv"
    with p.open("w", newline="") as f:
        for line in _stamp_lines(meta):
            f.write("# " + line[2:] + "\n")
        if det:
            w = csv.DictWriter(f, fieldnames=list(det[0]))
            w.writeheader()
            w.writerows(det)
    paths["csv"] = p
    p = out_dir / f"{stem}-traces.csv"
    with p.open("w", newline="") as f:
        for line in _stamp_lines(meta):
            f.write("# " + line[2:] + "\n")
        w = csv.writer(f)
        w.writerow(["dataset", "loss", "method", "time_s", "iteration", "objective", "rel_err"])
        for e in results["traces"]:
            tr = e["trace"]
            for t, it, o in zip(tr.times, tr.iterations, tr.objectives):
                w.writerow([e["dataset"], e["loss"], tr.method, f"{t:.6g}", it, f"{o:.12g}",
                            f"{(o - e['fstar']) / abs(e['fstar']):.6g}"])
    paths["traces"] = p

    # ---- markdown
    L = [f"# svmopt benchmark — {meta['date']} on {meta['machine']}", ""]
    L += _stamp_lines(meta)
    L += [f"- CPU: {meta['cpu']}; {meta['cores']} cores; {meta['mem_gib']:.0f} GiB; "
          f"read bandwidth (numpy sum, this run): {meta['bandwidth_gbps']:.2f} GB/s",
          f"- settings: C = {meta['C']}, intercept convention `{meta['convention']}` on every side "
          f"({meta['convention_text']}), Lp p = {meta['p']}, svmopt dtype {meta['dtype']}, "
          f"per-method budget {meta['budget_s']:g} s (3x above 10M nonzeros; shrunk to fit the run's time "
          f"limit of {meta.get('time_limit_min') or 'no'} min)",
          "", f"> **Noise.** {meta['noise']}", ""]
    L += ["## 1. svmopt's fastest vs LIBLINEAR's fastest (LIBSVM's on the kernel track)",
          "",
          "Time (s, steady state: compile excluded, see table 2) until the relative primal error "
          "(f - f*)/|f*| first drops below the threshold. Ratio = svmopt / peer: > 1 means svmopt "
          "is slower; `+compile` adds svmopt's first-call compile to its time. `>` marks a lower bound "
          "(svmopt did not get there within its budget). n/a: no peer solves that loss.", ""]
    hdr = ["dataset", "loss"]
    for t_ in thr:
        hdr += [f"svmopt best @{t_:g}", f"peer best @{t_:g}", f"ratio @{t_:g}", f"+compile @{t_:g}"]
    rows = []
    for r in summ:
        row = [r["dataset"], r["loss"]]
        for t_ in thr:
            for side in ("svmopt", "liblinear"):
                v = r[f"{side}@{t_:g}"]
                row.append("n/a" if v is None else f"{v[0]} {'>' if v[2] else ''}{_t(v[1])}")
            for key in ("ratio", "ratio+compile"):
                rv = r[f"{key}@{t_:g}"]
                row.append("n/a" if rv is None else f"{'>' if rv[1] else ''}{rv[0]:.3g}")
        rows.append(row)
    L += [_md_table(hdr, rows), ""]

    L += ["## 2. Every method", "",
          "t: seconds to the threshold; acc: test accuracy of the iterate there; it: iterations there "
          "(svmopt: outer iterations, summed over one-vs-rest classes; LIBLINEAR: its own count; "
          "LinearSVC: n_iter_; SGD: epochs). compile: first call (all calls, one per class, in brackets). "
          "final: relative error at the end of the trace.", ""]
    hdr = ["dataset", "loss", "method"]
    for t_ in thr:
        hdr += [f"t@{t_:g}", f"acc@{t_:g}", f"it@{t_:g}"]
    hdr += ["compile s", "final rel err", "trace s", "s/iter", "status / note"]
    rows = []
    for r in det:
        row = [r["dataset"], r["loss"], r["method"]]
        for t_ in thr:
            row += [_t(r[f"t@{t_:g}"]), "—" if not math.isfinite(r[f"acc@{t_:g}"]) else f"{r[f'acc@{t_:g}']:.4f}",
                    "—" if not math.isfinite(r[f"it@{t_:g}"]) else int(r[f"it@{t_:g}"])]
        comp = "" if not math.isfinite(r["compile_s"]) else (
            f"{r['compile_s']:.2f}" + (f" ({r['compile_total_s']:.1f})" if r["compile_total_s"] > r["compile_s"] * 1.01
                                      else ""))
        row += [comp, f"{r['final_rel_err']:.1e}", _t(r["trace_s"]), _t(r["s_per_iter"]),
                "; ".join(x for x in (r["status"], r["note"]) if x)]
        rows.append(row)
    L += [_md_table(hdr, rows), ""]
    if results["skipped"]:
        L += ["Skipped: " + "; ".join(f"{m} ({why})" for m, why in results["skipped"]), ""]

    if results["breakdown"]:
        L += ["## 3. Where svmopt's time goes", "",
              "Per svmopt method and task: compile (first call) against the steady-state time to 1e-2; "
              "seconds per iteration (a compiled solve of the threshold's iteration count, best of 3) and that "
              "iteration in units of one `matvec + rmatvec` pass on the solver's operator, timed alternately "
              "with it so both see the same machine load; matvec share = the solver's nominal passes per iteration (alm 1.5: "
              "X^T r, X g, X^T(alpha y); nesvm, dual_cd, cutting_plane 1) x that pass time / the iteration; "
              "fixed = the per-iteration time of the same solver on a 64-row slice of the data (loop, "
              "kernel-launch and n-independent work such as cutting_plane's QP); other = the rest "
              "(element-wise work, and passes running slower inside the solver's loop than alone).", ""]
        hdr = ["dataset", "loss", "method", "compile s", "t@1e-2 s", "s/iter", "passes/iter", "matvec share",
               "fixed µs/iter", "fixed share", "other", "dominant"]
        pct = lambda v: "—" if not math.isfinite(v) else (">100%" if v > 1 else f"{100 * v:.0f}%")  # noqa: E731
        rows = []
        for b in results["breakdown"]:
            rows.append([b["dataset"], b["loss"], b["method"], _t(b["compile_s"]), _t(b["t2"]), _t(b["s_per_iter"]),
                         _t(b["passes_per_iter"]), pct(b["matvec_share"]), _t(b["overhead_us"]),
                         pct(b["overhead_share"]), pct(b["other_share"]), b["dominant"]])
        L += [_md_table(hdr, rows), ""]

    L += ["## 4. Reference optima f*", "",
          "float64; f* = the lowest primal value among the candidates, certified by the best dual value "
          "(LIBLINEAR's printed dual, svmopt's dual, or a KKT completion of a candidate's w). Cross-check: "
          "|P(LIBLINEAR) - P(svmopt)| / f*. One-vs-rest tasks sum K subproblems (worst gap shown).", ""]
    hdr = ["task", "f*", "rel gap", "certified <= 1e-6", "best solver", "LIBLINEAR vs svmopt", "cached/computed"]
    rows = []
    for r in results["refs"]:
        rows.append([r["task"], f"{r['fstar']:.10g}", f"{r['rel_gap']:.1e}", "yes" if r["certified"] else "NO",
                     r["solver"], "—" if r["cross"] is None else f"{r['cross']:.1e}", r["origin"]])
    L += [_md_table(hdr, rows), ""]

    if results["floor"]:
        L += ["## 5. The floor: one gradient pass against bytes(X) / bandwidth", "",
              f"Bandwidth {meta['bandwidth_gbps']:.2f} GB/s (numpy sum of a {meta['bandwidth_buffer_mib']} MiB "
              "buffer, this run). multiple = pass time / (bytes of X in that representation / bandwidth); 1 is "
              "the floor. Per-iteration rows come from the traces (LIBLINEAR dual CD: one epoch per iteration, "
              "X stored as 16-byte feature nodes; SGD: one epoch over float64 CSR).", ""]
        hdr = ["dataset", "kind", "what", "dtype", "MB", "seconds", "GB/s", "x floor"]
        rows = [[r["dataset"], r["kind"], r["what"], r["dtype"], f"{r['bytes'] / 1e6:.1f}", f"{r['seconds']:.4g}",
                 f"{r['gbps']:.2f}", f"{r['floor_multiple']:.1f}"] for r in results["floor"]]
        L += [_md_table(hdr, rows), ""]

    if results["scaling"]:
        L += ["## 6. Scaling: time against n", "",
              "Each method to its own default stopping rule (svmopt: tol = 1e-2, for alm a relative gap <= 1e-2; "
              "LIBLINEAR: default -e) on seeded subsamples; slope of log time against log n (1 = linear), "
              "the time slope over the runs that converged (MAX_ITER = cut by the budget).", ""]
        hdr = ["dataset", "loss", "method", "n", "seconds", "iterations", "s/iter", "status"]
        rows = [[r["dataset"], r["loss"], r["method"], r["n"], f"{r['seconds']:.4g}", r["iterations"],
                 f"{r['per_iter']:.3g}", r["status"]] for r in results["scaling"]]
        L += [_md_table(hdr, rows), ""]
        hdr = ["dataset", "loss", "method", "slope of time (converged runs)", "slope of time/iteration"]
        rows = [[k[0], k[1], k[2], "—" if not math.isfinite(v[0]) else f"{v[0]:.2f}", f"{v[1]:.2f}"]
                for k, v in results["slopes"].items()]
        L += [_md_table(hdr, rows), ""]

    L += ["## How the traces are taken", "", meta["method_notes"], ""]
    if meta.get("notes"):
        L += ["## Notes", ""] + [f"- {n}" for n in meta["notes"]] + [""]
    p = out_dir / f"{stem}.md"
    p.write_text("\n".join(L))
    paths["md"] = p
    paths.update(_plots(results, out_dir, stem))
    return paths


def _plots(results, out_dir, stem):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return {}
    meta = results["meta"]
    stamp = "\n".join(textwrap.wrap(f"{meta['date']} {meta['machine']} | {meta['command']}", 150)
                      + textwrap.wrap(", ".join(f"{k} {v}" for k, v in meta["versions"].items()), 150))
    paths = {}
    keys = list(dict.fromkeys((e["dataset"], e["loss"]) for e in results["traces"]))
    if keys:
        ncol = min(3, len(keys))
        nrow = -(-len(keys) // ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(max(5.2 * ncol, 9), 3.9 * nrow + 0.9), squeeze=False)
        for ax, key in zip(axes.ravel(), keys):
            for e in results["traces"]:
                if (e["dataset"], e["loss"]) != key or not e["trace"].times:
                    continue
                tr = e["trace"]
                order = np.argsort(tr.times, kind="stable")  # a sweep's runs are not in time order
                order = order[np.asarray(tr.times)[order] > 0]  # the starting point has no place on a log axis
                if not order.size:
                    continue
                err = np.maximum(tr.rel_err(e["fstar"])[order], 1e-9)
                t = np.asarray(tr.times)[order]
                lab = tr.method + (f" (+{tr.compile_s:.1f}s compile)" if math.isfinite(tr.compile_s) else "")
                ls = "-" if tr.group == "svmopt" else "--"
                if tr.sweep:  # independent runs: the points, and the best error reachable within time t
                    (ln,) = ax.loglog(t, np.minimum.accumulate(err), ls=ls, lw=1.2, label=lab + " [sweep]",
                                      drawstyle="steps-post")
                    ax.loglog(t, err, ls="none", marker="o", ms=2.5, color=ln.get_color())
                else:
                    (ln,) = ax.loglog(t, err, marker=".", ms=3, lw=1.2, label=lab, ls=ls)
                    if math.isfinite(tr.compile_s) and tr.compile_s > 0:  # the same run as a first call pays it
                        ax.loglog(t + tr.compile_s, err, ls=":", lw=0.9, color=ln.get_color())
                        ax.plot([tr.compile_s + t[0]], [err[0]], ls="none", marker="o", ms=5, mfc="white",
                                color=ln.get_color())
            for thr in meta["thresholds"]:
                ax.axhline(thr, color="grey", lw=0.6, ls=":")
            lo, hi = ax.get_ylim()
            ax.set_ylim(max(lo, 1e-9), min(hi, 10.0))  # a diverged trace (SGD, squared hinge) would flatten the rest
            ax.set_title(f"{key[0]} / {key[1]}")
            ax.set_xlabel("time (s); dotted, from the hollow marker: + first-call compile")
            ax.set_ylabel("(f - f*) / |f*|")
            ax.legend(fontsize=7)
        for ax in axes.ravel()[len(keys):]:
            ax.axis("off")
        fig.text(0.01, 0.005, stamp, fontsize=6, va="bottom")
        fig.tight_layout(rect=(0, 0.75 / fig.get_figheight(), 1, 1))
        p = out_dir / f"{stem}-objective.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths["objective_png"] = p
    if results["scaling"]:
        groups = list(dict.fromkeys((r["dataset"], r["loss"]) for r in results["scaling"]))
        fig, axes = plt.subplots(1, len(groups), figsize=(max(5.5 * len(groups), 9), 5.0), squeeze=False)
        for ax, g in zip(axes.ravel(), groups):
            for m in dict.fromkeys(r["method"] for r in results["scaling"] if (r["dataset"], r["loss"]) == g):
                rs = [r for r in results["scaling"] if (r["dataset"], r["loss"], r["method"]) == (*g, m)]
                sl = results["slopes"].get((*g, m), (math.nan, math.nan))
                (ln,) = ax.loglog([r["n"] for r in rs], [r["seconds"] for r in rs], marker="o",
                                  label=f"{m} (slope {sl[0]:.2f}; per iter {sl[1]:.2f})")
                cut = [r for r in rs if r.get("status", "CONVERGED") != "CONVERGED"]
                ax.loglog([r["n"] for r in cut], [r["seconds"] for r in cut], ls="none", marker="o", ms=9,
                          mfc="white", color=ln.get_color())  # hollow: stopped by the budget, not converged
            ns = sorted({r["n"] for r in results["scaling"] if (r["dataset"], r["loss"]) == g})
            ax.set_xticks(ns)  # one labelled tick per subsample size, no log-axis minor labels to overlap
            ax.set_xticklabels([f"{n / 1000:.0f}k" if n >= 10000 else str(n) for n in ns], rotation=30,
                               ha="right", fontsize=8)
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_title(f"scaling: {g[0]} / {g[1]}")
            ax.set_xlabel("n (rows)")
            ax.set_ylabel("time to own stopping rule (s); hollow = cut by budget")
            ax.legend(fontsize=7)
        fig.text(0.01, 0.005, stamp, fontsize=6, va="bottom")
        fig.tight_layout(rect=(0, 0.75 / fig.get_figheight(), 1, 1))
        p = out_dir / f"{stem}-scaling.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths["scaling_png"] = p
    return paths


if __name__ == "__main__":  # python -m bench.report bench/cache/results/<stem>.pkl [out_dir]
    import pickle
    import sys

    src = Path(sys.argv[1])
    with src.open("rb") as f:
        res = pickle.load(f)
    print(write(res, Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent / "results", src.stem))
