"""S6 in the paper's form (registered in paper_checks/reports/alchemy_authors/s6_paper_form.md).

The paper freezes each component (the embedding, each layer) from the epoch at which A completes in the unfrozen
baseline of the same seed, then every 10 epochs, and times P(B given A) and P(C given A,B) against that baseline by
the three-in-a-row rule. Per seed three kinds of run train, in order:

1. a probe: the baseline's config without checkpoints, paused once A completes: it gives t_A;
2. the baseline: the same config with a checkpoint at every freeze point t_A + 10 k (k < points), paused once
   both later stages complete (their times can no longer move), else to the end;
3. frozen branches from those checkpoints, one per component and freeze point where a stage the baseline
   completes is still to complete, paused once each such stage is decided: complete, or no longer able to
   complete within 10 epochs of the baseline (`StagesDecided`), which is all the verdict rule reads.

A point at or after the baseline's completion of a stage gives that stage delay 0 by construction (the authors'
rule); a baseline that never completes a stage leaves its delays censored; a frozen run that never completes it
gives a lower bound. The verdict rule (`judge`) is the registered one. The analysis half of this module (freeze
points, delays, windows, the verdict) works on plain timing dicts and is tested on hand-built curves.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from critwin.errors import ConfigError

ANCHOR = "event_a"
PAPER_STAGES = ("p_b_given_a", "p_c_given_ab")
STAGE_NAMES = {"p_b_given_a": "B given A", "p_c_given_ab": "C given A,B"}


@dataclass(frozen=True)
class Protocol:
    """One registered form of the protocol: the Alchemy size, input format, length in epochs, freeze points, seeds."""

    name: str
    size: str
    input_format: str | None
    epochs: int
    points: int
    seeds: int = 3
    every: int = 10          # epochs between freeze points, and the delay a window needs (the paper: 10)
    label: str = ""
    overrides: tuple = ()    # (key, value) pairs over the size's preset (flat config keys)


PROTOCOLS = {
    # registered in s6_paper_form.md: stone tokens at cpu size, 100 epochs, freeze at t_A + 0..70
    "stone_cpu": Protocol("stone_cpu", "cpu", "stone_states", 100, 8,
                          label="variation: stone tokens, cpu size, 100 epochs"),
    # the authors' recipe (their code's init, optimizer and query format) at the paper's 1,000 epochs, freeze at
    # t_A + 0..240 (25 points, as their held-out runs), embedding and 4 layers: a GPU job
    "authors": Protocol("authors", "authors", None, 1000, 25, label="the authors' recipe, 1000 epochs"),
    # a test size, never a result: the quick preset widened to d 32, lr 3e-3 and 128 chemistries a split (the
    # fewest with which held-out A completes, at epoch 5 on seed 0), one evaluation an epoch (64 steps), 9 epochs,
    # 1 seed, freeze at t_A + 0, 2: it runs every part of the training path in well under a minute of one CPU
    "quick": Protocol("quick", "quick", "stone_states", 9, 2, seeds=1, every=2,
                      label="TEST SIZE, not a result: stone tokens, quick size, 9 epochs",
                      overrides=(("d", 32), ("lr", 3e-3), ("chemistries", 128), ("eval_every", 64))),
}


# ---------------------------------------------------------------- analysis (no training, no torch)

def freeze_epochs(t_a: float, protocol: Protocol) -> list[int]:
    """The freeze points of a seed: t_A, t_A + every, ... (`points` of them), those before the protocol's end."""
    if t_a is None or not np.isfinite(t_a):
        return []
    t0 = int(round(float(t_a)))
    return [t0 + protocol.every * k for k in range(protocol.points) if t0 + protocol.every * k < protocol.epochs]


def stage_delay(base: dict, frozen: dict | None, freeze_epoch: float) -> dict:
    """A stage's delay (epochs) at one freeze point from two stage timings (`stage_timing` dicts): `kind` is
    inherited (the baseline completed it at or before the freeze: 0 by construction), baseline censored (no
    delay), missing (the frozen run is not read yet), complete (the difference) or censored (the frozen run had
    not completed it when it stopped: `delay` is a lower bound, the earliest it can still complete (`stage_timing`'s
    bound_epoch) minus the baseline's time)."""
    if base["censored"]:
        return {"kind": "baseline censored", "delay": math.nan, "lower_bound": False,
                "epoch_reached": base["epoch_reached"], "protocol_epochs": base["protocol_epochs"]}
    if base["epoch"] <= freeze_epoch:
        return {"kind": "inherited", "delay": 0.0, "lower_bound": False}
    if frozen is None:
        return {"kind": "missing", "delay": math.nan, "lower_bound": False}
    if frozen["censored"]:      # the earliest the stage can still complete (a trailing run at its level counts)
        bound = frozen.get("bound_epoch", frozen["epoch_reached"])
        return {"kind": "censored", "delay": bound - base["epoch"], "lower_bound": True,
                "epoch_reached": frozen["epoch_reached"], "protocol_epochs": frozen["protocol_epochs"]}
    return {"kind": "complete", "delay": frozen["epoch"] - base["epoch"], "lower_bound": False}


def point_status(d: dict, every: float) -> str:
    """in (delay > every, a lower bound included), closed (decided, <= every), undecided (a lower bound <= every),
    inherited, baseline censored or missing."""
    if d["kind"] in ("inherited", "baseline censored", "missing"):
        return d["kind"]
    if d["delay"] > every:
        return "in"
    return "undecided" if d["lower_bound"] else "closed"


def stage_window(points: list, every: float) -> dict:
    """One (component, stage, seed): `points` are (freeze epoch, stage_delay dict) in freeze order. Status window (a
    point in the window), none (every non-inherited point closed) or inconclusive (baseline censored, a point
    undecided or missing with none in the window, or no non-inherited point); the window's length from the first
    freeze point to its close (the first closed point after which none is in the window again), censored at the
    last point + every where it never closes; the first closed point."""
    pts = sorted(points, key=lambda p: p[0])
    st = [(f, point_status(d, every), d) for f, d in pts]
    if not st:
        return {"status": "inconclusive", "why": "no freeze point", "length": math.nan, "length_censored": False,
                "closes_at": math.nan, "censored": []}
    cens = [d for _, s, d in st if s in ("baseline censored", "undecided")]
    live = [(f, s) for f, s, _ in st if s != "inherited"]
    inside = [f for f, s in live if s == "in"]
    if inside:
        status = "window"
    elif not live:
        status, why = "inconclusive", "the stage completes by the first freeze point"
    elif all(s == "closed" for _, s in live):
        status = "none"
    else:
        status = "inconclusive"
    out = {"status": status, "censored": cens, "closes_at": math.nan, "length": math.nan, "length_censored": False}
    if status == "inconclusive":
        out["why"] = why if not live else ("censored" if cens else "runs missing")
    closed = [f for f, s in live if s == "closed"]
    if status == "window":
        after = [f for f in closed if f > max(inside)]
        t0 = pts[0][0]
        if after:
            out["closes_at"], out["length"] = after[0], after[0] - t0
        elif any(s in ("undecided", "missing") for f, s in live if f > max(inside)):
            out["length"], out["length_censored"] = max(inside) + every - t0, True     # a lower bound
        else:
            later = [f for f, s, _ in st if s == "inherited" and f > max(inside)]
            if later:       # the baseline completes the stage before the next point: the window ends there
                out["closes_at"], out["length"] = later[0], later[0] - t0
            else:           # in the window up to the last freeze point: a lower bound
                out["length"], out["length_censored"] = max(inside) + every - t0, True
    elif status == "none" and closed:
        out["closes_at"], out["length"] = closed[0], 0.0
    return out


def either_stage(statuses) -> str:
    """(component, seed) over the later stages: window if any stage has one, none if all have none."""
    statuses = list(statuses)
    if "window" in statuses:
        return "window"
    return "none" if statuses and all(s == "none" for s in statuses) else "inconclusive"


def over_seeds(statuses, need: int) -> str:
    """A component over seeds: window (none) if at least `need` seeds say so, else inconclusive."""
    statuses = list(statuses)
    if statuses.count("window") >= need:
        return "window"
    if statuses.count("none") >= need:
        return "none"
    return "inconclusive"


def majority(seeds: int) -> int:
    return seeds // 2 + 1


def _cens_epochs(recs) -> list:
    return [d["epoch_reached"] for d in recs if "epoch_reached" in d]


def judge(windows: dict, layers: list, seeds: int, protocol_epochs: int) -> dict:
    """The registered verdict. `windows`: (component, stage, seed) -> stage_window. Returns the per-component
    status, the claim row (each layer has a window for a later stage), the layers-against-embedding row and the
    overall verdict."""
    from critwin.paper_checks.base import censored_text
    comps = sorted({k[0] for k in windows}, key=lambda c: (c != "embedding", c))
    stages = sorted({k[1] for k in windows})
    need = majority(seeds)
    per_seed = {(c, s): either_stage(windows[(c, st, s)]["status"] for st in stages if (c, st, s) in windows)
                for c in comps for s in range(seeds)}
    per_comp = {c: over_seeds([per_seed[(c, s)] for s in range(seeds) if (c, s) in per_seed], need) for c in comps}
    cens = [d for k, w in windows.items() if k[0] in layers for d in w["censored"]]
    lay = [per_comp[c] for c in layers]
    decided = [s for s in lay if s != "inconclusive"]
    fraction = sum(s == "window" for s in decided) / len(decided) if decided else math.nan
    if all(s == "window" for s in lay):
        claim = "reproduced"
    elif "none" in lay:
        claim = "not reproduced"
    else:
        ep = _cens_epochs(cens)
        claim = "inconclusive (" + (censored_text(ep, protocol_epochs) if ep else "runs missing") + ")"
    longer = _longer_row(windows, comps, layers, stages, seeds, need, protocol_epochs)
    return {"per_seed": per_seed, "per_component": per_comp, "claim": claim,
            "layers_with_window": f"{sum(s == 'window' for s in lay)} of {len(lay)}", "fraction_decided": fraction,
            "longer": longer}


def _at_least(layer: dict, emb: dict) -> str:
    """yes / no / undecided: is a layer's window on a seed at least the embedding's (both have one)?"""
    a, b = layer["length"], emb["length"]
    if not (np.isfinite(a) and np.isfinite(b)):
        return "undecided"
    if a >= b and not emb["length_censored"]:       # the layer's length (or its lower bound) reaches the embedding's
        return "yes"
    if a < b and not layer["length_censored"]:      # the embedding's (or its bound) is past the layer's decided one
        return "no"
    return "undecided"


def _longer_row(windows, comps, layers, stages, seeds, need, protocol_epochs) -> dict:
    """The second registered row: for the stages where a layer and the embedding both have a window on at least
    `need` seeds, is the layer's at least the embedding's on at least `need` seeds."""
    from critwin.paper_checks.base import censored_text
    if "embedding" not in comps:
        return {"verdict": "inconclusive (no embedding runs)", "per_layer": {}}
    per_layer, cens = {}, []
    for c in layers:
        res = []
        for st in stages:
            both = [s for s in range(seeds) if windows.get((c, st, s), {}).get("status") == "window"
                    and windows.get(("embedding", st, s), {}).get("status") == "window"]
            if len(both) < need:
                continue
            cmp = [_at_least(windows[(c, st, s)], windows[("embedding", st, s)]) for s in both]
            cens += [d for s in both for d in windows[(c, st, s)]["censored"] + windows[("embedding", st, s)]["censored"]]
            res.append("yes" if cmp.count("yes") >= need else "no" if cmp.count("no") >= need else "undecided")
        per_layer[c] = res
    flat = [r for v in per_layer.values() for r in v]
    if not flat:
        v = "inconclusive (no stage where a layer and the embedding both have a window on a majority of seeds)"
    elif "no" in flat:
        v = "not reproduced"
    elif all(r == "yes" for r in flat):
        v = "reproduced"
    else:
        ep = _cens_epochs(cens)
        v = "inconclusive (" + (censored_text(ep, protocol_epochs) + "; " if ep else "") + \
            "window lengths censored at the last freeze point)"
    return {"verdict": v, "per_layer": per_layer}


# ---------------------------------------------------------------- the runs

def components(flat: dict) -> list[str]:
    return ["embedding"] + [f"layer{i}" for i in range(flat.get("layers", 2))]


def base_flat(protocol: Protocol, device: str = "cpu") -> dict:
    from critwin.empirical.presets import alchemy_flat
    flat = alchemy_flat(protocol.size, "withheld", None, protocol.epochs, freeze_optimizer="rebuild",
                        **({"input_format": protocol.input_format} if protocol.input_format else {}),
                        **dict(protocol.overrides))
    return {**flat, **({"device": device} if device != "cpu" else {})}


def steps_per_epoch(flat: dict) -> int:
    from critwin.empirical.presets import steps_per_epoch as spe
    return spe(flat)


def probe_config(flat: dict, seed: int):
    from critwin.empirical.sweep import config_from_flat
    return config_from_flat({**flat, "seed": seed})


def baseline_config(flat: dict, seed: int, freeze_eps: list):
    from critwin.empirical.sweep import config_from_flat
    spe = steps_per_epoch(flat)
    return config_from_flat({**flat, "seed": seed, "checkpoints": [int(round(f * spe)) for f in freeze_eps]})


def branch_config(baseline, component: str, freeze_epoch: float, spe: int):
    from critwin.bridge.plasticity import frozen_configs
    step = int(round(freeze_epoch * spe))
    return frozen_configs({baseline.seed: baseline}, component, [step], freeze_optimizer="rebuild")[(step, baseline.seed)]


def read_timings(store, cfg, spe: float, protocol_epochs: int, metrics=(ANCHOR,) + PAPER_STAGES) -> dict | None:
    """The run's held-out stage timings as far as it got (None: nothing stored), with `status` and `step`."""
    from critwin.empirical.metrics.stages import stage_timing
    got = store.so_far(cfg.run_id())
    if got is None:
        return None
    m, step, _, status = got
    m = m[m.split == "test"]
    out = {"status": status, "step": step}
    for met in metrics:
        cur = m[m.metric == met].sort_values("step")
        if len(cur) < 2:
            out[met] = None
            continue
        out[met] = stage_timing(cur.step.to_numpy(), cur.value.fillna(0.0).to_numpy(), met, spe, protocol_epochs,
                                step)
    return out


def settled(t: dict | None, deadlines: dict | None = None) -> bool:
    """No more training can change what a run reads: stored complete (or failed, diverged), or paused with both
    later stages complete, or (a frozen branch, `deadlines` from `branch_deadlines`) with each stage decided:
    complete, or unable to complete by its deadline (the rule `StagesDecided` pauses it by)."""
    if t is None:
        return False
    if t["status"] in ("complete", "failed", "diverged"):
        return True
    if t["status"] != "paused":
        return False
    if deadlines is None:
        return all(t.get(m) is not None and not t[m]["censored"] for m in PAPER_STAGES)
    from critwin.empirical.metrics.stages import stage_decided
    return all(d is None or (t.get(m) is not None and stage_decided(t[m], d)) for m, d in deadlines.items())


def branch_deadlines(bt: dict, every: int, spe: int) -> dict:
    """Per later stage the step by which a frozen branch of this seed must complete it for its delay to be at
    most `every` epochs (the verdict's "closed"): the baseline's completion step + every epochs; None where the
    baseline does not complete it (its delays are censored whatever a branch does)."""
    return {m: (None if bt.get(m) is None or bt[m]["censored"] else bt[m]["step"] + every * spe)
            for m in PAPER_STAGES}


def plan(protocol: Protocol, store, seeds: int | None = None, device: str = "cpu") -> dict:
    """What the protocol trains, as far as the store tells: per seed the probe, t_A (from the probe, None until it
    completes A), the freeze points, the baseline, its stage timings, and the branches needed."""
    flat = base_flat(protocol, device)
    spe = steps_per_epoch(flat)
    comps = components(flat)
    n = seeds or protocol.seeds
    out = {"flat": flat, "spe": spe, "components": comps, "seeds": n, "per_seed": {}}
    for s in range(n):
        probe = probe_config(flat, s)
        pt = read_timings(store, probe, spe, protocol.epochs, (ANCHOR,))
        t_a = pt[ANCHOR]["epoch"] if pt and pt[ANCHOR] and not pt[ANCHOR]["censored"] else None
        row = {"probe": probe, "t_a": t_a, "freeze_epochs": freeze_epochs(t_a, protocol) if t_a else [],
               "baseline": None, "base_timings": None, "branches": {}, "deadlines": None}
        if t_a is not None:
            base = baseline_config(flat, s, row["freeze_epochs"])
            row["baseline"], row["base_timings"] = base, read_timings(store, base, spe, protocol.epochs)
            bt = row["base_timings"]
            done = settled(bt)
            row["deadlines"] = branch_deadlines(bt, protocol.every, spe) if done else None
            for f in row["freeze_epochs"]:
                # a branch is needed where a stage the baseline completes is still to complete at f (or the
                # baseline is not settled yet); a stage the baseline never completes has no delay to time
                need = not done or any(d is not None and bt[m]["epoch"] > f for m, d in row["deadlines"].items())
                if need:
                    for c in comps:
                        row["branches"][(c, f)] = branch_config(base, c, f, spe)
        out["per_seed"][s] = row
    return out


def grid_size(protocol: Protocol, seeds: int | None = None, device: str = "cpu") -> tuple[int, str]:
    """(the most runs the protocol can train: per seed the probe, the baseline and every branch, where the
    count comes from), counted before the plan reads the store."""
    n, comps = seeds or protocol.seeds, len(components(base_flat(protocol, device)))
    return (n * (2 + comps * protocol.points),
            f"{n:,} seeds x (probe + baseline + {comps} components x {protocol.points} freeze points)")


def count_runs(protocol: Protocol, p: dict) -> dict:
    """Runs of the plan: probes, baselines, branches known now, and the most branches the plan can have."""
    n = p["seeds"]
    return {"probes": n, "baselines": n, "branches_planned": sum(len(r["branches"]) for r in p["per_seed"].values()),
            "branches_at_most": n * len(p["components"]) * protocol.points,
            "seeds_waiting_for_probe": [s for s, r in p["per_seed"].items() if r["t_a"] is None]}


def worst_case_steps(protocol: Protocol, p: dict, t_a_guess: float) -> int:
    """Training steps if every baseline trains to the end and every branch too (a bound: a branch stops at its
    deadlines, `planned_steps`), t_A as guessed where not known."""
    spe, total = p["spe"], 0
    for r in p["per_seed"].values():
        t_a = r["t_a"] if r["t_a"] is not None else t_a_guess
        total += int((t_a + 2) * spe) + protocol.epochs * spe
        total += sum((protocol.epochs - f) * spe for f in freeze_epochs(t_a, protocol)) * len(p["components"])
    return int(total)


def planned_steps(protocol: Protocol, p: dict) -> int | None:
    """The most training steps the planned branches can take (None while a baseline is not settled): each stops by
    2 evaluations past its latest deadline (a run at the level that starts by then completes or breaks within
    2 more; the 3-in-a-row rule), or at the protocol's end."""
    spe, total = p["spe"], 0
    for r in p["per_seed"].values():
        if r["t_a"] is None or r.get("deadlines") is None:
            return None
        for (_, f), _cfg in r["branches"].items():
            stop = max(d for d in r["deadlines"].values() if d is not None) / spe + 2
            total += int((min(protocol.epochs, stop) - f) * spe)
    return total


def dry_run(protocol: Protocol, store, seeds: int | None = None, device: str = "cpu", t_a_guess: float = 1.0) -> str:
    """The runs the command would train, with what the store already has."""
    p = plan(protocol, store, seeds, device)
    lines = [f"S6 in the paper's form, {protocol.label}: {p['seeds']} seeds, components "
             f"{', '.join(p['components'])}, freeze points t_A + {protocol.every} k (k < {protocol.points}),"
             f" {p['spe']} steps an epoch"]
    for s, r in p["per_seed"].items():
        st = store.status(r["probe"].run_id()) or "to train"
        lines.append(f"seed {s}: probe {r['probe'].run_id()} ({st}; paused once A completes)")
        if r["t_a"] is None:
            lines.append(f"  t_A unknown until the probe completes A: then a baseline with checkpoints at t_A + {protocol.every} k"
                         f" and up to {len(p['components']) * protocol.points} branches")
            continue
        b = r["baseline"]
        lines.append(f"  t_A = epoch {r['t_a']:g}; freeze epochs {r['freeze_epochs']}")
        lines.append(f"  baseline {b.run_id()} ({store.status(b.run_id()) or 'to train'}; {protocol.epochs} epochs)")
        for (c, f), cfg in r["branches"].items():
            lines.append(f"  branch {cfg.run_id()}: {c} frozen from epoch {f} ({store.status(cfg.run_id()) or 'to train'})")
    cr = count_runs(protocol, p)
    known = planned_steps(protocol, p)
    if known is not None:
        lines.append(f"planned branches: at most {known:,} training steps (each to its stages' deadlines)")
    lines.append(f"runs: {cr['probes']} probes, {cr['baselines']} baselines, {cr['branches_planned']} branches planned"
                 f" now (at most {cr['branches_at_most']}); at most {worst_case_steps(protocol, p, t_a_guess):,}"
                 f" training steps if no frozen run completes its stages (t_A = {t_a_guess:g} where not yet known)")
    return "\n".join(lines)


def train(protocol: Protocol, store, executor=None, progress: bool = True, seeds: int | None = None,
          device: str = "cpu") -> None:
    """Probes, then baselines, then the branches (latest freeze first), each phase resumable: stored runs are
    skipped, paused runs already where their pause leaves them are not trained again, killed runs continue."""
    from critwin.empirical.metrics.stages import StageReached
    from critwin.empirical.sweep import Pause, run_sweep
    p = plan(protocol, store, seeds, device)
    probes = [r["probe"] for r in p["per_seed"].values()]
    run_sweep(probes, store, executor, progress=progress, pack=1, pause=Pause(when=StageReached(ANCHOR)))
    p = plan(protocol, store, seeds, device)
    from critwin.empirical.metrics.stages import StagesDecided, StagesReached
    run_sweep([r["baseline"] for r in p["per_seed"].values() if r["baseline"] is not None], store, executor,
              progress=progress, pack=1, pause=Pause(when=StagesReached(PAPER_STAGES)))
    p = plan(protocol, store, seeds, device)
    for r in p["per_seed"].values():      # one sweep a seed: its branches share the baseline's deadlines
        branches = sorted(r["branches"].values(), key=lambda c: -c.branch_point()[1])
        if branches:
            run_sweep(branches, store, executor, progress=progress, pack=1,
                      pause=Pause(when=StagesDecided(r["deadlines"])))


def measure(protocol: Protocol, store, seeds: int | None = None, device: str = "cpu") -> dict:
    """Delays, windows and the registered verdict from what the store holds."""
    p = plan(protocol, store, seeds, device)
    spe, comps, n = p["spe"], p["components"], p["seeds"]
    windows, delays, unsettled, mismatch = {}, [], 0, []
    planned = 0
    for s, r in p["per_seed"].items():
        planned += 2
        if r["t_a"] is None or not settled(r["base_timings"]):
            unsettled += 2 if r["t_a"] is None else 1      # the probe and the baseline, or the baseline
            continue
        bt = r["base_timings"]
        if bt[ANCHOR] is None or bt[ANCHOR]["censored"] or abs(bt[ANCHOR]["epoch"] - r["t_a"]) > 1e-9:
            mismatch.append(s)
        for c in comps:
            for st in PAPER_STAGES:
                pts = []
                for f in r["freeze_epochs"]:
                    cfg = r["branches"].get((c, f))
                    ft = read_timings(store, cfg, spe, protocol.epochs) if cfg is not None else None
                    d = stage_delay(bt[st], ft[st] if ft and ft.get(st) else None, f)
                    if cfg is not None and not settled(ft, r["deadlines"]) and \
                            d["kind"] not in ("inherited", "baseline censored"):
                        d = {**d, "kind": "missing", "delay": math.nan, "lower_bound": False}
                    pts.append((f, d))
                    delays.append({"component": c, "stage": st, "seed": s, "freeze_epoch": f,
                                   "baseline_epoch": bt[st]["epoch"], **{k: d[k] for k in ("kind", "delay")},
                                   "lower_bound": d["lower_bound"], "status": point_status(d, protocol.every)})
                windows[(c, st, s)] = stage_window(pts, protocol.every)
        for (c, f), cfg in r["branches"].items():
            planned += 1
            unsettled += not settled(read_timings(store, cfg, spe, protocol.epochs), r["deadlines"])
    return {"plan": p, "windows": windows, "delays": delays, "unsettled": unsettled, "planned": planned,
            "anchor_mismatch": mismatch}


def curves(protocol: Protocol, store, seeds: int | None = None, device: str = "cpu") -> dict:
    """The held-out curves of the later stages, in epochs, for a figure: per seed the baseline's completion epochs
    and curves, and each stored branch's curve after its freeze point (the part it trained itself)."""
    p = plan(protocol, store, seeds, device)
    spe, out = p["spe"], {}
    def read(cfg, after=-1.0):         # None: nothing stored
        got = store.so_far(cfg.run_id())
        if got is None:
            return None
        m = got[0]
        m = m[(m.split == "test") & (m.step > after * spe)].sort_values("step")
        return {st: (m[m.metric == st].step.to_numpy() / spe, m[m.metric == st].value.to_numpy())
                for st in PAPER_STAGES}
    for s, r in p["per_seed"].items():
        base = read(r["baseline"]) if r["baseline"] is not None else None
        if base is None:
            continue
        bt = r["base_timings"]
        row = {"baseline": base, "branches": {},
               "completes": {st: (None if bt[st] is None or bt[st]["censored"] else bt[st]["epoch"]) for st in PAPER_STAGES}}
        for (c, f), cfg in r["branches"].items():
            got = read(cfg, f)
            if got is not None:
                row["branches"][(c, f)] = got
        out[s] = row
    return out


def result(protocol: Protocol, store, seeds: int | None = None, device: str = "cpu") -> dict:
    """The check's result in the shape `write_result` and the check table read."""
    got = measure(protocol, store, seeds, device)
    p, windows = got["plan"], got["windows"]
    comps, n = p["components"], p["seeds"]
    layers = [c for c in comps if c != "embedding"]
    rows = []
    if got["unsettled"] or len(windows) < len(comps) * len(PAPER_STAGES) * n:
        verdict = f"incomplete: {got['unsettled']} of at least {got['planned']} planned runs still to train"
        j = None
    else:
        j = judge(windows, layers, n, protocol.epochs)
        verdict = j["claim"]
        for c in comps:
            rows.append({"value": f"{c}: window for a later stage (seeds: "
                                  + ", ".join(j["per_seed"][(c, s)] for s in range(n)) + ")",
                         "paper": None, "measured": float(j["per_component"][c] == "window"),
                         "status": j["per_component"][c]})
        rows.append({"value": "Transformer layers with a plasticity window for B given A or C given A,B (of decided)",
                     "paper": 1.0, "measured": j["fraction_decided"], "row_verdict": j["claim"],
                     "layers": j["layers_with_window"]})
        rows.append({"value": "each layer's window at least the embedding's (where both have one)", "paper": 1.0,
                     "measured": float(j["longer"]["verdict"] == "reproduced"), "row_verdict": j["longer"]["verdict"]})
        for (c, st, s), w in sorted(windows.items(), key=lambda kv: (kv[0][2], kv[0][1], comps.index(kv[0][0]))):
            rows.append({"value": f"seed {s} {STAGE_NAMES[st]} {c}: {w['status']}", "paper": None,
                         "measured": w["length"], "length_censored": w["length_censored"],
                         "closes_at": w["closes_at"], "unit": "window length (epochs)"})
        verdict = f"{verdict} ({j['layers_with_window']} layers with a window; layers against the embedding:" \
                  f" {j['longer']['verdict']})"
    if got["anchor_mismatch"]:
        verdict += f" (A's completion in the baseline differs from its probe's on seeds {got['anchor_mismatch']})"
    verdict += f" ({protocol.label})"
    return {"id": "S6_paper_form", "claim": "each layer has a plasticity window in which freezing it delays a later"
                                            " stage (freezing from A's completion, every 10 epochs)",
            "size": protocol.size, "protocol": protocol.name, "seeds": n, "protocol_seeds": protocol.seeds,
            "protocol_epochs": protocol.epochs, "freeze_points": protocol.points,
            "protocol_freeze_points": protocol.points, "rows": rows, "verdict": verdict, "delays": got["delays"],
            "t_a": {s: r["t_a"] for s, r in p["per_seed"].items()},
            "freeze_epochs": {s: r["freeze_epochs"] for s, r in p["per_seed"].items()},
            **({"input_format": protocol.input_format} if protocol.input_format else {})}


def protocol_named(name: str) -> Protocol:
    if name not in PROTOCOLS:
        raise ConfigError("protocol", name, "one of " + ", ".join(PROTOCOLS))
    return PROTOCOLS[name]
