"""Handlers of `critwin scan ...`: SCAN generated from its grammar, written in the standard format."""
from __future__ import annotations


def cmd_export(args):
    from critwin.empirical.tasks.scan import export
    counts = export(args.split, args.out)
    text = [f"wrote {args.out}: " + ", ".join(f"{k}.txt {v:,} lines" for k, v in counts.items())]
    return {"out": args.out, "lines": counts}, "\n".join(text)


def register(sub):
    from critwin.empirical.tasks.scan import SPLITS
    p = sub.add_parser("export", help="write a standard split as IN: ... OUT: ... lines",
                       description="Generate SCAN from its grammar and write train.txt / test.txt / all.txt.")
    p.add_argument("--split", choices=SPLITS, default="add_prim_jump")
    p.add_argument("--out", default="critwin-out/scan", help="folder for the files")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_export)
