"""`critwin theory predict`: the predicted window [t1, t2] per gamma, by the recipe, the reduced equations or
onset sweeps of the full flow or a discrete optimizer."""
from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from critwin import figures
from critwin import theory as th
from critwin.cli.common import add_decay_form, attach_figure, figure_args
from critwin.cli.theory.args import add_setting_args, gammas_from_args, setting_from_args
from critwin.table import format_table
from critwin.theory.rates import SIGMA_DEF_TEXT
from critwin.theory.reduced import ESCAPE_LAWS
from critwin.theory.windows import METHODS
from critwin.vocabulary import STYLISED_DECAY_FORMS


def register(sub):
    p = sub.add_parser("predict", help="predicted window [t1, t2] in steps, one row per gamma")
    add_setting_args(p)
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


def cmd_predict(args):
    gammas = gammas_from_args(args)
    s = setting_from_args(args)
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
