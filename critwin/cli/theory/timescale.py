"""`critwin theory timescale`: how much a discrete optimizer (AdamW) shortens each path's time over GD,
the factor that corrects the gradient-flow recipe."""
from __future__ import annotations

from tqdm.auto import tqdm

from critwin import theory as th
from critwin.cli.common import add_optimizer
from critwin.cli.theory.args import add_setting_args, gammas_from_args, setting_from_args
from critwin.errors import ConfigError
from critwin.table import format_table
from critwin.vocabulary import THEORY_OPTIMIZERS


def register(sub):
    p = sub.add_parser("timescale", help="how much an optimizer (AdamW) speeds each path up over GD",
                       description="Memorization and reasoning times of GD and of a discrete optimizer on the"
                                   " same stylised model; their ratio corrects the gradient-flow recipe.")
    add_setting_args(p)
    add_optimizer(p, default="adamw", choices=THEORY_OPTIMIZERS[1:])
    p.add_argument("--horizon", type=int, default=3000, help="steps to wait for each crossing")
    p.set_defaults(handler=cmd_timescale)


def cmd_timescale(args):
    from critwin.theory.optimizers import optimizer_time_scale
    if args.horizon < 1:
        raise ConfigError("horizon", args.horizon, "a positive number of steps to wait for each crossing")
    gammas = gammas_from_args(args)
    s = setting_from_args(args)
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
