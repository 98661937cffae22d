"""The composition model: a rate model that can have the L2 window (Theory II).

The paper's linearised model has a bilinear reasoning path, whose growth per unit of its own
size does not depend on that size, so an L2 penalty that cannot stop it at step 0 cannot stop
it later. Here each path is a product of balanced factors, as in the two-layer attention
model: memorisation of degree p = 2 (a key-specific input-to-output path), reasoning of degree
r = 3 (layer-1 value ∘ layer-2 key/query ∘ layer-2 output), with the loss

    L = 1/2 eps^2 + lambda/2 (sum m_i^2 + sum q_j^2),   eps = 1 - s_m prod m_i - s_r prod q_j.

`derive` obtains the balanced flow from sympy.diff: m' = s_m eps m^(p-1) - lambda m and
q' = s_r eps q^(r-1) - lambda q. The reasoning path's growth per unit size, s_r eps q^(r-2) -
lambda, rises with q when r >= 3. Under a penalty the memorisation settles where
s_m eps m^(p-2) = lambda (eps = lambda / s_m for p = 2). Reasoning then grows if and only if
q > q* = (s_m / s_r)^(1 / (r - 2)), whatever lambda is. So a window needs the no-decay
trajectory to pass q* before memorisation stalls it: the left edge is where it does.

`simulate` runs GD, SGD with momentum or Adam, step by step, on the two balanced factors. Each
factor is a group of n coordinates of equal size (Adam normalises per coordinate; GD does not
care). It runs many schedules at once. The strengths s_m and s_r are fixed from no-decay
measurements (`calibrate`), never from a window's edges.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import sympy as sp
from critwin.theory.adam import adam_step

from critwin.errors import ConfigError
from critwin.vocabulary import THEORY_OPTIMIZERS as OPTIMIZERS


def derive(p: int = 2, r: int = 3) -> dict:
    """The balanced flow, the growth per unit size and q*, from the loss by sympy.diff.

    Returns sympy expressions: dm, dq (the flow of one factor of each path with every factor
    equal), growth_q (dq / q), eps_eq (memorisation's settling point under a penalty) and
    q_star (the size above which the penalty cannot stop reasoning)."""
    if p < 1 or r < 1:
        raise ConfigError("degree", (p, r), "path degrees >= 1")
    lam, s_m, s_r, m, q, eps = sp.symbols("lambda s_m s_r m q epsilon", positive=True)
    ms, qs = sp.symbols(f"m1:{p + 1}", positive=True), sp.symbols(f"q1:{r + 1}", positive=True)
    resid = 1 - s_m * sp.prod(ms) - s_r * sp.prod(qs)
    loss = resid ** 2 / 2 + lam / 2 * (sum(v ** 2 for v in ms) + sum(v ** 2 for v in qs))
    balanced = {**{v: m for v in ms}, **{v: q for v in qs}}
    e = 1 - s_m * m ** p - s_r * q ** r
    dm = sp.simplify((-sp.diff(loss, ms[0])).subs(balanced).subs(e, eps))
    dq = sp.simplify((-sp.diff(loss, qs[0])).subs(balanced).subs(e, eps))
    dm, dq = sp.expand(dm.subs(1 - s_m * m ** p - s_r * q ** r, eps)), sp.expand(dq.subs(e, eps))
    growth_q = sp.expand(dq / q)
    out = {"loss": loss, "dm": dm, "dq": dq, "growth_q": growth_q, "eps": e}
    if p == 2:
        eps_eq = sp.solve(sp.Eq(dm / m, 0), eps)[0]
        out["eps_eq"] = eps_eq
        if r >= 3:
            sol = [s for s in sp.solve(sp.Eq(growth_q.subs(eps, eps_eq), 0), q) if s.is_positive is not False]
            out["q_star"] = sp.simplify(sol[0])
    return out


@dataclass(frozen=True)
class CompositionModel:
    """Strengths s_m, s_r (explained fraction per unit norm^degree); initial factor norms m0, q0;
    coordinates per factor n_m, n_q; path degrees p, r."""

    s_m: float
    s_r: float
    m0: float
    q0: float
    n_m: int = 1
    n_q: int = 1
    p: int = 2
    r: int = 3

    def __post_init__(self):
        for f in ("s_m", "s_r", "m0", "q0"):
            v = getattr(self, f)
            if not (np.isfinite(v) and v > 0):
                raise ConfigError(f, v, "a number > 0")
        for f in ("n_m", "n_q", "p", "r"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(f, v, "a positive integer")

    @property
    def q_star(self) -> float:
        """Size above which a penalty cannot stop reasoning (p = 2, r >= 3): (s_m / s_r)^(1/(r-2))."""
        if self.p != 2 or self.r < 3:
            return float("nan")
        return (self.s_m / self.s_r) ** (1.0 / (self.r - 2))


def simulate(model: CompositionModel, lam: np.ndarray, lr: float, optimizer: str = "adamw",
             betas=(0.9, 0.98), momentum: float = 0.9, eps: float = 1e-8, every: int = 10,
             reason: bool = True) -> dict:
    """Train the two balanced factors step by step; lam: (S, T) penalty per step for S schedules.

    Returns steps (logged every `every`) and x (memorisation), rho (reasoning), eps, m, q, each
    (logged steps, S). reason=False freezes the reasoning path (to time memorisation alone)."""
    if optimizer not in OPTIMIZERS:
        raise ConfigError("optimizer", optimizer, "one of " + ", ".join(OPTIMIZERS))
    lam = np.atleast_2d(np.asarray(lam, float))
    S, T = lam.shape
    c = model
    m, q = np.full(S, c.m0), np.full(S, c.q0)
    sq = np.sqrt([c.n_m, c.n_q])
    mom = np.zeros((2, S))
    sec = np.zeros((2, S))
    out = {k: [] for k in ("steps", "x", "rho", "eps", "m", "q")}

    def log(t):
        x, rho = c.s_m * m ** c.p, c.s_r * q ** c.r
        for k, v in (("steps", t), ("x", x), ("rho", rho), ("eps", 1 - x - rho), ("m", m.copy()), ("q", q.copy())):
            out[k].append(v)
    log(0)
    for t in range(T):
        e = 1 - c.s_m * m ** c.p - c.s_r * q ** c.r
        # per-coordinate gradients of the loss (a factor of norm f spread over n coordinates)
        g = np.stack([(-c.s_m * e * m ** (c.p - 1) + lam[:, t] * m) / sq[0],
                      (-c.s_r * e * q ** (c.r - 1) + lam[:, t] * q) / sq[1] * reason])
        if optimizer == "gd":
            step = lr * g
        elif optimizer == "momentum":
            mom = momentum * mom + g
            step = lr * mom
        else:
            step = adam_step(mom, sec, g, t + 1, lr, betas, eps)
        m = np.maximum(m - sq[0] * step[0], 0.0)
        q = np.maximum(q - sq[1] * step[1], 0.0)
        if (t + 1) % every == 0 or t + 1 == T:
            log(t + 1)
    res = {k: np.array(v) for k, v in out.items()}
    res["steps"] = res["steps"].astype(int)
    return res


def window_lambda(onsets, width: float, value: float, total: int) -> np.ndarray:
    """(len(onsets), total) penalty per step: `value` on [onset, onset + width), 0 elsewhere."""
    t = np.arange(total)[None, :]
    on = np.asarray(onsets, float)[:, None]
    return np.where((t >= on) & (t < on + width), float(value), 0.0)


def reasoning_fraction(sim: dict) -> np.ndarray:
    """Final share of the explained part carried by reasoning, rho / (x + rho), per schedule."""
    x, rho = sim["x"][-1], sim["rho"][-1]
    return rho / np.maximum(x + rho, 1e-12)


def edges(model: CompositionModel, onsets, width: float, value: float, total: int, lr: float,
          optimizer: str = "adamw", threshold: float = 0.5, **kw) -> dict:
    """Onset sweep: the final reasoning fraction per onset, and the window's edges: the first
    onset at or above `threshold` after one below it (left; 0 when onset 0 already composes) and
    the last onset at or above it before one below (right; None when none falls again)."""
    onsets = np.asarray(sorted(onsets), float)
    frac = reasoning_fraction(simulate(model, window_lambda(onsets, width, value, total), lr, optimizer, **kw))
    ok = frac >= threshold
    left = None
    if ok.any():
        first = int(np.argmax(ok))
        left = 0.0 if first == 0 else float(onsets[first])
    right = None
    if left is not None:
        after = np.nonzero(~ok[int(np.argmax(ok)):])[0]
        if len(after):
            right = float(onsets[int(np.argmax(ok)) + after[0] - 1])
    return {"onsets": onsets, "fraction": frac, "left": left, "right": right, "exists": bool(ok.any())}


def memorisation_half_time(model: CompositionModel, lr: float, optimizer: str = "adamw", total: int = 5000,
                           **kw) -> float:
    """Steps until memorisation alone explains half (reasoning frozen), no penalty: nan if never."""
    sim = simulate(model, np.zeros((1, total)), lr, optimizer, every=1, reason=False, **kw)
    hit = np.nonzero(sim["x"][:, 0] >= 0.5)[0]
    return float(sim["steps"][hit[0]]) if len(hit) else float("nan")


def _solve_log(f, target: float, lo: float, hi: float, iters: int = 60) -> float:
    """x in [lo, hi] (bisection on log x) with f(x) = target, f monotone; nan if not bracketed."""
    flo, fhi = f(lo) - target, f(hi) - target
    if not (np.isfinite(flo) and np.isfinite(fhi)) or flo * fhi > 0:
        return float("nan")
    a, b = np.log(lo), np.log(hi)
    for _ in range(iters):
        mid = (a + b) / 2
        fm = f(np.exp(mid)) - target
        if fm * flo > 0:
            a, flo = mid, fm
        else:
            b = mid
    return float(np.exp((a + b) / 2))


def calibrate_s_m(base: CompositionModel, t_half: float, lr: float, optimizer: str = "adamw", **kw) -> float:
    """The memorisation strength whose half time (no penalty, reasoning frozen) is `t_half` steps."""
    def f(s):
        t = memorisation_half_time(replace(base, s_m=s), lr, optimizer, total=int(4 * t_half) + 10, **kw)
        return t if np.isfinite(t) else 1e9
    return _solve_log(lambda s: -f(s), -t_half, 1e-12, 1e6)


def calibrate_s_r(base: CompositionModel, rho_end: float, total: int, lr: float, optimizer: str = "adamw",
                  **kw) -> float:
    """The reasoning strength whose no-penalty run ends at reasoning fraction `rho_end` after `total` steps."""
    def f(s):
        return float(reasoning_fraction(simulate(replace(base, s_r=s), np.zeros((1, total)), lr, optimizer,
                                                 every=total, **kw))[0])
    return _solve_log(f, rho_end, 1e-12, 1e6)


HELD_LEVEL = 0.5   # sign limit: the grown set's squared norm rises under the penalty iff its held share >= 1/2


def sign_step_growth(theta: np.ndarray, pull: np.ndarray, lam: float, lr: float = 1.0) -> float:
    """Change of sum theta_i^2 over the grown coordinates (pull > 0) after one sign-descent step with an
    L2 penalty: each coordinate moves lr toward growth if pull_i >= lam theta_i^2, else lr toward 0.
    The exact first-order change is 2 lr sum |theta_i| s_i (s_i = +-1), so it is >= 0 iff the
    |theta|-weighted held share is >= HELD_LEVEL."""
    theta, pull = np.asarray(theta, float), np.asarray(pull, float)
    grown = pull > 0
    s = np.where(pull >= lam * theta ** 2, 1.0, -1.0)
    new = theta + lr * s * np.sign(theta)
    return float((new[grown] ** 2 - theta[grown] ** 2).sum())


def survival_edge(steps, held, level: float = HELD_LEVEL):
    """The composition model's left edge read coordinate by coordinate (Adam's sign limit): the first
    upward crossing of `level` by the held share of the attention weights the loss grows, measured along
    a no-decay run (linear between logged steps); None when it never crosses from below.

    Why: the reasoning path lives in attention; under a penalty switched on at t its coordinates keep
    growing only where their pull beats lambda theta^2 (the per-coordinate form of q' = s_r eps q^2 -
    lambda q). On the initial plateau the loss's pull is weak and the share falls below 1/2: a penalty on
    from there shrinks what the loss has started to build, and memorisation, which needs no composed
    structure, wins. The first step at which the share climbs back above 1/2 is the earliest onset whose
    penalty the growing structure outpulls. Step 0 is only the start: its share comes from the initial
    gradient, which lasts one step."""
    steps, held = np.asarray(steps, float), np.asarray(held, float)
    if steps.shape != held.shape or steps.ndim != 1:
        raise ConfigError("held", held.shape, "one value per logged step")
    below = False
    for i in range(len(steps)):
        if not np.isfinite(held[i]):
            continue
        if held[i] < level:
            below = True
        elif below:
            j = i - 1
            while j >= 0 and not np.isfinite(held[j]):
                j -= 1
            t0, h0, t1, h1 = steps[j], held[j], steps[i], held[i]
            return float(t0 + (level - h0) / (h1 - h0) * (t1 - t0)) if h1 != h0 else float(t1)
    return None




def late_window_edge(since_onset, outcome, total: int, lo: float, hi: float, threshold: float):
    """The composition model's right edge on its memorised plateau: the onset in [lo, hi] at which the final
    outcome of a window crosses `threshold`, read off one penalised probe (`outcome` at `since_onset` steps after
    the probe's own onset, the window's width the cell's). None when the predicted outcome stays on one side.

    Why: once memorisation has converged the no-decay flow all but stops (eps ~ 0 holds every force near 0), so a
    window opened anywhere on that plateau starts from the same state, and what it leads to depends on the time
    since its onset only. A window at onset o ends training T - o steps after its onset: its outcome is the
    probe's at that lag. The first adjacent pair of onsets (on the probe's grid) on opposite sides, linear
    between them, is the edge a bisection from lo would find."""
    s, y = np.asarray(since_onset, float), np.asarray(outcome, float)
    if s.shape != y.shape or s.ndim != 1 or len(s) < 2 or np.any(np.diff(s) <= 0):
        raise ConfigError("since_onset", s.shape, "increasing lags, one outcome each")
    if not (lo < hi and total - hi >= s[0] and total - lo <= s[-1]):
        raise ConfigError("lo, hi", (lo, hi), f"onsets whose lag to the end ({total} - onset) the probe covers"
                                              f" ({s[0]:g}-{s[-1]:g} steps after its onset)")
    onsets = np.sort(total - s[(total - s >= lo) & (total - s <= hi)])
    if onsets[0] > lo:
        onsets = np.r_[lo, onsets]
    if onsets[-1] < hi:
        onsets = np.r_[onsets, hi]
    pred = np.interp(total - onsets, s, y)
    side = pred >= threshold
    cross = np.nonzero(side[1:] != side[:-1])[0]
    if not len(cross):
        return None
    i = int(cross[0])
    o0, o1, p0, p1 = onsets[i], onsets[i + 1], pred[i], pred[i + 1]
    return float(o0 + (threshold - p0) / (p1 - p0) * (o1 - o0))


__all__ = ["HELD_LEVEL", "OPTIMIZERS", "CompositionModel", "calibrate_s_m", "sign_step_growth", "survival_edge", "late_window_edge", "calibrate_s_r", "derive", "edges",
           "memorisation_half_time", "reasoning_fraction", "simulate", "window_lambda"]
