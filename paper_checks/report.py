"""`critwin report`: a Markdown report of every check and comparison the store supports."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from critwin import figures
from critwin.bridge.compare import as_frame, compare
from critwin.bridge.fit import fit_columns, fit_store, fit_summary
from critwin.bridge.observed import QUANTITIES
from critwin.table import format_table
from critwin.empirical import RunStore, load_summaries
from critwin.paper_checks import CHECKS
from critwin.paper_checks.base import DEFAULT_READING, scaled_reading_label

from critwin import theory as th


def _md_table(rows: list[dict], cols: list[str]) -> str:
    return "```\n" + format_table(rows, cols) + "\n```"


def _readings_in(summ) -> list[dict]:
    """The decay readings (form, set, head bias) of the store's decayed runs; the default first."""
    found = [{}]
    if len(summ) and "decay_form" in summ:
        dec = summ[summ.wd_windows != "none"]
        for (form, dset, bias), _ in dec.groupby(["decay_form", "decay_set", "head_bias"]):
            r = {"decay_form": form, "decay_set": dset, "head_bias": bool(bias)}
            if r != DEFAULT_READING:
                found.append(r)
    return found


def _seed_counts(chk) -> list:
    """(task instances, seeds): the protocol's first, then fewer (seeds down to 1, one task
    instance) for stores run with --seeds / --task-seeds (labelled as such in the verdict)."""
    full = getattr(chk, "seeds", None)
    if not full:
        return [{}]
    seeds = [full] + list(range(full - 1, 0, -1))
    return [{"task_seeds": t, "seeds": n} for t in (chk.task_seeds, 1) for n in seeds]


def build_report(store, out, threshold: float = 0.5, wd_scales=(1.0,), fit_gamma: float = 0.8,
                 on_corrupt: str = "skip") -> Path:
    """Checks complete in the store (at each decay scale), observed vs predicted windows, and
    the rate laws fitted at `fit_gamma` and tested on the other gammas."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rs = RunStore(store).require()
    ids, problems = rs.scan()
    summ = load_summaries(store, on_corrupt=on_corrupt)
    md = [f"# critwin report: `{store}`", "",
          f"{len(ids)} runs; " + (", ".join(f"{k}: {v}" for k, v in summ["status"].value_counts().items())
                                 if len(summ) else "none") + (f"; {len(problems)} damaged folders" if problems else ""),
          ""]
    md += ["## Paper checks", ""]
    readings = _readings_in(summ)
    for cid, chk in CHECKS.items():
        if "cpu" in getattr(chk, "sizes", ()):          # the Alchemy checks: the largest size fully stored
            size = next((z for z in ("paper", "cpu") if not chk.missing(z, rs)), None)
            if size is None:
                md += [f"- **{cid}**: {chk.missing('cpu', rs)} cpu-size runs missing"
                       f" (`critwin check {cid} --size cpu --store {store}`)", ""]
                continue
            res = chk.run(size, rs, train=False, progress=False)
            md += [f"### {cid}: {res['claim']} ({size} size)", "", _md_table(res["rows"], ["value", "paper", "measured"]),
                   "", f"**Verdict: {res['verdict']}**", ""]
            continue
        variations = [(f, r) for r in readings for f in wd_scales] if hasattr(chk, "configs") else [(1.0, {})]
        present = []
        for f, r in variations:
            complete = [n for n in _seed_counts(chk) if not chk.missing("paper", rs, wd_scale=f, reading=r, **n)]
            if complete:
                present.append((f, r, complete[0]))       # the most seeds stored for this variation
        if not present:
            f = min(wd_scales, key=lambda f: chk.missing("paper", rs, wd_scale=f))
            flag = f" --wd-scale {f!r}" if f != 1.0 else ""
            md += [f"- **{cid}**: {chk.missing('paper', rs, wd_scale=f)} paper-size runs missing"
                   f" (`critwin check {cid} --size paper --store {store}{flag}`)", ""]
        for f, r, n in present:
            res = chk.run("paper", rs, train=False, progress=False, wd_scale=f, reading=r, **n)
            cols = ["value", "paper", "measured"] + (["sd", "n", "instance_share"] if "sd" in res["rows"][0] else [])
            label = scaled_reading_label(r, f)
            md += [f"### {cid}: {res['claim']}" + (f" ({label})" if label != scaled_reading_label(None) else ""), "",
                   _md_table(res["rows"], cols), "",
                   f"**Verdict: {res['verdict']}**" + (f" (tolerance {res['tolerance']})" if "tolerance" in res else ""),
                   ""]
    rows = compare(store, threshold, on_corrupt=on_corrupt) if len(summ) else []
    md += ["", "## Predicted vs observed windows", ""]
    if rows:
        fig = figures.plot_onset_comparison(rows, out / "onsets.png")
        cols = ["gamma", "width", "wd", "seeds", "onsets", "observed_first", "observed_last",
                "recipe_t1", "recipe_t2", "recipe_run_t1", "recipe_run_t2", "reduced_t1", "reduced_t2"]
        md += [_md_table(as_frame(rows).to_dict(orient="records"), cols), "", f"![onsets]({fig.name})", ""]
    else:
        md += ["No onset sweeps (single-window runs at several onsets) in this store.", ""]
    md += ["## Rate laws fitted at gamma = %g, tested on held-out gammas" % fit_gamma, ""]
    for quantity in QUANTITIES:
        results, _ = fit_store(store, quantity, fit_gamma, threshold=threshold, on_corrupt=on_corrupt) if len(summ) \
            else ([], [])
        if not results:
            md += [f"- {quantity}: no times at the fit gamma and another gamma", ""]
            continue
        fig = figures.plot_law_fits(results, out / f"fit_{quantity}.png", quantity)
        md += [f"### {quantity}", ""]
        for res in results:
            md += [f"{' / '.join(res['group'])}", "", _md_table(res["rows"], fit_columns(res)), "", fit_summary(res), ""]
        md += [f"![{quantity}]({fig.name})", ""]
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


