"""The stylised setting and decay schedule as options: shared by the `critwin theory` subcommands."""
from __future__ import annotations

import numpy as np

from critwin import theory as th
from critwin.cli.common import add_gamma
from critwin.errors import ConfigError
from critwin.schedules import PLACEMENTS, parse_window
from critwin.theory.rates import SIGMA_DEF_TEXT
from critwin.theory.setting import EMBEDDINGS, LOSS_NORMS, SIGMA_DEFS, TARGETS
from critwin.vocabulary import DEFAULT_GAMMA


def add_setting_args(p, many_gammas: bool = True):
    """The stylised setting's options (several gammas, or one) and --json."""
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


def add_schedule_args(p):
    """Training length and the decay schedule: windows, a constant, or a placed budget."""
    p.add_argument("--steps", type=int, default=20000, help="training length T in steps")
    p.add_argument("--wd-window", nargs="+", action="extend", metavar="START:END", default=None,
                   help="decay window(s) in steps")
    p.add_argument("--wd", type=float, nargs="+", default=None,
                   help="decay inside the window(s): one value, or one per window")
    p.add_argument("--wd-const", type=float, default=None, help="constant decay for all of training")
    p.add_argument("--budget-placement", choices=PLACEMENTS, default=None)
    p.add_argument("--budget", type=float, default=None, help="decay budget lambda*steps (e.g. 20)")
    p.add_argument("--width", type=float, default=None, help="budget window width in steps")


def setting_from_args(args, gamma=None) -> th.StylisedSetting:
    """The StylisedSetting the options name, at `gamma` or the (first) --gamma."""
    g = gamma if gamma is not None else (args.gamma[0] if isinstance(args.gamma, list) else args.gamma)
    return th.StylisedSetting(d=args.d, keys=args.keys, anchors=args.anchors,
                              train_pairs=args.train_pairs, gamma=g, eta=args.eta, delta=args.delta,
                              seed=args.seed, embeddings=args.embeddings, sigma_def=args.sigma_def,
                              loss_norm=args.loss_norm, targets=args.targets)


def gammas_from_args(args) -> np.ndarray:
    """Every --gamma as an array, checked."""
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

