"""`critwin theory regimes`: where the reduced model has a window, mapped over G/mu_m and the decay budget."""
from __future__ import annotations

import numpy as np

from critwin import figures
from critwin.cli.common import attach_figure, figure_args
from critwin.cli.theory.args import add_setting_args, setting_from_args
from critwin.errors import ConfigError


def register(sub):
    p = sub.add_parser("regimes", help="where the stylised model has a window: a map in dimensionless groups",
                       description="Onset dependence of the reduced model over G/mu_m x decay budget, the"
                                   " setting's other groups held; the paper's setting marked.")
    add_setting_args(p, many_gammas=False)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--width", type=float, default=5000)
    p.add_argument("--gain-range", type=float, nargs=2, default=[0.1, 100.0], metavar=("LO", "HI"))
    p.add_argument("--budget-range", type=float, nargs=2, default=[0.01, 100.0], metavar=("LO", "HI"),
                   help="decay budget lambda * width in flow time (steps * eta)")
    p.add_argument("--n", type=int, default=9, help="grid points per axis")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--tol", type=float, default=0.05, help="smallest change in the final fraction that counts")
    figure_args(p, "regimes.png")
    p.set_defaults(handler=cmd_regimes)


def cmd_regimes(args):
    from critwin.theory.regimes import regime_map
    s = setting_from_args(args)
    for name, (lo, hi) in (("gain_range", args.gain_range), ("budget_range", args.budget_range)):
        if not (0 < lo < hi and np.isfinite(hi)):
            raise ConfigError(name, [lo, hi], "LO HI with 0 < LO < HI")
    if args.n < 2:
        raise ConfigError("n", args.n, "at least 2 grid points per axis")
    gains = np.geomspace(args.gain_range[0], args.gain_range[1], args.n)
    budgets = np.geomspace(args.budget_range[0], args.budget_range[1], args.n)
    m = regime_map(s, gains, budgets, args.width, args.steps, threshold=args.threshold, tol=args.tol)
    paper = {"literal (lambda 4e-3)": 4e-3 * args.width * s.eta, "per-step (x333)": 4e-3 / 3e-3 * args.width * s.eta}
    counts = {r: int((m["regime"] == r).sum()) for r in ("none", "uniform", "graded", "window")}
    st = m["setting"]
    text = [f"reduced model, targets {s.targets}, gamma {s.gamma:g}: G/mu_m = {st['gain_ratio']:.3g},"
            f" drive/mu_m = {st['drive_ratio']:.3g}, capacity {st['capacity']:.3g}, T*mu_m = {st['T_mu_m']:.3g},"
            f" width/T = {st['width_over_T']:.3g}",
            f"regimes over {args.n} x {args.n} points (G/mu_m {args.gain_range[0]:g}-{args.gain_range[1]:g},"
            f" budget lambda*width {args.budget_range[0]:g}-{args.budget_range[1]:g} in flow time): {counts}",
            "the paper's setting: G/mu_m = %.3g at budget %s" % (st["gain_ratio"], ", ".join(f"{k} {v:.3g}" for k, v in paper.items())),
            "none: decay changes nothing; uniform: it changes the outcome the same at every onset; graded: onsets"
            " differ but all end on one side of the threshold; window: some onsets cross it and others do not."]
    rows = [{"gain_ratio": float(g), "budget": float(b), "regime": m["regime"][i, j], "onset_range": float(m["onset_range"][i, j])}
            for i, g in enumerate(gains) for j, b in enumerate(budgets)]
    payload = {"setting": st, "paper_budgets": paper, "counts": counts, "rows": rows}
    attach_figure(args, "regimes.png", lambda path: figures.plot_regimes(m, paper, path), payload, text)
    return payload, "\n".join(text)
