"""Command `critwin demo`: the main job, a predicted window verified on quick runs."""
from __future__ import annotations

from critwin.bridge.demo import DEMO_STEPS, DEMO_WD, DEMO_WIDTH, demo, render
from critwin.cli.common import add_max_runs


def cmd_demo(args):
    res = demo(args.steps, args.width, args.wd, args.task_seeds, args.seeds, args.store, args.out, args.workers,
               quiet=args.json, pack=args.pack, max_runs=args.max_runs)
    return res, render(res)


def register(p):
    p.add_argument("--steps", type=int, default=DEMO_STEPS, help="training length of each run")
    p.add_argument("--width", type=int, default=DEMO_WIDTH, help="decay window width")
    p.add_argument("--wd", type=float, default=DEMO_WD, help="the L2 penalty inside the windows (the paper's Eq. 4)")
    p.add_argument("--task-seeds", type=int, default=2, help="task instances 0..N-1")
    p.add_argument("--seeds", type=int, default=2, help="init seeds 0..N-1 per task instance")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--pack", type=int, default=None, help="train up to this many runs as one stacked model per worker")
    p.add_argument("--store", default="runs", help="run store (outside the package; reused)")
    add_max_runs(p)
    p.add_argument("--out", default="critwin-out", help="where the figure goes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_demo)
