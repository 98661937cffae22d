"""Command `critwin demo`: the main job, a predicted window verified on quick runs."""
from __future__ import annotations

from critwin.bridge.demo import DEMO_WDS, PAPER_LABEL, demo, render


def cmd_demo(args):
    res = demo(args.steps, args.width, args.wd, args.gamma, args.seeds, args.store, args.out, args.workers,
               quiet=args.json, pack=args.pack, reading=args.reading, probes=args.probes)
    return res, render(res)


def register(p):
    p.add_argument("--steps", type=int, default=6000, help="training length of each run")
    p.add_argument("--width", type=int, default=3000, help="decay window width")
    p.add_argument("--reading", default=PAPER_LABEL,
                   help=f"decay reading FORM/SET: {PAPER_LABEL} (the paper's Eq. 4, default) or a variation such as"
                        " decoupled/matrices")
    p.add_argument("--wd", type=float, default=None,
                   help="decay inside the windows (default: " + ", ".join(f"{k} {v:g}" for k, v in DEMO_WDS.items())
                        + "; the decoupled 4/3 is lr*lambda = 4e-3 per step)")
    p.add_argument("--gamma", type=float, default=0.8)
    p.add_argument("--probes", type=int, default=3,
                   help="no-decay probes (task instances) for Theory II's left edge under an L2 reading; 0: the recipe's")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--pack", type=int, default=None, help="train up to this many runs as one stacked model per worker")
    p.add_argument("--store", default="runs")
    p.add_argument("--out", default="critwin-out")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_demo)
