"""`critwin theory schedule`: the stylised model under one decay schedule, its final state and trajectory."""
from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from critwin import figures
from critwin import theory as th
from critwin.cli.common import add_decay_form, attach_figure, figure_args
from critwin.cli.theory.args import add_schedule_args, add_setting_args, schedule_from_args, setting_from_args
from critwin.table import format_table
from critwin.theory.reduced import ESCAPE_LAWS
from critwin.theory.windows import ENGINES
from critwin.vocabulary import STYLISED_DECAY_FORMS


def register(sub):
    p = sub.add_parser("schedule", help="predicted final m, r, reasoning fraction for a schedule")
    add_setting_args(p, many_gammas=False)
    add_schedule_args(p)
    add_decay_form(p, STYLISED_DECAY_FORMS, "with gd / momentum / adamw: l2 penalty through the optimizer (default: the"
                                            " paper's Eq. 4) or decoupled shrink")
    p.add_argument("--engine", choices=ENGINES, default="reduced",
                   help="reduced equations, full gradient flow, or a discrete optimizer")
    p.add_argument("--law", choices=ESCAPE_LAWS, default="bilinear")
    figure_args(p, "schedule.png")
    p.set_defaults(handler=cmd_schedule)


def cmd_schedule(args):
    s = setting_from_args(args)
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
