"""NESVM and homotopy NESVM: Nesterov's optimal gradient method on the smoothed primal
(Zhou, Tao, Wu 2010; nesvm_zhou2010.txt).

The non-smooth parts of the Section-1 problem are smoothed (Nesterov 2005):

  loss -> loss.smoothed(mu)   hinge: NESVM's smoothed hinge, mu_i = mu ||x_i||_inf   (eq. 5-10)
  reg  -> reg.smoothed(nu)    l1: the Huber-like smoothed l1                          (eq. 23-28)

giving F_mu, minimised over theta = [w; b] (eq. 37: b is unregularized, its gradient comes
from the loss only) by Algorithm 1, with g^i = grad F_mu(w^i) and no line search:

  y^k     = w^k - g^k / L                              (eq. 33)
  z^k     = w* - (1/L) sum_{i<=k} (i+1)/2 g^i          (eq. 34, w* the prox-centre)
  w^{k+1} = 2/(k+3) z^k + (k+1)/(k+3) y^k              (eq. 35)

Two matvecs per iteration (X w and X^T u). The models of Section III are compositions:
C-SVM = hinge + l2 (eq. 47-48), LP-SVM = hinge + l1 (eq. 51-52), LS-SVM = least_squares
+ l2 (eq. 55-56, nothing to smooth); any smooth loss with a curvature plugs in as is, and
a loss given already smoothed (``smoothed_hinge(mu)``) defines F_mu itself.

Homotopy (Algorithm 2): stages t = 0, 1, ... with mu_t = max(mu0/(t+1), mu*) and
nu_t = max(nu0/(t+1), nu*) (eq. 44), each a fresh NESVM warm-started from the previous
stage (prox-centre moved there too, ``recenter``) with L recomputed for (mu_t, nu_t); the
last stage solves F_{mu*} itself. It all runs in the one ``lax.while_loop``: the state
carries the stage; when a stage's criterion is met the next step re-evaluates the gradient
at the new mu and restarts the accumulators. A user's ``smoothed_hinge(mu)`` is continued
from mu0 down to its own mu.

Lipschitz constant L = L_R + L_loss, L_R = reg.lipschitz(), and with W_i = C s_i l''_i:
  "power" (default) 1.05 lambda_max([X 1]^T W [X 1]) by 20 power iterations, capped by the
          trace sum_i W_i (||x_i||^2 + 1), a true bound.
          Computed once; a later stage scales it by max_i l''_i(mu_t) / l''_i(mu_0).
  "paper" n max_i W_i (||x_i||^2 + 1)  (eq. 21, 48, 52; eq. 56 prints the LS-SVM bound
          without the factor n, which is not an upper bound, so the n is kept there too).
  "paper" is several times larger than "power", which therefore needs fewer iterations
  (bench/results/design-notes.md, NESVM).

Kernel form (end of Section II-C): with ``pb.kernel`` the variable is beta (n,), f = K beta
+ b, penalty 1/2 beta^T K beta, and eqs. 33-35 run in the RKHS, i.e. on w = sum_j beta_j
phi(x_j): the gradient in beta coordinates is beta + C s y l'(m), one K matvec per
iteration, L as above with K for X X^T, and mu_i = mu max_j |K_ij| (the rows of K(X,X)Y).
(The literal Euclidean gradient in beta, K (beta + ...), has curvature K + K W K: a far
larger L and many more iterations.) The result is alpha >= 0 with beta =
alpha y (``summarize``). K is precomputed in blocks and carried: O(n^2) memory (plus dense
X), refused above ``kernel_budget`` bytes (1 GiB: n <= 11585 in float64, 16384 in float32).

Stopping (``criterion``), per stage (``stage_tol``, default 100 obj_tol) and at the last
stage (``obj_tol``), never within the first ``min_stage_iters`` iterations of a stage
(Nesterov's first steps from a start are short by design, so small changes there say nothing):
  "objective" (default) the paper's |F_mu(w^{k+1}) - F_mu(w^k)| < eps made RELATIVE: divided
              by |F_mu(w^k)|. obj_tol = 1e-7 is the paper's absolute 1e-3 at the scale of a9a's objective.
  "grad"      ||grad F_mu(w^k)|| <= obj_tol ||grad F_mu(w^0)||.
  "gap"       relative duality gap of the smoothed problem <= obj_tol.
None of these is a certificate for the problem as asked (the smoothed problem is another
problem). So when the last stage stops, the driver computes the duality gap of the *true*
problem (hinge, l1) at the iterate, with NESVM's u (eq. 6) as the dual point; at most ``tol``
(default 1e-3): CONVERGED. Otherwise ``tighten`` goes on: the smoothing targets mu*, nu* are
divided by 4 and a new stage starts from the current point (plain NESVM becomes a homotopy;
with nothing smoothed, obj_tol is divided by 10). So a CONVERGED result is within tol of the
optimum of the problem the user asked for, whatever mu it started from.

Defaults. Plain NESVM: mu = 5, w0 = w* = 0 (the paper's Section IV; its smoothed optimum lies
well above the hinge optimum, so the certificate makes it continue with smaller mu). Homotopy:
mu0 = 0.2, mu* = 0.02 (10 stages), nu0 = 1e-3, nu* = 1e-4, near LIBLINEAR's optimum. Starting
at the paper's 5 only adds stages; keeping w* at 0 instead of ``recenter`` costs more iterations,
and homotopy beats plain NESVM at the same mu* on most sets (the measurements behind these
defaults: bench/results/design-notes.md, NESVM).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import kernel_rows
from ..losses import Loss
from ..problem import Problem, dual_loss_part, dual_objective, primal_gradient, primal_objective, project_dual, \
    relative_gap
from ..result import Status
from ..smoothing import homotopy_mu
from .base import PRIMAL, RESUME, Iterate, Method, Start, check_positive, concrete, power_iteration, require, \
    start_or, static

__all__ = ["NESVM", "nesvm", "homotopy_nesvm"]


class NESVMState(NamedTuple):
    K: Any  # kernel matrix (kernel form) or None
    kappa: Any  # per-sample smoothing weight or None
    curv0: Any
    Lloss0: Any
    theta: Any  # [w; b]
    g: Any
    acc: Any  # sum (i+1)/2 g^i (eq. 34)
    center: Any  # prox-centre w*
    yk: Any  # y^k (eq. 33)
    f: Any
    F: Any
    g0: Any
    crit: Any
    k: Any  # iteration within the stage
    t: Any  # stage
    mu: Any
    nu: Any
    L: Any
    fresh: Any  # first step of a stage: re-evaluate at the warm start
    done: Any
    mu_tgt: Any  # the smoothing targets (lowered by ``tighten``)
    nu_tgt: Any
    obj_tol: Any


@dataclasses.dataclass(frozen=True)
class NESVM(Method):
    """NESVM (Algorithm 1) and, with ``homotopy=True``, homotopy NESVM (Algorithm 2).

    Structure (static): ``homotopy``, ``criterion``, ``lipschitz``, ``power_iters``, ``kernel_block``,
    ``kernel_budget``. Runtime numbers:

    mu          loss smoothing of plain NESVM (paper default 5; the paper's nu in eq. 51-52)
    nu          l1 smoothing of plain NESVM (the paper's mu in eq. 51-52)
    mu0, mu_star, nu0, nu_star   the continuation's start and end (module doc: defaults)
    tol         relative duality gap of the problem as asked, certified by the driver
    obj_tol     tolerance of ``criterion`` at the last (or only) stage
    stage_tol   tolerance at the intermediate homotopy stages (None: 100 * obj_tol)
    min_stage_iters   iterations of a stage before its criterion is tested
    power_safety      factor on the power-iteration estimate of L
    w0, w_star  initial point and prox-centre (paper default 0): length p, or p + 1 with
                the bias last (p = d, or n with a kernel). ``solve(init=...)`` is the general
                warm start; w0 is kept for the paper's notation.
    recenter    homotopy: move the prox-centre to each stage's warm start (fewer iterations)
    restart     (static) "none" (default): the paper's Algorithm 1 as published; "objective": adaptive
                restart (O'Donoghue & Candes 2015), when F_mu rises the step is undone and Nesterov's
                sequence starts afresh from the previous iterate (prox-centre there). Not the default: on
                20,000 x 60 Gaussian rows, hinge, float32, it ended MAX_ITER at 20,000 iterations (gap
                0.92; rounding makes F_mu rise and restarts undo the progress) where "none" certifies in
                725; on the shared sets it saved -35 % to +11 % of the iterations
    """

    mu: float = 5.0
    nu: float = 1e-4
    homotopy: bool = static(False)
    mu0: float = 0.2
    mu_star: float = 0.02
    nu0: float = 1e-3
    nu_star: float = 1e-4
    tol: float = 1e-3
    obj_tol: float = 1e-7
    stage_tol: Optional[float] = None
    min_stage_iters: int = 10
    criterion: str = static("objective")
    lipschitz: str = static("power")
    power_iters: int = static(20)
    power_safety: float = 1.05
    w0: Optional[Any] = None
    w_star: Optional[Any] = None
    recenter: bool = True
    restart: str = static("none")
    tighten_factor: float = 4.0
    kernel_block: int = static(2048)
    kernel_budget: int = static(2**30)

    supports_kernel = True
    certify_every = 10  # the gap costs little next to an iteration: check it often

    @property
    def name(self) -> str:
        return "homotopy_nesvm" if self.homotopy else "nesvm"

    # ------------------------------------------------------------------ checks
    def validate(self, pb: Problem) -> None:
        if self.criterion not in ("objective", "grad", "gap"):
            raise ValueError(f"nesvm criterion must be 'objective', 'grad' or 'gap', got {self.criterion!r}")
        if self.restart not in ("objective", "none"):
            raise ValueError(f"nesvm restart must be 'objective' or 'none', got {self.restart!r}")
        if self.lipschitz not in ("power", "paper"):
            raise ValueError(f"nesvm lipschitz must be 'power' or 'paper', got {self.lipschitz!r}")
        check_positive(self, "mu", "nu", "mu0", "mu_star", "nu0", "nu_star", "obj_tol", "power_safety")
        if not (isinstance(self.power_iters, int) and self.power_iters > 0):
            raise ValueError(f"nesvm needs an integer power_iters > 0, got {self.power_iters!r}")
        if self.stage_tol is not None:
            check_positive(self, "stage_tol")
        check_positive(self, "min_stage_iters", integer=True, allow_zero=True)
        # smoothing: raises MissingCapability naming what the loss / regularizer lacks
        loss = pb.loss if pb.loss.is_smooth else pb.loss.smoothed(1.0)
        loss.curvature()
        reg = pb.reg.smoothed(1.0)
        reg.lipschitz()
        if self.criterion == "gap":
            require(loss.has_dual and reg.has_conjugate,
                    f"criterion='gap' needs duals of the smoothed problem ({loss!r}, {reg!r}); use 'objective'")
        require(pb.loss.is_smooth or "mu" in _params(loss),
                f"nesvm needs the smoothed loss {loss!r} to expose its smoothing 'mu'")
        require(pb.reg.is_smooth or "mu" in _params(reg),
                f"nesvm needs the smoothed regularizer {reg!r} to expose its smoothing 'mu'")
        p = pb.n if pb.kernel is not None else pb.d
        for f in ("w0", "w_star"):
            v = getattr(self, f)
            if v is None:
                continue
            size = int(np.size(v))
            if size not in (p, p + 1):
                raise ValueError(f"nesvm {f} has length {size}; expected {p} (w) or {p + 1} (w and b)")
            last = concrete(jnp.ravel(jnp.asarray(v))[-1]) if size == p + 1 else 0
            if last is not None and last != 0 and not pb.fit_intercept:
                raise ValueError(f"nesvm {f} sets a bias but the problem has no intercept (fit_intercept=False)")
        if pb.kernel is not None:
            require(pb.reg.is_l2, f"the kernel form of nesvm needs reg=l2 (penalty beta^T K beta), got reg={pb.reg!r}")
            require(pb.loss.has_dual and pb.loss.dual.lower >= 0,
                    f"the kernel form of nesvm returns support vectors alpha_i >= 0; loss {pb.loss!r} "
                    "has a dual that can be negative")
            item = jnp.dtype(pb.dtype).itemsize
            need = pb.n * max(pb.n, pb.d) * item
            if need > self.kernel_budget:
                raise ValueError(
                    f"the kernel form of nesvm keeps K(X, X) ({pb.n} x {pb.n}) and dense X in memory: "
                    f"{need / 2**20:.0f} MiB exceeds kernel_budget={self.kernel_budget / 2**20:.0f} MiB; "
                    "raise nesvm(kernel_budget=...) or use a decomposition method (alfpgm)")

    def default_max_iter(self, pb) -> int:
        return 50000 if self.homotopy else 20000

    def aux_template(self, pb):
        dt, p = pb.dtype, (pb.n if pb.kernel is not None else pb.d) + 1
        z = jnp.zeros((), dt)
        return dict(acc=jnp.zeros((p,), dt), center=jnp.zeros((p,), dt), k=jnp.zeros((), jnp.int32),
                    t=jnp.zeros((), jnp.int32), mu_tgt=z, nu_tgt=z, obj_tol=z, L=z)

    # ------------------------------------------------------------------ model at (mu, nu)
    def _smooths(self, pb):
        """(do we smooth the loss, do we smooth the regularizer)."""
        return not pb.loss.is_smooth, not pb.reg.is_smooth

    def _initial_targets(self, pb):
        dt = pb.dtype
        sl, sr = self._smooths(pb)
        if sl:
            lmu = self.mu_star if self.homotopy else self.mu
        elif isinstance(pb.loss.params, dict) and "mu" in pb.loss.params:
            lmu = pb.loss.params["mu"]  # a user's smoothed_hinge(mu): continued from mu0 to it
        else:
            lmu = 1.0  # nothing to smooth
        rnu = (self.nu_star if self.homotopy else self.nu) if sr else 1.0
        return jnp.asarray(lmu, dt), jnp.asarray(rnu, dt)

    def _has_mu(self, pb):
        sl, _ = self._smooths(pb)
        return sl or (isinstance(pb.loss.params, dict) and "mu" in pb.loss.params)

    def _schedule(self, pb, t, mu_tgt, nu_tgt):
        """(mu_t, nu_t) of stage t and whether it is the last (eq. 44, clamped at the targets)."""
        dt = pb.dtype
        _, sr = self._smooths(pb)
        out, last = [], jnp.asarray(True)
        for active, target, start in ((self._has_mu(pb), mu_tgt, self.mu0), (sr, nu_tgt, self.nu0)):
            if not active:
                out.append(jnp.ones((), dt))
                continue
            if self.homotopy:
                sched = homotopy_mu(jnp.asarray(start, dt), t.astype(dt))
                last = last & (sched <= target * (1 + 1e-6))
                out.append(jnp.maximum(sched, target))
            else:
                out.append(target)
        return out[0], out[1], last

    def _model(self, pb, st, mu, nu):
        """The smooth problem F_mu: (loss_mu, reg_nu). mu, nu may be traced."""
        sl, sr = self._smooths(pb)
        loss = pb.loss
        if sl:
            loss = loss.smoothed(1.0)  # structure only (the factories check mu > 0 in Python)
            loss = loss.bind(st.kappa) if loss.family.bind is not None else loss
        if self._has_mu(pb):
            loss = Loss(loss.family, {**loss.params, "mu": mu})
        reg = pb.reg
        if sr:
            reg = reg.smoothed(1.0)
            reg = type(reg)(reg.family, {**reg.params, "mu": nu})
        return loss, reg

    # ------------------------------------------------------------------ F_mu and its gradient
    def _evaluate(self, pb, st, theta, mu, nu):
        """(F_mu(theta), grad F_mu(theta) (p+1,), f = A w + b (n,))."""
        loss, reg = self._model(pb, st, mu, nu)
        pt = pb.replace(loss=loss, reg=reg)
        w, b = theta[:-1], theta[-1]
        if pb.kernel is None:
            f = pb.op.matvec(w) + b
            F = primal_objective(pt, w, b, f)
            gw, gb = primal_gradient(pt, w, b, f)  # eq. 47 / 51 / 55 (+ eq. 37 for b)
        else:
            Kw = st.K @ w
            f = Kw + b
            u = pb.cs * pb.y * loss.derivative(pb.y * f)
            F = 0.5 * jnp.vdot(w, Kw) + jnp.sum(pb.cs * loss.value(pb.y * f))
            gw = w + u  # RKHS gradient of F in beta coordinates
            gb = jnp.sum(u) if pb.fit_intercept else jnp.zeros((), w.dtype)
        return F, jnp.concatenate([gw, gb[None]]), f

    def _dual(self, pt, st, alpha):
        """(D(alpha'), alpha') for alpha' = alpha made feasible; pt is the problem the dual is of."""
        alpha = project_dual(pt, alpha)
        if pt.kernel is None:
            return dual_objective(pt, alpha)[0], alpha
        beta = alpha * pt.y
        D = dual_loss_part(pt, alpha) - 0.5 * jnp.vdot(beta, st.K @ beta)
        return D, alpha

    def _curvature(self, pb, st, mu, nu):
        loss, _ = self._model(pb, st, mu, nu)
        return jnp.broadcast_to(jnp.asarray(loss.curvature(), pb.dtype), (pb.n,))

    def _loss_lipschitz(self, pb, K, curv):
        """L_loss for weights W = C s l'' (paper bound or power iteration)."""
        W = pb.cs * curv
        fb = 1.0 if pb.fit_intercept else 0.0
        rows = (pb.op.row_sq_norms() if K is None else jnp.diagonal(K)) + fb
        Wr = jnp.where(rows > 0, W * rows, 0.0)  # empty rows carry no curvature
        if self.lipschitz == "paper":
            return jnp.sum(pb.s > 0) * jnp.max(Wr)  # eq. 21 / 48 (n: the rows that count)
        trace = jnp.sum(Wr)  # >= lambda_max: a safe cap
        if K is None:
            def apply(v):
                q = W * (pb.op.matvec(v[:-1]) + fb * v[-1])
                return jnp.concatenate([pb.op.rmatvec(q), (fb * jnp.sum(q))[None]])
            p = pb.d + 1
        else:
            sw = jnp.sqrt(W)

            def apply(v):
                s = sw * v
                return sw * (K @ s + fb * jnp.sum(s))
            p = pb.n
        lam = power_iteration(apply, p, pb.dtype, self.power_iters)
        return jnp.minimum(self.power_safety * lam, trace)

    def _lipschitz(self, pb, st, mu, nu):
        """L at (mu, nu): reg part exactly, loss part scaled from stage 0 (safe for any family)."""
        _, reg = self._model(pb, st, mu, nu)
        curv = self._curvature(pb, st, mu, nu)
        ratio = jnp.max(jnp.where(st.curv0 > 0, curv / jnp.where(st.curv0 > 0, st.curv0, 1.0), 0.0))
        return jnp.asarray(reg.lipschitz(), pb.dtype) + st.Lloss0 * ratio

    # ------------------------------------------------------------------ Method protocol
    def init(self, pb: Problem, start: Start) -> NESVMState:
        dt = pb.dtype
        K = _kernel_matrix(pb, self.kernel_block) if pb.kernel is not None else None
        kappa = None
        if not pb.loss.is_smooth:
            # per-sample smoothing weight ||x_i||_inf (eq. 5), of K's rows in the kernel form
            kap = pb.op.row_inf_norms() if K is None else jnp.max(jnp.abs(K), axis=1)
            kappa = jnp.where(kap > 0, kap, 1.0).astype(dt)
        p = pb.n if pb.kernel is not None else pb.d
        theta = _vector(self.w0, p, dt)
        if pb.kernel is None:
            theta = start_or(start, PRIMAL, jnp.concatenate([start.w, start.b[None]]), theta)
        center = _vector(self.w_star, p, dt)
        mu_tgt, nu_tgt = self._initial_targets(pb)
        obj_tol = jnp.asarray(self.obj_tol, dt)
        t = jnp.asarray(0, jnp.int32)
        k = jnp.asarray(0, jnp.int32)
        acc = None
        resume = (start.level & RESUME) != 0
        if start.aux is not None:
            a = start.aux
            mu_tgt, nu_tgt, obj_tol = (jnp.where(resume, a[x], v) for x, v in
                                       (("mu_tgt", mu_tgt), ("nu_tgt", nu_tgt), ("obj_tol", obj_tol)))
            t, k = jnp.where(resume, a["t"], t), jnp.where(resume, a["k"], k)
            center = jnp.where(resume, a["center"], center)
        st = NESVMState(K=K, kappa=kappa, curv0=None, Lloss0=None, theta=theta, g=None, acc=None, center=center,
                        yk=theta, f=None, F=None, g0=None, crit=jnp.asarray(jnp.inf, dt), k=k, t=t, mu=None, nu=None,
                        L=None, fresh=jnp.asarray(False), done=jnp.asarray(False), mu_tgt=mu_tgt, nu_tgt=nu_tgt,
                        obj_tol=obj_tol)
        mu, nu, _ = self._schedule(pb, jnp.zeros_like(t), mu_tgt, nu_tgt)
        curv0 = self._curvature(pb, st, mu, nu)
        st = st._replace(curv0=curv0, Lloss0=self._loss_lipschitz(pb, K, curv0))
        mu, nu, _ = self._schedule(pb, t, mu_tgt, nu_tgt)
        L = self._lipschitz(pb, st, mu, nu)
        F, g, f = self._evaluate(pb, st, theta, mu, nu)
        acc = 0.5 * g
        if start.aux is not None:
            acc = jnp.where(resume, start.aux["acc"], acc)
        return st._replace(g=g, acc=acc, f=f, F=F, g0=jnp.linalg.norm(g), mu=mu, nu=nu, L=L)

    def step(self, pb: Problem, st: NESVMState) -> NESVMState:
        dt = pb.dtype
        L, kf = st.L, st.k.astype(dt)
        y = st.theta - st.g / L  # eq. 33
        z = st.center - st.acc / L  # eq. 34
        nxt = (2.0 * z + (kf + 1.0) * y) / (kf + 3.0)  # eq. 35
        fresh = st.fresh  # first step of a homotopy stage: re-evaluate at the warm start
        theta = jnp.where(fresh, st.theta, nxt)
        F, g, f = self._evaluate(pb, st, theta, st.mu, st.nu)
        k = jnp.where(fresh, 0, st.k + 1)
        acc = jnp.where(fresh, 0.0, st.acc) + (0.5 * (k + 1)).astype(dt) * g
        center = st.center
        if self.restart == "objective":
            # adaptive restart (O'Donoghue & Candes 2015): F_mu went up, so the momentum overshot:
            # back to the previous iterate (its F and gradient are at hand) and start Nesterov's
            # sequence afresh there, prox-centre included
            up = (F > st.F) & ~fresh
            theta, F, g, f = (jnp.where(up, a, b) for a, b in ((st.theta, theta), (st.F, F), (st.g, g), (st.f, f)))
            k = jnp.where(up, 0, k)
            acc = jnp.where(up, 0.5 * st.g, acc)
            center = jnp.where(up, st.theta, center)
        tiny = jnp.finfo(dt).tiny
        if self.criterion == "objective":
            crit = jnp.abs(F - st.F) / jnp.maximum(jnp.abs(st.F), tiny)
        elif self.criterion == "gap":
            loss, reg = self._model(pb, st, st.mu, st.nu)
            pt = pb.replace(loss=loss, reg=reg)
            D = self._dual(pt, st, pb.cs * -loss.derivative(pb.y * f))[0]
            crit = relative_gap(F, D)
        else:
            crit = jnp.linalg.norm(g) / jnp.maximum(st.g0, tiny)
        # Nesterov's first steps from a (warm) start are short by design (the weights (i+1)/2
        # build up), so a small change there says nothing: test only after min_stage_iters
        crit = jnp.where(fresh | (k < self.min_stage_iters), jnp.inf, crit)
        _, _, last = self._schedule(pb, st.t, st.mu_tgt, st.nu_tgt)
        stage_tol = 100.0 * st.obj_tol if self.stage_tol is None else self.stage_tol
        met = crit <= jnp.where(last, st.obj_tol, stage_tol)
        st = st._replace(theta=theta, g=g, acc=acc, yk=y, f=f, F=F, crit=crit, k=k, done=met & last, fresh=False,
                         center=center)
        return self._advance(pb, st, met & ~last)

    def _advance(self, pb, st: NESVMState, advance):
        """Start the next stage where ``advance``: next (mu, nu), its L, the prox-centre moved."""
        t = st.t + advance.astype(st.t.dtype)
        mu, nu, _ = self._schedule(pb, t, st.mu_tgt, st.nu_tgt)
        L = jnp.where(advance, self._lipschitz(pb, st, mu, nu), st.L)
        center = jnp.where(advance & self.recenter, st.theta, st.center)
        return st._replace(t=t, mu=mu, nu=nu, L=L, center=center, fresh=advance | st.fresh)

    def check(self, pb, st: NESVMState):
        return jnp.where(st.done, Status.CONVERGED, -1)

    def tighten(self, pb, st: NESVMState):
        """The gap is above tol at the stop: smooth less, or go on with this stage.

        The gap of (w, u) splits into the Fenchel-Young gaps of the loss, sum_i C s_i (l(m_i) +
        l*(-a_i) + a_i m_i) with a = u / (C s) (what the smoothing costs: at most sum_i C mu_i / 4
        for the hinge), and the rest (the iterate is not yet at the smoothed optimum). When the
        smoothing's share is above half of tol |P|, the targets mu*, nu* are divided by
        ``tighten_factor`` and a new stage starts from here; otherwise the stage goes on with
        obj_tol / 10 (a smaller mu would restart Nesterov's sequence and lose its progress).
        """
        sl, sr = self._smooths(pb)
        go_on = st._replace(obj_tol=st.obj_tol / 10.0, done=jnp.asarray(False))
        if not (sl or sr):
            return go_on
        smoother = self._advance(pb, st._replace(mu_tgt=st.mu_tgt / self.tighten_factor if sl else st.mu_tgt,
                                                 nu_tgt=st.nu_tgt / self.tighten_factor if sr else st.nu_tgt,
                                                 done=jnp.asarray(False)), jnp.asarray(True))
        if pb.kernel is not None or not pb.loss.has_dual:
            return smoother
        m = pb.y * st.f
        theta = st.theta
        lo, hi = pb.loss.dual.lower, pb.loss.dual.upper
        loss, _ = self._model(pb, st, st.mu, st.nu)
        a = jnp.clip(-loss.derivative(m), lo, hi)
        live = pb.cs > 0
        fy = jnp.where(live, pb.cs * (pb.loss.value(m) - pb.loss.dual_value(a) + a * m), 0.0)
        P = pb.reg.value(theta[:-1]) + jnp.sum(pb.cs * pb.loss.value(m))
        smoothing_bound = jnp.sum(fy) + (pb.reg.value(theta[:-1]) - self._model(pb, st, st.mu, st.nu)[1].value(
            theta[:-1]) if sr else 0.0)
        coarse = smoothing_bound > 0.5 * self.tol * jnp.abs(P)
        return jax.tree_util.tree_map(lambda x, y: jnp.where(coarse, x, y), smoother, go_on)

    def finalize(self, pb, st: NESVMState) -> Iterate:
        loss, _ = self._model(pb, st, st.mu, st.nu)
        # NESVM's dual variable u (eq. 6) in the library scale: a dual candidate for the gap
        alpha = pb.cs * -loss.derivative(pb.y * st.f)
        extras = {"mu": st.mu, "nu": st.nu, "stage": st.t, "stage_iterations": st.k, "lipschitz": st.L,
                  "smoothed_objective": st.F, "criterion": st.crit}
        if pb.kernel is None:
            return Iterate(st.theta[:-1], st.theta[-1], alpha, extras)
        # kernel: the model is alpha >= 0 with beta = alpha * y, the better of the iterate and u
        y, b = pb.y, st.theta[-1]
        best, pick = jnp.inf, None
        for a in (jnp.maximum(y * st.theta[:-1], 0.0), alpha):
            P = self._kernel_primal(pb, st, a, b)
            pick = a if pick is None else jnp.where(P < best, a, pick)
            best = jnp.minimum(P, best)
        return Iterate(pick * y, b, pick, extras)

    def _kernel_primal(self, pb, st, a, b):
        Kb = st.K @ (a * pb.y)
        return 0.5 * jnp.vdot(a * pb.y, Kb) + jnp.sum(pb.cs * pb.loss.value(pb.y * (Kb + b)))

    def own_objectives(self, pb) -> bool:
        return pb.kernel is not None

    def objectives(self, pb, st: NESVMState, it: Iterate):
        """Kernel form: primal of the model alpha (beta = alpha y), dual of the better of alpha and u."""
        P = self._kernel_primal(pb, st, it.alpha, it.b)
        loss, _ = self._model(pb, st, st.mu, st.nu)
        u = pb.cs * -loss.derivative(pb.y * st.f)
        D = jnp.maximum(self._dual(pb, st, it.alpha)[0], self._dual(pb, st, u)[0])
        return P, D, it.alpha

    def carry(self, pb, st: NESVMState) -> Start:
        p = st.theta.shape[0] - 1
        w = st.theta[:-1] if pb.kernel is None else jnp.zeros((pb.d,), pb.dtype)
        aux = dict(acc=st.acc, center=st.center, k=st.k, t=st.t, mu_tgt=st.mu_tgt, nu_tgt=st.nu_tgt,
                   obj_tol=st.obj_tol, L=st.L)
        del p
        return Start(w, st.theta[-1], jnp.zeros((pb.n,), pb.dtype), jnp.asarray(PRIMAL, jnp.int32), aux)


def _params(x):
    return x.params if isinstance(x.params, dict) else {}


def _vector(v, p, dt):
    """A user's w0 / w_star as theta = [w; b] of length p + 1 (zeros by default)."""
    if v is None:
        return jnp.zeros((p + 1,), dt)
    v = jnp.ravel(jnp.asarray(v, dt))
    return v if v.shape[0] == p + 1 else jnp.concatenate([v, jnp.zeros((1,), dt)])


def _kernel_matrix(pb: Problem, block):
    """K(X, X) (n, n), computed in column blocks of ``block`` rows."""
    return kernel_rows(pb.kernel, pb.op.dense(), jnp.arange(pb.n), block)


nesvm = NESVM()
"""NESVM (Zhou et al. 2010), Nesterov's method on the smoothed primal, with its defaults."""
homotopy_nesvm = NESVM(homotopy=True)
"""Homotopy NESVM: smoothing mu_t = mu0 / (t + 1), each stage warm-started from the last."""
