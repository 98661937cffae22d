"""Handlers of `critwin theory ...`: each returns (JSON payload, human text)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from critwin import theory as th
from critwin import figures
from critwin.bridge.predicted_stages import BLOCKS, predict_stages
from critwin.table import format_table
from critwin.cli.common import add_decay_form, add_gamma, add_optimizer, attach_figure, figure_args
from critwin.errors import ConfigError
from critwin.schedules import PLACEMENTS, parse_window
from critwin.theory.rates import SIGMA_DEF_TEXT
from critwin.theory.reduced import ESCAPE_LAWS
from critwin.theory.setting import EMBEDDINGS, LOSS_NORMS, SIGMA_DEFS, TARGETS
from critwin.theory.windows import ENGINES, METHODS
from critwin.vocabulary import DEFAULT_GAMMA, STYLISED_DECAY_FORMS, THEORY_OPTIMIZERS


# ----------------------------------------------------------------- arguments
def _setting_args(p, many_gammas: bool = True):
    add_gamma(p, "+" if many_gammas else None, [DEFAULT_GAMMA] if many_gammas else DEFAULT_GAMMA,
              f"init scale(s) gamma > 0 (entries ~ N(0, gamma^2/d)); default {DEFAULT_GAMMA:g}")
    p.add_argument("--eta", type=float, default=3e-3, help="learning rate (steps = time / eta)")
    p.add_argument("--delta", type=float, default=0.5, help="window threshold in (0, 1/2]")
    p.add_argument("--d", type=int, default=64, help="embedding width")
    p.add_argument("--keys", type=int, default=16, help="number of keys K")
    p.add_argument("--anchors", type=int, default=8, help="number of anchors M")
    p.add_argument("--train-pairs", type=int, default=45, help="training ordered pairs |P| <= M^2")
    p.add_argument("--seed", type=int, default=0, help="task seed (embeddings, pairs, targets, init)")
    p.add_argument("--embeddings", choices=EMBEDDINGS, default="orthonormal")
    p.add_argument("--sigma-def", choices=SIGMA_DEFS, default="gram",
                   help="; ".join(f"{k}: {v}" for k, v in SIGMA_DEF_TEXT.items()))
    p.add_argument("--loss-norm", choices=LOSS_NORMS, default="sum",
                   help="alpha in L = alpha sum 1/2|f-y|^2: sum 1, pair 1/K, mean 1/(|P|K)")
    p.add_argument("--targets", choices=TARGETS, default="teacher",
                   help="teacher: planted shared path; permutation: e_{pi_j(pi_i(k))}")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _schedule_args(p, default_windows=None):
    p.add_argument("--steps", type=int, default=20000, help="training length T in steps")
    p.add_argument("--wd-window", nargs="+", action="extend", metavar="START:END", default=None,
                   help="decay window(s) in steps")
    p.add_argument("--wd", type=float, nargs="+", default=None,
                   help="decay inside the window(s): one value, or one per window")
    p.add_argument("--wd-const", type=float, default=None, help="constant decay for all of training")
    p.add_argument("--budget-placement", choices=PLACEMENTS, default=None)
    p.add_argument("--budget", type=float, default=None, help="decay budget lambda*steps (e.g. 20)")
    p.add_argument("--width", type=float, default=None, help="budget window width in steps")


def _setting(args, gamma=None) -> th.StylisedSetting:
    g = gamma if gamma is not None else (args.gamma[0] if isinstance(args.gamma, list) else args.gamma)
    return th.StylisedSetting(d=args.d, keys=args.keys, anchors=args.anchors,
                              train_pairs=args.train_pairs, gamma=g, eta=args.eta, delta=args.delta,
                              seed=args.seed, embeddings=args.embeddings, sigma_def=args.sigma_def,
                              loss_norm=args.loss_norm, targets=args.targets)


def _gammas(args) -> np.ndarray:
    g = np.asarray(args.gamma, dtype=float)
    th.setting.check_gamma(g)
    return g


def schedule_from_args(args) -> th.Schedule:
    """One Schedule from --wd-window/--wd, --wd-const or --budget-placement."""
    T = args.steps
    chosen = sum(x is not None for x in (args.wd_window, args.wd_const, args.budget_placement))
    if chosen > 1:
        raise ConfigError("schedule", "several", "one of --wd-window, --wd-const, --budget-placement")
    if args.budget_placement is not None:
        if args.budget is None or args.width is None:
            raise ConfigError("budget", args.budget, "--budget and --width with --budget-placement")
        return th.Schedule.budget_matched(args.budget_placement, args.budget, args.width, T)
    if args.wd_const is not None:
        return th.Schedule.constant(args.wd_const, T)
    if args.wd_window is None:
        return th.Schedule.none(T)
    wins = [parse_window(w) for w in args.wd_window]
    lams = args.wd if args.wd is not None else [4e-3]
    if len(lams) == 1:
        lams = lams * len(wins)
    if len(lams) != len(wins):
        raise ConfigError("wd", args.wd, f"one value or {len(wins)} values (one per window)")
    return th.Schedule(T, tuple((a, b, v) for (a, b), v in zip(wins, lams)))


# ----------------------------------------------------------------- derive
def cmd_derive(args):
    d = th.derive().to_dict()
    lines = ["Gradient flow of L = alpha sum_(i,j) sum_k 1/2 |M_ij e_k + c_ij W1 e_k - y|^2"
             " + lambda/2 (sum |M_ij|^2 + |W1|^2 + |W2|^2):"]
    lines += [f"  {v}" for v in d["flow"].values()]
    lines += ["", "Symmetric scalar instance (d = K = 1, |P| = P pairs, c = s w2, init w = gamma omega):",
              f"  mu_m = {d['mu_m']}        gamma exponent {d['gamma_exponent_m']}",
              f"  mu_r = {d['mu_r']}   gamma exponent {d['gamma_exponent_r']}  (W2 frozen: lazy rate)",
              f"  bilinear gain at the saddle G = {d['bilinear_gain']}  gamma exponent {d['gamma_exponent_gain']}",
              f"  Saxe escape time rho: u0 -> uf (capacity c): t = {d['escape_time']}",
              "", "Reduced equations (explained fractions):"]
    lines += [f"  {v}" for v in d["reduced"].values()]
    lines += ["", "Loss normalisation vs the paper's mu_m = sigma_e, mu_r = c_r gamma^2 sigma_e (a table built"
              " from the two closed forms above):"]
    rows = [{"loss_norm": v["loss_norm"], "sigma_def": v["sigma_def"], "alpha": v["alpha"],
             "mu_m": v["mu_m"], "mu_r (curvature)": v["mu_r"], "mu_r_drive": v["mu_r_drive"],
             "paper_mu_m": v["matches_paper_mu_m"], "paper_mu_r = curvature": v["matches_paper_mu_r"],
             "paper_mu_r = drive": v["drive_matches_paper_mu_r"]} for v in d["normalisations"].values()]
    lines += [format_table(rows), "",
              "Read as the W1-block curvature (W2 frozen), mu_r / mu_m = |P| c_r gamma^2 under every"
              " normalisation, so no loss reproduces both of the paper's rates. Read as the drive a random"
              " init gives the reasoning path (mu_r_drive = curvature / |P|: a random coupling is aligned"
              " with the target couplings only to 1/|P|), the paper's pair mu_m = sigma_e,"
              " mu_r = c_r gamma^2 sigma_e is exactly the `sum` loss with the `gram` sigma_e (and `pair` with `gram_mean`).",
              f"Checks on an explicit d=2, K=2 instance: {d['checks']}"]
    return d, "\n".join(lines)


# ----------------------------------------------------------------- predict
def cmd_predict(args):
    gammas = _gammas(args)
    s = _setting(args)
    kw = dict(method=args.method, law=args.law, width=args.width, wd=args.wd, total=args.steps,
              threshold=args.threshold, decay_form=args.decay_form, init_seeds=args.init_seeds)
    if args.method in ("full", "adamw"):
        rows = []
        with tqdm(total=len(gammas) * args.init_seeds * args.steps, desc=f"{args.method} onset sweeps"
                  f" ({len(gammas)} gamma x {args.init_seeds} init)", unit="step", leave=False) as bar:
            for g in gammas:
                rows += th.predict(s, [g], **kw, progress=bar.update)
    else:
        rows = th.predict(s, gammas, **kw)
    payload = {"setting": s.to_dict(), "sigma_def_text": SIGMA_DEF_TEXT[s.sigma_def], "rows": rows}
    if len(rows) == 1:
        payload.update(rows[0])
    cols = ["gamma", "method", "sigma_e", "c_r", "mu_m", "mu_r", "mu_r_drive", "t1_steps", "t2_steps", "window"]
    if args.method not in ("recipe", "recipe_adamw"):
        cols += ["onset_first", "onset_last", "baseline_fraction"]
    text = [format_table(rows, cols), "",
            f"sigma_e: {SIGMA_DEF_TEXT[s.sigma_def]}; eta = {s.eta:g}, delta = {s.delta:g}.",
            f"assumes: {rows[0]['assumes']}.",
            "mu_r: W1-block curvature (W2 frozen); mu_r_drive: the reasoning path's initial drive from a random"
            " init (= mu_r / |P|: a random coupling is aligned with the target couplings only to 1/|P|)."]
    text += [f"gamma {r['gamma']:g}: no window ({r['reason']})" for r in rows if r.get("window") == "none"]
    if args.method not in ("recipe", "recipe_adamw"):
        text.append(f"onset window: onsets s whose decay window [s, s+{args.width:g}) at {args.wd:g}"
                    f" ends with reasoning fraction >= {args.threshold:g} (T = {args.steps}).")
        for r in rows:      # the whole sweep, not only its window: a slow run should not lose it
            text.append(f"gamma {r['gamma']:g}, final reasoning fraction by onset (no decay"
                        f" {r['baseline_fraction']:.3g}): " + ", ".join(
                            f"{o:g}: {f:.3g}" for o, f in zip(r["onsets"], r["fractions"])))

    def plot(path):
        grid_g = np.geomspace(gammas.min() / 3, gammas.max() * 3, 50)
        grid = {}
        for m in ("recipe", "reduced"):
            w = th.windows.recipe_window(s, grid_g) if m == "recipe" else \
                th.windows.reduced_window(s, grid_g, args.law)
            grid[m] = (grid_g, w["t1_steps"], w["t2_steps"])
        figures.plot_windows(grid, rows, path, f"d={s.d} K={s.keys} M={s.anchors} |P|={s.train_pairs}"
                             f" eta={s.eta:g} loss_norm={s.loss_norm} law={args.law}")
    attach_figure(args, "predict_windows.png", plot, payload, text)
    return payload, "\n".join(text)


# ----------------------------------------------------------------- schedule
def cmd_schedule(args):
    s = _setting(args)
    sched = schedule_from_args(args)
    grid = np.linspace(0, sched.total, 201)
    if args.engine in ("reduced", "full"):
        steps, traj = th.simulate(s, sched, engine=args.engine, law=args.law, eval_steps=grid)
    else:
        p = th.build_problem(s)
        q = th.init_params(p, s.gamma, [s.seed])
        with tqdm(total=sched.total, desc=f"{args.engine} on the stylised model", unit="step",
                  leave=False) as bar:
            steps, traj, _ = th.run_discrete(p, q, sched, s.eta, args.engine,
                                             eval_every=max(1, sched.total // 200), progress=bar.update,
                                             decay_form=args.decay_form)
    traj = {k: np.asarray(v)[:, 0] for k, v in traj.items()}
    final = {k: float(v[-1]) for k, v in traj.items() if k in ("m", "r", "x", "rho", "reasoning_fraction")}
    bad = [i for i in range(len(steps)) if not all(np.isfinite(traj[k][i]) for k in final)]
    diverged = f"diverged: non-finite state from step {int(steps[bad[0]])} (try a smaller --eta)" if bad else None
    flow = args.engine in ("reduced", "full")
    form = "decoupled = l2 (one equation under gradient flow)" if flow else args.decay_form
    payload = {"setting": s.to_dict(), "engine": args.engine, "decay_form": form, "schedule": sched.to_dict(),
               "diverged": diverged, "schedule_text": sched.describe(), "budget": sched.integral(), **final,
               "trajectory": {"step": steps, **traj}}
    text = [f"schedule: {sched.describe()} over {sched.total} steps (budget {sched.integral():g});"
            f" engine {args.engine}; decay {form}", format_table([{"gamma": s.gamma, **final}])]
    if diverged:
        text.append(diverged)
    attach_figure(args, "schedule.png", lambda path: figures.plot_schedule(
        steps, traj, sched.windows, path, f"gamma={s.gamma:g}, {sched.describe()}, engine={args.engine}"),
        payload, text)
    return payload, "\n".join(text)


# ----------------------------------------------------------------- basin
def cmd_basin(args):
    gammas = _gammas(args)
    s = _setting(args)
    sched = schedule_from_args(args) if (args.wd_window or args.wd_const or args.budget_placement) else None
    with tqdm(total=len(gammas), desc=f"basin ({args.seeds} seeds per gamma)", unit="gamma",
              leave=False) as bar:
        rows = th.basin(s, gammas, args.seeds, args.steps, sched, args.threshold, bar.update)
    text = [format_table(rows, ["gamma", "seeds", "reached", "fraction_reached",
                                "mean_reasoning_fraction", "paper_bound"]),
            f"schedule: {rows[0]['schedule']}; reached = final reasoning fraction >= {args.threshold:g};"
            " bound: 1 - exp(-mu_r T) - 1[T < t2] with the recipe's mu_r and t2 (C = 1)."]
    return {"setting": s.to_dict(), "rows": rows}, "\n".join(text)


# ----------------------------------------------------------------- laws
def cmd_laws(args):
    gammas = _gammas(args)
    s = _setting(args)
    out = th.compare_laws(s, gammas, args.horizon, args.seed, args.optimizer)
    text = [format_table(out["rows"], ["gamma", "escape_steps", "lazy_pred_steps", "saxe_pred_steps",
                                       "closer_prediction", "closer_law"]), ""]
    for name, f in out["fits"].items():
        text.append(f"fit t = a*{name} + b: R^2 = {f['r2']:.3f}, rms rel err = {f['rms_rel_err']:.3f}")
    sl = out["log_slope"]
    text += [f"d ln t / d ln gamma: measured {sl['measured']:.3f}, gamma^-2 law {sl['gamma^-2']:.3f},"
             f" log law {sl['log(1/gamma)']:.3f}",
             "mean |ln(pred/measured)|: " + ", ".join(f"{k} {v:.2f}" for k, v in out["mean_abs_log_error"].items()),
             f"better law (unfitted predictions): {out['better_law']}; better linear fit: {out['better_fit']}"
             f" (optimizer: {out['optimizer']}; predictions assume gradient flow)"]
    return {"setting": s.to_dict(), **out}, "\n".join(text)


# ----------------------------------------------------------------- compare
def cmd_compare(args):
    from critwin.theory.agreement import reduced_vs_full
    s = _setting(args)
    sched = schedule_from_args(args)
    out = reduced_vs_full(s, sched, args.law, seed=args.seed)
    keys = [k for k in out if "maxdiff" in k]
    final = {f"final_{k}_{e}": float(out[f"{k}_{e}"][-1]) for k in ("x", "rho", "reasoning_fraction")
             for e in ("reduced", "full")}
    rows = [{"quantity": k, "before_split": out[f"{k}_maxdiff_early"], "after_split": out[f"{k}_maxdiff_late"],
             "final_reduced": final[f"final_{k}_reduced"], "final_full": final[f"final_{k}_full"]}
            for k in ("x", "rho", "reasoning_fraction")]
    text = [f"reduced ({args.law} law) vs full flow, {sched.describe()}, gamma={s.gamma:g};"
            f" max |difference| before / after step {out['split_step']:g}:", format_table(rows)]
    payload = {"setting": s.to_dict(), "schedule": sched.to_dict(), "law": args.law,
               "split_step": out["split_step"], **{k: out[k] for k in keys}, **final}
    attach_figure(args, "compare.png", lambda path: figures.plot_compare(
        out["steps"], out, sched.windows, path,
        f"reduced ({args.law}) dashed vs full flow solid, gamma={s.gamma:g}"), payload, text)
    return payload, "\n".join(text)


# ----------------------------------------------------------------- budget
def cmd_budget(args):
    s = _setting(args)
    rows = th.budget_comparison(s, args.budget, args.width, args.steps, args.engine, args.law,
                                _gammas(args))
    text = format_table(rows, ["gamma", "placement", "schedule", "budget", "x", "rho", "reasoning_fraction"])
    return {"setting": s.to_dict(), "rows": rows}, text


# ----------------------------------------------------------------- registration
# ----------------------------------------------------------------- timescale
def cmd_timescale(args):
    from critwin.theory.optimizers import optimizer_time_scale
    if args.horizon < 1:
        raise ConfigError("horizon", args.horizon, "a positive number of steps to wait for each crossing")
    gammas = _gammas(args)
    s = _setting(args)
    p = th.build_problem(s)
    r = th.compute_rates(s, gammas, problem=p)
    with tqdm(total=1, desc=f"GD and {args.optimizer} on the stylised model", leave=False):
        o = optimizer_time_scale(p, gammas, s.eta, s.delta, r.capacity, args.optimizer, args.horizon, s.seed)
    rec = th.predict(s, gammas, "recipe")
    rows = [{"gamma": float(g), "t1_gd": o["t1_gd"][k], f"t1_{args.optimizer}": o["t1_opt"][k],
             "t1_ratio": o["t1_ratio"][k], "t2_gd": o["t2_gd"][k], f"t2_{args.optimizer}": o["t2_opt"][k],
             "t2_ratio": o["t2_ratio"][k], "recipe_t1": rec[k]["t1_steps"], "recipe_t2": rec[k]["t2_steps"],
             f"recipe_t1_{args.optimizer}": rec[k]["t1_steps"] / o["t1_ratio"][k],
             f"recipe_t2_{args.optimizer}": rec[k]["t2_steps"] / o["t2_ratio"][k]} for k, g in enumerate(gammas)]
    text = [format_table(rows),
            f"t1: steps to memorization 1 - delta; t2: steps for the shared path alone to (1 - delta) of its capacity"
            f" ({r.capacity:.3g}); ratio = GD / {args.optimizer}: the factor by which {args.optimizer} shortens the"
            " gradient-flow times on the same stylised model; recipe_*_" + args.optimizer + " divides the recipe by it."]
    return {"rows": rows, "setting": s.to_dict()}, "\n".join(text)


# ----------------------------------------------------------------- regimes
def cmd_regimes(args):
    from critwin.theory.regimes import regime_map
    s = _setting(args)
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


def register(sub):
    p = sub.add_parser("timescale", help="how much an optimizer (AdamW) speeds each path up over GD",
                       description="Memorization and reasoning times of GD and of a discrete optimizer on the"
                                   " same stylised model; their ratio corrects the gradient-flow recipe.")
    _setting_args(p)
    add_optimizer(p, default="adamw", choices=THEORY_OPTIMIZERS[1:])
    p.add_argument("--horizon", type=int, default=3000, help="steps to wait for each crossing")
    p.set_defaults(handler=cmd_timescale)

    p = sub.add_parser("regimes", help="where the stylised model has a window: a map in dimensionless groups",
                       description="Onset dependence of the reduced model over G/mu_m x decay budget, the"
                                   " setting's other groups held; the paper's setting marked.")
    _setting_args(p, many_gammas=False)
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

    p = sub.add_parser("derive", help="symbolic flow, rates and gamma exponents")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(handler=cmd_derive)

    p = sub.add_parser("predict", help="predicted window [t1, t2] in steps, one row per gamma")
    _setting_args(p)
    p.add_argument("--method", choices=METHODS, default="recipe",
                   help="adamw: the onset window of discrete AdamW on the stylised model (slow; see --decay-form)")
    add_decay_form(p, STYLISED_DECAY_FORMS, "how lambda acts in the adamw method: l2 penalty through Adam (default: the"
                                            " paper's Eq. 4), or decoupled shrink")
    p.add_argument("--init-seeds", type=int, default=1,
                   help="full / adamw: run from this many inits and report the median and 10-90%% range per onset"
                        " (the outcome depends on the init; each init costs one more sweep)")
    p.add_argument("--law", choices=ESCAPE_LAWS, default="bilinear", help="reduced law (derived: bilinear)")
    p.add_argument("--steps", type=int, default=20000, help="training length for onset sweeps")
    p.add_argument("--width", type=float, default=5000, help="decay window width for onset sweeps")
    p.add_argument("--wd", type=float, default=4e-3, help="decay inside the swept window")
    p.add_argument("--threshold", type=float, default=0.5, help="reasoning fraction that counts")
    figure_args(p, "predict_windows.png")
    p.set_defaults(handler=cmd_predict)

    p = sub.add_parser("schedule", help="predicted final m, r, reasoning fraction for a schedule")
    _setting_args(p, many_gammas=False)
    _schedule_args(p)
    add_decay_form(p, STYLISED_DECAY_FORMS, "with gd / momentum / adamw: l2 penalty through the optimizer (default: the"
                                            " paper's Eq. 4) or decoupled shrink")
    p.add_argument("--engine", choices=ENGINES, default="reduced",
                   help="reduced equations, full gradient flow, or a discrete optimizer")
    p.add_argument("--law", choices=ESCAPE_LAWS, default="bilinear")
    figure_args(p, "schedule.png")
    p.set_defaults(handler=cmd_schedule)

    p = sub.add_parser("basin", help="fraction of init seeds reaching reasoning, per gamma")
    _setting_args(p)
    _schedule_args(p)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--threshold", type=float, default=0.5)
    p.set_defaults(handler=cmd_basin)

    p = sub.add_parser("laws", help="escape time vs gamma: gamma^-2 or log(1/gamma)?")
    _setting_args(p)
    p.add_argument("--horizon", type=int, default=5000, help="steps to wait for the escape")
    add_optimizer(p, default="flow", choices=("flow", *THEORY_OPTIMIZERS),
                  help="what moves the shared path (predictions assume gradient flow)")
    p.set_defaults(handler=cmd_laws, gamma=[0.05, 0.1, 0.2, 0.4, 0.8, 1.2])

    p = sub.add_parser("compare", help="reduced equations vs the full flow on one schedule")
    _setting_args(p, many_gammas=False)
    _schedule_args(p)
    p.add_argument("--law", choices=ESCAPE_LAWS, default="bilinear")
    figure_args(p, "compare.png")
    p.set_defaults(handler=cmd_compare)

    p = sub.add_parser("budget", help="budget-matched early / middle / late windows")
    _setting_args(p)
    p.add_argument("--budget", type=float, default=20.0)
    p.add_argument("--width", type=float, default=5000)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--engine", choices=("reduced", "full"), default="reduced")
    p.add_argument("--law", choices=ESCAPE_LAWS, default="bilinear")
    p.set_defaults(handler=cmd_budget)

    register_stages(sub)


def cmd_theory_stages(args):

    from critwin.table import format_table
    blocks = tuple(b.strip() for b in args.features.split(","))
    hops = args.hops or ([None] if args.task == "withheld" else [2, 3, 4, 5])
    if args.task == "withheld" and hops != [None]:
        raise ConfigError("hops", args.hops, "none for the withheld task (its queries are one-hop)")
    results = [predict_stages(args.task, h, args.chemistries or None, args.task_seed, blocks) for h in hops]
    rows = [{"task": r["task"], **{f"t_{k}": v for k, v in r["stage_times"].items()}, "order": r["order"], "never": ",".join(r["never"]),
             **{f"rise_{k}": r["half_rise_times"][k] for k in ("A", "B", "C")},
             **{f"final_{k}": v for k, v in r["final"].items()},
             "dip_B|A": r["dip_b_given_a"]["depth"] if r["dip_b_given_a"] else 0.0} for r in results]
    text = [format_table(rows),
            "t_X: flow time from which event X's held-out curve stays at the stage level (0.95 for A, 0.90"
            " otherwise) for 3 grid points in a row, the rule observed runs are timed by (nan: never); order:"
            " the stages by t_X (levels differ, so t_X can invert nested events); rise_X: when it has risen"
            " half-way (nan: no rise), a separate reading that the order does not use. Only orders and"
            " ratios are predictions. final_X below the level: the stage needs more than a linear readout of the"
            f" features {','.join(blocks)}."]
    payload = {"rows": rows, "features": list(blocks)}
    if args.out_csv:
        out = Path(args.out_csv)
        out.parent.mkdir(parents=True, exist_ok=True)
        pd.concat([r["curves"].assign(task=r["task"]) for r in results]).to_csv(out, index=False)
        payload["curves_csv"] = str(out)
        text.append(f"wrote the predicted curves to {out}")
    from critwin.figures import plot_predicted_stages
    from critwin.cli.common import attach_figure
    attach_figure(args, f"predicted_stages_{args.task}.png", lambda path: plot_predicted_stages(results, path),
                  payload, text)
    return payload, "\n".join(text)


def register_stages(sub):
    p = sub.add_parser("stages", help="predicted Alchemy stages: a linear readout's flow on the task's statistics",
                       description="Fits the exact gradient flow of a linear readout of context features on the"
                                   " training chemistries and traces the held-out events A, B, C over flow time:"
                                   " the predicted order of the stages, their relative times, and which stages"
                                   " a linear readout cannot reach. No training.")
    p.add_argument("--task", choices=("withheld", "composition", "decomposition"), default="withheld")
    p.add_argument("--hops", type=int, nargs="+", default=None, help="composition / decomposition (default 2 3 4 5)")
    p.add_argument("--chemistries", type=int, default=400, help="chemistries per split at most (0 = all)")
    p.add_argument("--task-seed", type=int, default=0)
    p.add_argument("--features", default=",".join(BLOCKS), help="feature blocks, some of " + ", ".join(BLOCKS))
    p.add_argument("--out-csv", default=None, help="write the predicted event curves (tidy CSV) here")
    p.add_argument("--out", default="critwin-out", help="folder for the figure")
    p.add_argument("--no-figure", action="store_true", help="do not write predicted_stages_TASK.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_theory_stages)
