"""The main job: predict the L2 window's left edge from no-decay probes, then verify it on quick trained runs.

The setting is the one where the paper's Eq. 4 window is unmistakable at small cost: SGD with heavy-ball momentum
and an L2 penalty on the non-embedding weights, gamma 0.5 (a penalty from step 0 leaves OOD accuracy near 0.08,
one from step 400 near 0.97 at paper size: paper_checks/reports/theory2). The prediction is Theory III's per-run
method (bridge.panel, held_max) read on the demo's own probes, shown beside the registered constant baseline.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from critwin import figures
from critwin.bridge.panel import at_onset, method_curve
from critwin.bridge.skill import COMPOSES, crossing
from critwin.table import format_table
from critwin.empirical import RunStore, load_summaries
from critwin.empirical.sweep import LocalExecutor, config_from_flat, run_sweep
from critwin.empirical.sweep.spec import check_runs
from critwin.errors import ConfigError

DEMO = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "gamma": 0.5, "decay_form": "l2",
        "decay_set": "non_embedding"}
DEMO_WD = 4e-3
DEMO_STEPS = 4200    # the late window's runs sit at their final OOD from step 3,600 (a 6,000-step demo's curves)
DEMO_WIDTH = 3000
LATE = 400            # the window after both edges: the committed measurements compose there (0.968)
PROBE_STEPS = 600     # SGD's held share crosses 1/2 by step ~250 at gamma 0.5 (theory2/held_curves.json)
THEORY3 = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "theory3"


def _say(msg: str, quiet: bool):
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def predicted_edge(wd: float, task_seeds: int, seeds: int) -> tuple[float | None, dict]:
    """Theory III's held_max method on the demo's own no-decay probes: per run P(composes at onset t), and
    the cell's edge where the mean P crosses 1/2. Returns (edge, {(task_seed, seed): (steps, P)})."""
    from critwin.bridge.survival import held_curves, probe_config
    per_run = {}
    for ts in range(task_seeds):
        for s in range(seeds):
            curves = held_curves(probe_config("sgd", DEMO["gamma"], ts, s, PROBE_STEPS), [wd])
            per_run[(ts, s)] = method_curve("held_max", curves, wd)
    steps = next(iter(per_run.values()))[0]
    return crossing(steps, np.mean([p for _, p in per_run.values()], axis=0)), per_run


def registered_scores(folder: Path = THEORY3) -> dict:
    """The panel's registered constant edge and, once cells are measured, the methods' skill from
    `critwin bridge score` (an empty dict where this install has no panel)."""
    from critwin.bridge.panel import load_panel, score_panel
    if not (folder / "registration.json").is_file():
        return {}
    reg, predicted, measured = load_panel(folder / "registration.json")
    constant = reg["cells"][0]["predicted"]["constant"]
    if not len(measured):
        return {"constant_edge": constant, "measured_cells": 0, "cells": len(reg["cells"])}
    out = score_panel(reg, predicted, measured)
    skill = out["skill"]
    rows = skill[(skill["method"] == "held_max")].to_dict(orient="records") if len(skill) else []
    return {"constant_edge": constant, "measured_cells": out["measured_cells"], "cells": len(reg["cells"]),
            "measured_runs": out["measured_runs"], "skill": rows}


def demo(steps: int = DEMO_STEPS, width: int = DEMO_WIDTH, wd: float = DEMO_WD, task_seeds: int = 2, seeds: int = 2,
         store="runs", out="critwin-out", workers: int | None = 2, quiet: bool = False,
         pack: int | None = None, max_runs: int | None = None) -> dict:
    """Predict the left edge, then train no decay and windows from step 0, from the predicted edge and from
    step LATE over task instances x seeds, and judge by the rule fixed here: a window is found when the late
    window's mean OOD accuracy beats the better of no decay and step 0 by more than 3 standard errors. More than
    `max_runs` runs (probes included; None: any number) is refused before the first probe."""
    for name, v, lo in (("steps", steps, 2), ("width", width, 1), ("task_seeds", task_seeds, 1), ("seeds", seeds, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ConfigError(name, v, f"a whole number >= {lo}")
    if not (isinstance(wd, (int, float)) and np.isfinite(wd) and wd > 0):
        raise ConfigError("wd", wd, "a finite penalty > 0")
    if width + LATE >= steps:
        raise ConfigError("width", width, f"a window that ends before the last step: width + {LATE} < steps ({steps})")
    check_runs(5 * task_seeds * seeds, max_runs, f"(1 probe + at most 4 schedules) x {task_seeds:,} task instances"
                                                 f" x {seeds:,} seeds")
    t0 = time.perf_counter()
    n = task_seeds * seeds
    _say(f"[1/3] predicting the left edge: {n} no-decay probes of {PROBE_STEPS} steps (SGD with momentum, "
         f"gamma {DEMO['gamma']:g}, L2 {wd:g})", quiet)
    edge, per_run = predicted_edge(wd, task_seeds, seeds)
    reg = registered_scores()
    const = reg.get("constant_edge")
    onsets = sorted({0, LATE} | ({int(np.ceil(edge))} if edge is not None and edge + width < steps else set()))
    plans = [("no decay", None)] + [(f"[{o}, {o + width})", o) for o in onsets]
    base = {**DEMO, "steps": steps, "eval_every": max(1, steps // 20)}
    cfgs = {(name, ts, s): config_from_flat({**base, "task_seed": ts, "seed": s} if o is None else
                                           {**base, "task_seed": ts, "seed": s, "wd": wd, "wd_window_start": o,
                                            "wd_width": width})
            for name, o in plans for ts in range(task_seeds) for s in range(seeds)}
    _say(f"[2/3] training {len(cfgs)} runs of {steps} steps ({len(plans)} schedules x {task_seeds} task instances"
         f" x {seeds} seeds); stored runs are reused", quiet)
    run_sweep(list(cfgs.values()), RunStore(store), LocalExecutor(workers, pack), progress=not quiet)
    _say("[3/3] comparing predicted and observed", quiet)
    summ = load_summaries(store, on_corrupt="skip").set_index("run_id")
    rows, outcomes = [], {}
    for name, o in plans:
        keys = [(ts, s) for ts in range(task_seeds) for s in range(seeds)]
        ood = np.array([summ.loc[cfgs[(name, ts, s)].run_id(), "final_ood_acc"] for ts, s in keys], float)
        outcomes[name] = ood
        p = None if o is None else float(np.mean([at_onset(*per_run[k], o) for k in keys]))
        rows.append({"schedule": name, "ood_acc": float(ood.mean()), "ood_sd": float(ood.std(ddof=1)) if n > 1 else 0.0,
                     "composes": f"{int((ood >= COMPOSES).sum())}/{n}",
                     "held_max_P": "-" if p is None else round(p, 2),
                     "constant": "-" if o is None or const is None else ("composes" if o >= const else "no")})
    late = outcomes[f"[{LATE}, {LATE + width})"]
    worse = max(("no decay", f"[0, {width})"), key=lambda k: outcomes[k].mean())
    diff = float(late.mean() - outcomes[worse].mean())
    se = float(np.sqrt(late.var(ddof=1) / n + outcomes[worse].var(ddof=1) / n)) if n > 1 else float("nan")
    found = bool(n > 1 and diff > 3 * se)
    fig = figures.plot_demo(plans, outcomes, edge, const, Path(out) / "demo.png",
                            title=f"SGD with momentum, L2 {wd:g} on the non-embedding weights, gamma {DEMO['gamma']:g},"
                                  f" {steps:,} steps, windows of {width:,}")
    return {"setting": {**DEMO, "wd": wd, "steps": steps, "width": width, "task_seeds": task_seeds, "seeds": seeds},
            "predicted_edge": edge, "constant_edge": const, "registered": reg, "rows": rows,
            "late_minus_early": diff, "se": se, "compared_with": worse, "window_found": found,
            "figure": str(fig), "store": str(store), "wall_seconds": time.perf_counter() - t0}


def render(res: dict) -> str:
    s, reg = res["setting"], res["registered"]
    edge = res["predicted_edge"]
    lines = [f"SGD with momentum (lr {s['lr']:g}), gamma {s['gamma']:g}, the paper's Eq. 4 (L2 {s['wd']:g} on the "
             f"non-embedding weights), {s['steps']:,} steps, windows of {s['width']:,}; "
             f"{s['task_seeds']} task instances x {s['seeds']} seeds",
             "predicted left edge (Theory III, held_max on this run's own no-decay probes): "
             + ("no window" if edge is None else f"{edge:,.0f} steps")
             + ("" if res["constant_edge"] is None else
                f"; the trivial baseline (the build cells' mean edge): {res['constant_edge']:,.1f} steps"),
             format_table(res["rows"], ["schedule", "ood_acc", "ood_sd", "composes", "held_max_P", "constant"]),
             f"late window minus {res['compared_with']}: {res['late_minus_early']:+.3f} OOD accuracy = "
             f"{res['late_minus_early'] / res['se']:.1f} standard errors" if res["se"] == res["se"] and res["se"] > 0
             else f"late window minus {res['compared_with']}: {res['late_minus_early']:+.3f}",
             "verdict: " + ("window found (a late window composes, a window from step 0 does not help; > 3 SE)"
                            if res["window_found"] else "no window shown at 3 standard errors")]
    if reg.get("skill"):
        lines.append(f"registered skill of held_max ({reg['measured_cells']} of {reg['cells']} panel cells, "
                     f"{reg['measured_runs']} runs measured; `critwin bridge score paper_checks/reports/theory3/"
                     "registration.json paper_checks/reports/theory3/measured`):")
        lines += [f"  over {r['baseline']}, {r['score']}: {r['skill']:+.3f} (90% {r['lo']:+.3f} to {r['hi']:+.3f}; "
                  f"{r['verdict']})" if r["skill"] == r["skill"] else
                  f"  over {r['baseline']}, {r['score']}: undefined (every measured run has the same outcome)"
                  for r in reg["skill"]]
    elif reg:
        lines.append(f"registered panel: {reg['measured_cells']} of {reg['cells']} cells measured, no skill score yet")
    lines.append(f"figure: {res['figure']}   runs: {res['store']}   ({res['wall_seconds']:.0f} s)")
    return "\n".join(lines)
