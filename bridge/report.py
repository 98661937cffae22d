"""`critwin report`: a Markdown report of every check and comparison the store supports."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import theory as th
from ..empirical import RunStore, load_summaries
from ..paper_checks import CHECKS
from . import figures
from .compare import as_frame, compare
from .table import format_table


def _md_table(rows: list[dict], cols: list[str]) -> str:
    return "```\n" + format_table(rows, cols) + "\n```"


def build_report(store, out, threshold: float = 0.5) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rs = RunStore(store)
    ids, problems = rs.scan()
    summ = load_summaries(store, on_corrupt="skip")
    md = [f"# critwin report: `{store}`", "",
          f"{len(ids)} runs; " + (", ".join(f"{k}: {v}" for k, v in summ["status"].value_counts().items())
                                 if len(summ) else "none") + (f"; {len(problems)} damaged folders" if problems else ""),
          ""]
    md += ["## Paper checks", ""]
    for cid, chk in CHECKS.items():
        if chk.missing("paper", rs):
            md += [f"- **{cid}**: {chk.missing('paper', rs)} paper-size runs missing"
                   f" (`critwin check {cid} --size paper --store {store}`)"]
            continue
        res = chk.run("paper", rs, train=False, progress=False)
        cols = ["value", "paper", "measured"] + (["sd", "n"] if "sd" in res["rows"][0] else [])
        md += [f"### {cid}: {res['claim']}", "", _md_table(res["rows"], cols), "",
               f"**Verdict: {res['verdict']}**" + (f" (tolerance {res['tolerance']})" if "tolerance" in res else ""), ""]
    rows = compare(store, threshold) if len(summ) else []
    md += ["", "## Predicted vs observed windows", ""]
    if rows:
        fig = figures.plot_onset_comparison(rows, out / "onsets.png")
        cols = ["gamma", "width", "wd", "seeds", "onsets", "observed_first", "observed_last",
                "recipe_t1", "recipe_t2", "reduced_t1", "reduced_t2"]
        md += [_md_table(as_frame(rows).to_dict(orient="records"), cols), "", f"![onsets]({fig.name})", ""]
    else:
        md += ["No onset sweeps (single-window runs at several onsets) in this store.", ""]
    s = th.StylisedSetting()
    grid = np.geomspace(0.2, 2.0, 50)
    w_rec, w_red = th.windows.recipe_window(s, grid), th.windows.reduced_window(s, grid)
    fig = figures.plot_windows({"recipe": (grid, w_rec["t1_steps"], w_rec["t2_steps"]),
                                "reduced": (grid, w_red["t1_steps"], w_red["t2_steps"])}, [],
                               out / "theory_windows.png")
    md += ["## Theory", "", f"![theory windows]({fig.name})", ""]
    path = out / "report.md"
    path.write_text("\n".join(md))
    return path


def cmd_report(args):
    path = build_report(args.store, args.out, args.threshold)
    return {"report": str(path)}, f"report: {path}"


def register(p):
    p.add_argument("--store", default="runs")
    p.add_argument("--out", default="report")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_report)
