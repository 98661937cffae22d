"""Symbolic derivation (sympy) of the stylised model's flow, rates and gamma exponents.

Gradients come from `sympy.diff`, rates from second derivatives at init and exponents
from series expansions in gamma. Two things are stated, not derived, and say so: the
reduced equations (their right-hand sides are written in mu_m, mu_r, rho0 and then checked
against the chain rule on the scalar instance) and the normalisation table (built from the
two closed forms, which `_small_instance_check` verifies on an explicit instance).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import sympy as sp


@dataclass(frozen=True)
class Derivation:
    """Derived equations and constants; `to_dict` is the CLI's JSON."""

    flow_plain: dict
    flow_latex: dict
    mu_m: sp.Expr
    mu_r: sp.Expr
    gain: sp.Expr
    gamma_exponent_m: int
    gamma_exponent_r: int
    gamma_exponent_gain: int
    reduced_plain: dict
    reduced_latex: dict
    escape_time: sp.Expr
    normalisations: dict
    checks: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "flow": self.flow_plain, "flow_latex": self.flow_latex,
            "mu_m": str(self.mu_m), "mu_r": str(self.mu_r),
            "mu_m_latex": sp.latex(self.mu_m), "mu_r_latex": sp.latex(self.mu_r),
            "bilinear_gain": str(self.gain),
            "gamma_exponent_m": self.gamma_exponent_m, "gamma_exponent_r": self.gamma_exponent_r,
            "gamma_exponent_gain": self.gamma_exponent_gain,
            "reduced": self.reduced_plain, "reduced_latex": self.reduced_latex,
            "escape_time": str(self.escape_time), "escape_time_latex": sp.latex(self.escape_time),
            "normalisations": self.normalisations, "checks": self.checks,
        }


def gamma_exponent(expr: sp.Expr, gamma: sp.Symbol) -> int:
    """Leading power of gamma in the series of `expr` about gamma = 0."""
    lead = sp.series(expr, gamma, 0, 6).removeO().as_leading_term(gamma)
    return int(sp.degree(lead, gamma)) if lead.has(gamma) else 0


def _matrix_flow():
    """Gradient flow of L = alpha sum_p sum_k 1/2|M_p e_k + c_p W1 e_k - y|^2 + decay."""
    d = sp.Symbol("d", positive=True, integer=True)
    M, W1, W2 = (sp.MatrixSymbol(n, d, d) for n in ("M_ij", "W_1", "W_2"))
    e, ui, uj, y = (sp.MatrixSymbol(n, d, 1) for n in ("e_k", "u_i", "u_j", "y_ijk"))
    alpha, lam = sp.symbols("alpha lambda", positive=True)
    res = M * e + W1 * e * (uj.T * W2 * ui) - y
    ell = sp.Rational(1, 2) * (res.T * res)
    flows = {}
    for name, X, ctx in (("M_ij", M, r"\sum_k"), ("W_1", W1, r"\sum_{(i,j)\in P}\sum_k"),
                         ("W_2", W2, r"\sum_{(i,j)\in P}\sum_k")):
        grad = sp.simplify(sp.diff(ell, X))
        flows[name] = (grad, ctx)
    plain = {n: f"d{n}/dt = -alpha * sum[{g}] - lambda(t) * {n}" for n, (g, _) in flows.items()}
    latex = {n: rf"\dot{{{n}}} = -\alpha {ctx} \left[{sp.latex(g)}\right] - \lambda(t)\, {n}"
             for n, (g, ctx) in flows.items()}
    return plain, latex


def _scalar_instance():
    """Symmetric scalar instance (d = K = 1, |P| identical pairs): rates and reduced ODEs."""
    a, P, e, s, y, lam, g, w = sp.symbols("alpha P e s y lambda gamma omega", positive=True)
    m1, mo, w1, w2 = sp.symbols("m_1 m_o w_1 w_2", real=True)
    # one tagged pair m1, the other P-1 pairs share m_o; c_p = s * w2 (s = u_i u_j)
    f1, fo = e * m1 + s * w2 * w1 * e, e * mo + s * w2 * w1 * e
    L = a * (sp.Rational(1, 2) * (f1 - y) ** 2 + (P - 1) * sp.Rational(1, 2) * (fo - y) ** 2) \
        + lam / 2 * (m1**2 + (P - 1) * mo**2 + w1**2 + w2**2)
    sym = {m1: sp.Symbol("m"), mo: sp.Symbol("m")}
    dm = sp.simplify(-sp.diff(L, m1).subs(sym))
    dw1, dw2 = (sp.simplify(-sp.diff(L, v).subs(sym)) for v in (w1, w2))
    data = L.subs(lam, 0)
    mu_m = sp.simplify(sp.diff(data, m1, 2))
    init = {w1: g * w, w2: g * w}
    mu_r_lazy = sp.simplify(sp.diff(data, w1, 2).subs(init))          # W2 frozen at init
    cross = sp.diff(data, w1, w2).subs({w1: 0, w2: 0, m1: 0, mo: 0})  # saddle at the origin
    gain = sp.simplify(sp.Abs(cross))
    return dict(a=a, P=P, e=e, s=s, y=y, lam=lam, g=g, w=w, dm=dm, dw1=dw1, dw2=dw2,
                mu_m=mu_m, mu_r=mu_r_lazy, gain=gain, w1=w1, w2=w2)


def _reduced(sc):
    """Reduced system in x = e m / y, rho = s e w1 w2 / y, Q = (w1^2 + w2^2) / (2 w0^2).

    The right-hand sides are stated in mu_m, mu_r, rho0 and checked against the chain rule
    applied to the scalar instance's flow (all symbols, any P, lambda)."""
    x, rho, Q, lam, mu_m, mu_r, rho0, w0 = sp.symbols(
        "x rho Q lambda mu_m mu_r rho_0 w_0", real=True)
    a, P, e, s, y, w1, w2 = (sc[k] for k in ("a", "P", "e", "s", "y", "w1", "w2"))
    m = sp.Symbol("m")
    eps = 1 - x - rho
    rhs = {"x": mu_m * eps - lam * x,
           "rho": 2 * mu_r * Q * eps - 2 * lam * rho,
           "Q": 2 * mu_r * rho * eps / rho0**2 - 2 * lam * Q}
    chain = {"x": (e / y) * sc["dm"],
             "rho": (s * e / y) * (w2 * sc["dw1"] + w1 * sc["dw2"]),
             "Q": (w1 * sc["dw1"] + w2 * sc["dw2"]) / w0**2}
    defs = {x: e * m / y, rho: s * e * w1 * w2 / y, Q: (w1**2 + w2**2) / (2 * w0**2),
            mu_m: a * e**2, mu_r: a * P * s**2 * e**2 * w0**2, rho0: s * e * w0**2 / y,
            lam: sc["lam"]}
    for k in rhs:
        assert sp.simplify(rhs[k].subs(defs) - chain[k]) == 0, k
    names = {"x": "dx/dt", "rho": "drho/dt", "Q": "dQ/dt"}
    plain = {k: f"{names[k]} = {sp.sstr(v)}" for k, v in rhs.items()}
    plain["note"] = ("bilinear law; the paper's linear law is drho/dt = mu_r*(1 - x - rho) - lambda*rho."
                     " With targets only partly shareable, 1 -> capacity for (x_a, rho) and x_b"
                     " relaxes to 1 - capacity at mu_m.")
    latex = {k: rf"\dot{{{sp.latex(sym)}}} = {sp.latex(rhs[k])}"
             for k, sym in (("x", x), ("rho", rho), ("Q", Q))}
    return plain, latex


def _escape_time():
    """Saxe logistic rho' = 2G rho (c - rho)/c: time to grow from u_0 to u_f (< c), exact."""
    G, c, u0, uf, u = sp.symbols("G c u_0 u_f u", positive=True)
    rate = c / (2 * G * u * (c - u))
    F = sp.integrate(sp.apart(rate, u), u)
    F = F.replace(sp.log, lambda z: sp.log(-z) if sp.simplify(z - (u - c)) == 0 else sp.log(z))
    assert sp.simplify(sp.diff(F, u) - rate) == 0
    closed = sp.log(uf * (c - u0) / (u0 * (c - uf))) / (2 * G)
    assert sp.simplify(sp.expand_log(F.subs(u, uf) - F.subs(u, u0) - closed, force=True)) == 0
    return closed


def _normalisations():
    """mu_m, mu_r and mu_r_drive for each loss prefactor alpha and each reading of sigma_e.

    A table built from the two closed forms (not a derivation of its own): mu_m = alpha
    lambda_min+(E E^T) and the W1-block curvature mu_r = alpha |P| c_r gamma^2 lambda_min+(E E^T)
    (E[sum_p c_p^2] = |P| c_r gamma^2; `_small_instance_check` verifies both Hessian blocks).
    mu_r_drive = mu_r / |P| is the reasoning path's initial drive from a random init (a random
    coupling vector is aligned with the target couplings only to cos^2 ~ 1/|P|), which is what
    the paper's mu_r = c_r gamma^2 sigma_e corresponds to under `sum` with the `gram` sigma_e.
    """
    K, P, cr, g, sig = sp.symbols("K P c_r gamma sigma_e", positive=True)
    out = {}
    for sigma_def, lam_min in (("gram", sig), ("gram_mean", K * sig)):
        for name, alpha in (("sum", sp.Integer(1)), ("pair", 1 / K), ("mean", 1 / (P * K))):
            mu_m = sp.simplify(alpha * lam_min)
            mu_r = sp.simplify(alpha * P * cr * g**2 * lam_min)
            drive = sp.simplify(mu_r / P)
            out[f"{name}/{sigma_def}"] = {
                "loss_norm": name, "sigma_def": sigma_def, "alpha": str(alpha),
                "mu_m": str(mu_m), "mu_r": str(mu_r), "mu_r_drive": str(drive),
                "ratio_mu_r_over_mu_m": str(sp.simplify(mu_r / mu_m)),
                "matches_paper_mu_m": bool(sp.simplify(mu_m - sig) == 0),
                "matches_paper_mu_r": bool(sp.simplify(mu_r - cr * g**2 * sig) == 0),
                "drive_matches_paper_mu_r": bool(sp.simplify(drive - cr * g**2 * sig) == 0)}
    return out


def _small_instance_check() -> dict:
    """Explicit d = 2, K = 2, |P| = 2 instance: Hessian blocks equal the closed forms."""
    d, K = 2, 2
    a = sp.Symbol("alpha", positive=True)
    E = sp.Matrix(d, K, sp.symbols("e0:4", real=True))
    Ms = [sp.Matrix(d, d, sp.symbols(f"m{p}_0:4", real=True)) for p in range(2)]
    W1 = sp.Matrix(d, d, sp.symbols("v0:4", real=True))
    cs = sp.symbols("c0:2", real=True)     # c_p held fixed: the W2-frozen linearisation
    Y = [sp.Matrix(d, K, sp.symbols(f"y{p}_0:4", real=True)) for p in range(2)]
    L = sum(a * sp.Rational(1, 2) * sum(x**2 for x in (Ms[p] * E + cs[p] * W1 * E - Y[p]))
            for p in range(2))
    vm, vw = list(Ms[0]), list(W1)         # row-major vec: Hessian is I kron (E E^T)
    Hm = sp.hessian(L, vm)
    Hw = sp.hessian(L, vw)
    kron = sp.kronecker_product(sp.eye(d), E * E.T)
    ok_m = sp.simplify(Hm - a * kron) == sp.zeros(d * d)
    ok_w = sp.simplify(Hw - a * (cs[0] ** 2 + cs[1] ** 2) * kron) == sp.zeros(d * d)
    return {"hessian_M_equals_alpha_EEt": bool(ok_m),
            "hessian_W1_equals_alpha_sum_c2_EEt": bool(ok_w)}


@lru_cache(maxsize=1)
def derive() -> Derivation:
    """Run the whole derivation (a few seconds of sympy; cached)."""
    plain, latex = _matrix_flow()
    sc = _scalar_instance()
    red_plain, red_latex = _reduced(sc)
    g = sc["g"]
    return Derivation(
        flow_plain=plain, flow_latex=latex, mu_m=sc["mu_m"], mu_r=sc["mu_r"], gain=sc["gain"],
        gamma_exponent_m=gamma_exponent(sc["mu_m"], g),
        gamma_exponent_r=gamma_exponent(sc["mu_r"], g),
        gamma_exponent_gain=gamma_exponent(sc["gain"], g),
        reduced_plain=red_plain, reduced_latex=red_latex, escape_time=_escape_time(),
        normalisations=_normalisations(), checks=_small_instance_check())
