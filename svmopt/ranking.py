"""Ordinal regression and ROC-area SVMs by the cutting-plane method (Joachims 2006, Sec. 2.2, 3.2).

    import svmopt.ranking as rk
    r = rk.solve_ordinal(X, ranks, C=0.01)     # ranks: any ordered labels, e.g. 1..R
    r = rk.solve_roc_area(X, y, C=1e-4)        # two labels: maximizes (a bound on) the ROC area
    r.w, r.primal_objective, r.gap, r.status, r.iterations, r.extras["trace_loss"]
    scores = r.decision_function(X_test)       # higher score = higher rank

Both minimize OP4 with the library's C (the C of SPEC section 1 multiplies a *sum* of losses):

    1/2 ||w||^2 + C * sum_{(i, j) in P} (1 - w.(x_i - x_j))_+,   P = {(i, j): rank_i > rank_j}

The paper's C (OP4/OP5, which puts C/m on the slacks) is C * m, m = |P| = ``count_pairs(ranks)``.
So an error-rate SVM with C_e (objective 1/2||w||^2 + C_e sum_i hinge_i) and this one weigh the
*mean* loss alike ("the same C" in the paper's sense) when C = C_e * n / m.

The solver is ``svmopt.solvers.cutting_plane`` with task="ordinal" (Algorithm 2): the pairs are
never enumerated; each iteration sorts w.x_i once, O(n log n + R n) on top of two passes over X.
``eps`` (default 0.001) is the paper's epsilon: at its stop the mean pairwise hinge loss of w is
within eps of the working-set slack xi, so P(w) - P* <= (1 + qp_tol) C m eps; ``tol`` (default
0.001) is the relative duality gap (P - D_W)/P the status CONVERGED certifies (eps is tightened
until it holds). With two labels the mean pairwise hinge loss bounds 1 - AUC (the fraction of
swapped pairs) from above.
There is no intercept (it cancels in every pair); ``Result.b`` is 0 and scores rank, they do
not classify (``predict`` raises).
"""
from __future__ import annotations

import dataclasses

import numpy as np

import jax

from . import finish, plan, stages
from .result import Result
from .solvers.cutting_plane import cutting_plane

__all__ = ["solve_ordinal", "solve_roc_area", "count_pairs", "RankingResult"]


@jax.tree_util.register_pytree_node_class
@dataclasses.dataclass(repr=False)
class RankingResult(Result):
    """A ``Result`` whose w scores examples for ranking; ``ranks`` are the ordered label values.

    ``primal_objective`` is the OP4 objective above (not SPEC section 1's), ``dual_objective``
    the cutting plane's working-set dual, a lower bound on OP4's optimum.
    """

    ranks: np.ndarray | None = None

    def predict(self, X):
        raise TypeError("a ranking model scores, it does not classify: use decision_function(X) "
                        "(higher = higher rank); thresholds are not part of OP4")

    def score(self, X, y) -> float:
        raise TypeError("a ranking model has no accuracy; compare decision_function(X) with the ranks "
                        "(e.g. sklearn.metrics.roc_auc_score for two labels)")


def count_pairs(ranks) -> int:
    """m = |{(i, j): rank_i > rank_j}|, the number of loss terms of OP4."""
    _, counts = np.unique(np.asarray(ranks), return_counts=True)
    below = np.cumsum(counts) - counts
    return int(np.dot(counts.astype(np.int64), below))


def solve_ordinal(X, ranks, *, C=1.0, tol: float = 1e-3, eps: float = 1e-3, max_iter: int | None = None,
                  dtype=None, layout: str = "auto", history: bool = False, record_every: int = 1,
                  throw: bool = False, verbose=False, **method_params) -> RankingResult:
    """Ordinal-regression SVM (OP4) by Algorithm 2. X: (n, d) dense or scipy.sparse;
    ranks: (n,) ordered labels with at least two distinct values; C > 0 scalar (see module doc);
    tol: the certified relative gap; eps: the paper's epsilon; dtype, layout, history, record_every,
    throw, max_iter, verbose: as
    ``svmopt.solve`` (float32 unless dtype says otherwise); further keywords configure
    ``cutting_plane`` (max_constraints, inactive_limit, ...).
    """
    return _solve(X, ranks, False, C, tol, eps, max_iter, dtype, layout, history, record_every, throw, verbose,
                  method_params)


def solve_roc_area(X, y, *, C=1.0, tol: float = 1e-3, eps: float = 1e-3, max_iter: int | None = None,
                   dtype=None, layout: str = "auto", history: bool = False, record_every: int = 1,
                   throw: bool = False, verbose=False, **method_params) -> RankingResult:
    """ROC-area SVM: ``solve_ordinal`` with two labels (the larger one ranks higher).

    Minimizes 1/2||w||^2 + C sum_{y_i = +, y_j = -} (1 - w.(x_i - x_j))_+; the mean pairwise
    hinge loss (extras["loss"]) is an upper bound on 1 - AUC of the training scores.
    """
    return _solve(X, y, True, C, tol, eps, max_iter, dtype, layout, history, record_every, throw, verbose,
                  method_params)


def _solve(X, ranks, two, C, tol, eps, max_iter, dtype, layout, history, record_every, throw, verbose, params):
    run = plan.check_run_args(history=history, record_every=record_every, verbose=verbose, throw=throw,
                              layout=layout, max_iter=max_iter)
    method = plan.configure(cutting_plane(task="ordinal"), tol, dict(params, eps=eps))
    p = plan.ordinal(X, ranks, method=method, C=C, max_iter=run["max_iter"], dtype=dtype, layout=layout,
                     binary_labels=two)
    out = stages.run(p, history=history, record_every=run["record_every"], verbose=run["verbose"])
    res = finish.result(p, out, RankingResult, ranks=p.classes)
    res.loss = "pairwise_hinge"
    res.extras["pairs"] = count_pairs(p.extra["codes"])
    return finish.report(res, p, throw)
