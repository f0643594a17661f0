"""One-vs-rest against scikit-learn's LinearSVC (LIBLINEAR): time and test accuracy, same run.

    python -m bench.ovr                                   # news20, letter, pendigits; squared hinge, C = 1
    python -m bench.ovr --datasets letter --repeats 5 --out bench/results/<date>-ovr-cpu.md
    python -m bench.ovr --datasets text105,text105-seed1   # generated many-class tf-idf text (``text_set``)

Per data set: svmopt's default ``solve_multiclass`` (free intercept, its default) and with
LIBLINEAR's bias feature (``intercept_scaling=1``, LinearSVC's problem), against
``LinearSVC(C=1)`` (dual coordinate descent on the bias-feature problem, its default tol), squared
hinge (``--loss hinge``: the hinge, ``LinearSVC(loss="hinge")``). The
first svmopt call of a shape compiles (reported apart, as "compile"); the times are the median of
``--repeats`` further calls, wall clock and this process's CPU time. Accuracy on the data set's
test file (news20 has none in ../shared/data: a seeded 80/20 split of its rows). Rows of news20 are
scaled to unit length (tf-idf practice); letter and pendigits are used as shipped.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import time
import warnings

import numpy as np


def text_set(classes=105, rows=8000, vocab=55_000, seed=0):
    """A seeded stand-in for a many-class tf-idf text set (no such set is among the shared files):
    a Zipf vocabulary; each class a topic of 300 words drawn 40 times more often than their base
    rate, and a Zipf share of the documents (the largest classes ~20x the smallest); document lengths
    log-normal (median 120 tokens), 15% of the tokens from the topic; counts -> sublinear tf x idf,
    rows of unit length. Returns (X, y, Xt, yt) with a seeded 80/20 split."""
    import scipy.sparse as sp
    from sklearn.preprocessing import normalize

    rng = np.random.default_rng(seed)
    base = 1.0 / np.arange(1, vocab + 1) ** 1.1
    base = rng.permutation(base / base.sum())
    share = 1.0 / np.arange(1, classes + 1) ** 0.65
    y = rng.choice(classes, size=rows, p=share / share.sum())
    topics = [rng.choice(vocab, 300, replace=False, p=base) for _ in range(classes)]
    lengths = np.maximum(5, rng.lognormal(np.log(120), 0.7, rows).astype(int))
    indptr, cols = [0], []
    for i in range(rows):
        k_topic = rng.binomial(lengths[i], 0.15)
        words = np.r_[rng.choice(vocab, lengths[i] - k_topic, p=base), rng.choice(topics[y[i]], k_topic)]
        cols.append(words)
        indptr.append(indptr[-1] + words.size)
    counts = sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(cols), indptr), shape=(rows, vocab))
    counts.sum_duplicates()
    df = np.bincount(counts.indices, minlength=vocab)
    keep = np.flatnonzero(df > 0)
    counts = counts[:, keep].tocsr()
    idf = np.log((1 + rows) / (1 + df[keep])) + 1.0
    counts.data = 1.0 + np.log(counts.data)
    X = normalize(counts @ sp.diags(idf)).tocsr()
    y = y.astype(np.float64) + 1
    cut = int(0.8 * rows)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def load(name, data_dir):
    import svmopt
    from sklearn.preprocessing import normalize

    m = re.fullmatch(r"text(\d+)(?:-seed(\d+))?", name)
    if m:  # generated: text105, text105-seed3
        return text_set(classes=int(m.group(1)), seed=int(m.group(2) or 0))

    path = lambda f: os.path.join(data_dir, f)  # noqa: E731
    if name == "news20":
        X, y = svmopt.load_svmlight(path("news20.xz"))
        X = normalize(X)
        perm = np.random.default_rng(0).permutation(X.shape[0])
        cut = int(0.8 * X.shape[0])
        return X[perm[:cut]], y[perm[:cut]], X[perm[cut:]], y[perm[cut:]]
    X, y = svmopt.load_svmlight(path(f"{name}.xz"))
    Xt, yt = svmopt.load_svmlight(path(f"{name}.t.xz"), n_features=X.shape[1])
    return X, y, Xt, yt


def timed(fn, repeats):
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return out, statistics.median(walls), statistics.median(cpus)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="news20,letter.scale,pendigits")
    ap.add_argument("--data", default=os.environ.get("SVMOPT_DATA", os.path.join(os.path.dirname(__file__), "..", "..",
                                                                                 "shared", "data")))
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--loss", default="squared_hinge", choices=["squared_hinge", "hinge"],
                    help="hinge: LinearSVC(loss='hinge'), LIBLINEAR -s 3")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rows", type=int, default=0, help="use the first N training rows (0: all)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import svmopt
    from svmopt.losses import hinge, squared_hinge
    from sklearn.svm import LinearSVC

    loss, ll = (hinge, "-s 3") if args.loss == "hinge" else (squared_hinge, "-s 1")

    warnings.simplefilter("ignore")
    lines = [f"# One-vs-rest vs LinearSVC ({datetime.date.today()})", "",
             f"`python -m bench.ovr --datasets {args.datasets} --repeats {args.repeats}"
             f"{' --rows ' + str(args.rows) if args.rows else ''}"
             f"{' --loss hinge' if args.loss == 'hinge' else ''}`  ",
             f"machine: {platform.node()}, {os.cpu_count()} cores, load average at start "
             f"{os.getloadavg()[0]:.1f}; {args.loss.replace('_', ' ')}, C = {args.C:g}, svmopt float32", "",
             "| data | n x d, K | solver | compile (s) | wall (s) | cpu (s) | wall / LinearSVC | test accuracy | "
             "method, iterations |", "|---|---|---|---|---|---|---|---|---|"]
    for name in args.datasets.split(","):
        X, y, Xt, yt = load(name, args.data)
        if args.rows:
            X, y = X[: args.rows], y[: args.rows]
        shape = f"{X.shape[0]} x {X.shape[1]}, {np.unique(y).size}"
        ref, wall_ref, cpu_ref = timed(lambda: LinearSVC(C=args.C, loss=args.loss).fit(X, y), args.repeats)
        rows = [(f"LinearSVC (LIBLINEAR {ll} -B 1)", "-", wall_ref, cpu_ref, ref.score(Xt, yt), "")]
        for label, kw in (("svmopt default (free intercept)", {}), ("svmopt intercept_scaling=1", dict(intercept_scaling=1.0))):
            fit = lambda: svmopt.solve_multiclass(X, y, loss=loss, C=args.C, **kw)  # noqa: E731
            t0 = time.perf_counter()
            first = fit()
            compile_s = first.timings.get("compile", 0.0)
            res, wall, cpu = timed(fit, args.repeats)
            its = np.asarray(res.iterations)
            rows.append((label, f"{compile_s:.2f} (first call {time.perf_counter() - t0:.2f})", wall, cpu,
                         res.score(Xt, yt), f"{res.method}, {int(its.min())}-{int(its.max())}"))
        for label, comp, wall, cpu, acc, how in rows:
            lines.append(f"| {name} | {shape} | {label} | {comp} | {wall:.3f} | {cpu:.3f} | {wall / wall_ref:.2f} | "
                         f"{acc:.4f} | {how} |")
        print("\n".join(lines[-3:]), flush=True)
    lines += ["", f"load average at end {os.getloadavg()[0]:.1f}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
