"""`critwin theory laws`: measured escape times against the gamma^-2 and log(1/gamma) laws."""
from __future__ import annotations

from critwin import theory as th
from critwin.cli.common import add_optimizer
from critwin.cli.theory.args import add_setting_args, gammas_from_args, setting_from_args
from critwin.table import format_table
from critwin.vocabulary import THEORY_OPTIMIZERS


def register(sub):
    p = sub.add_parser("laws", help="escape time vs gamma: gamma^-2 or log(1/gamma)?")
    add_setting_args(p)
    p.add_argument("--horizon", type=int, default=5000, help="steps to wait for the escape")
    add_optimizer(p, default="flow", choices=("flow", *THEORY_OPTIMIZERS),
                  help="what moves the shared path (predictions assume gradient flow)")
    p.set_defaults(handler=cmd_laws, gamma=[0.05, 0.1, 0.2, 0.4, 0.8, 1.2])


def cmd_laws(args):
    gammas = gammas_from_args(args)
    s = setting_from_args(args)
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
