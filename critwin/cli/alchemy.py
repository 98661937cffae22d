"""Handlers of `critwin alchemy ...`: the symbolic chemistry, exported and shown."""
from __future__ import annotations

from pathlib import Path

from critwin.errors import ConfigError


def cmd_export(args):
    from critwin.empirical.tasks.alchemy_chemistry import (
        Chemistry,
        complete_chemistries,
        export_text,
    )
    if args.complete == (args.chemistry is not None):
        raise ConfigError("chemistry", args.chemistry, "either --complete (all 1,536) or --chemistry ID, not both")
    chems = complete_chemistries() if args.complete else [Chemistry.from_id(args.chemistry)]
    text = export_text(chems)
    payload = {"chemistries": len(chems), "transitions": sum(len(c.transitions()) for c in chems)}
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(out)
        payload["out"] = str(out)
        return payload, f"wrote {payload['chemistries']} chemistries ({payload['transitions']} transitions) to {out}"
    payload["text"] = text
    return payload, text.rstrip("\n")


def cmd_show(args):
    from critwin.empirical.tasks.alchemy_chemistry import Chemistry
    c = Chemistry.from_id(args.id)
    payload = {"id": c.id, "potion_map": c.potion_map, "stone_map": c.stone_map, "graph": c.graph,
               "rotation": c.rotation, "transitions": [c.transition_text(s, p, e) for s, p, e in c.transitions()]}
    return payload, c.describe() + "\n" + "\n".join(payload["transitions"])


def register(sub):
    p = sub.add_parser("export", help="one-hop transitions in the paper's text format",
                       description="Each chemistry's one-hop transitions, one per line, blocks separated by a blank line.")
    p.add_argument("--complete", action="store_true", help="all 1,536 chemistries with the complete graph")
    p.add_argument("--chemistry", type=int, default=None, help="one chemistry by id (see critwin alchemy show)")
    p.add_argument("--out", default=None, help="file to write (default: print)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_export)
    p = sub.add_parser("show", help="a chemistry readably: its maps, graph and stones")
    p.add_argument("id", type=int, help="chemistry id: ((potion_map * 8 + stone_map) * 109 + graph) * 4 + rotation")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_show)
