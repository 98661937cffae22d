"""Command `critwin demo`: the main job, a predicted window verified on quick runs."""
from __future__ import annotations

from critwin.bridge.demo import DEMO_WD, demo, render


def cmd_demo(args):
    res = demo(args.steps, args.width, args.wd, args.gamma, args.seeds, args.store, args.out, args.workers,
               quiet=args.json, pack=args.pack)
    return res, render(res)


def register(p):
    p.add_argument("--steps", type=int, default=4000, help="training length of each run")
    p.add_argument("--width", type=int, default=1000, help="decay window width")
    p.add_argument("--wd", type=float, default=DEMO_WD,
                   help="decay inside the windows (default 4/3: lr*lambda = 4e-3 per step)")
    p.add_argument("--gamma", type=float, default=0.8)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--pack", type=int, default=None, help="train up to this many runs as one stacked model per worker")
    p.add_argument("--store", default="runs")
    p.add_argument("--out", default="critwin-out")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_demo)
