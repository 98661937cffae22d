"""The Alchemy checks S1-S6 (claims.py): stage order, the reward shortcut, hop-count
(in)variance, hyper-parameter sensitivity, plasticity windows. Each trains its conditions at a named size (quick, cpu,
paper; empirical/presets.py), reads the held-out event curves, and judges rows with the same
verdict rule as every other check. Stage times follow the paper's rule (0.95 for A, 0.90
otherwise, 3 consecutive evaluations). A stage not reached by the end of a run is censored at the
epoch the run reached, not absent: each timing carries its censored flag, the epoch reached and the
protocol's length (PAPER_EPOCHS), and a row that needs a censored stage is judged neither way but reads
"inconclusive (censored at epoch E of the protocol's 1000 (P%))" (base.verdict). In ranks a censored time
still counts as the end of training (a bound), and such a rank row is censored too. At cpu size only
orders, ratios and ranks are judged; the paper's epochs are judged at paper size only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from critwin.empirical import RunStore
from critwin.empirical.presets import PAPER_EPOCHS, alchemy_flat
from critwin.empirical.sweep import config_from_flat, run_sweep
from critwin.empirical.tasks.alchemy import INPUT_FORMATS
from critwin.paper_checks.base import DEFAULT_READING, censored_text, mean_sd, on_device, row_verdict, verdict

from critwin.errors import ConfigError

STAGE_SIZES = ("quick", "cpu", "paper", "authors")
AUTHORS_EPOCHS, CHECKPOINT_EPOCHS = 150, 10    # the authors recipe on a CPU: 150 epochs, a checkpoint every 10
INPUT_LABELS = {"stone_states": "variation: stone tokens"}
EVENT_CURVES = ("event_a", "event_b", "event_c", "p_b_given_a", "p_c_given_ab")


def stage_times(curves) -> dict:
    """Completion step per curve (nan: never), curves a frame indexed by step, one column per metric."""
    from critwin.empirical.metrics.stages import stage_time
    return {m: stage_time(curves.index, curves[m].fillna(0.0), m) for m in EVENT_CURVES if m in curves}


def steps_per_epoch_of(cfg) -> float:
    """Steps a pass over the run's own task's training set."""
    return 1.0 / _epochs(cfg, 1.0)


def reached_step(store, cfg) -> int:
    """The step a run reached: where it was read (a run in training, read by InProgressView), else its length."""
    got = getattr(store, "read", {}).get(cfg.run_id())
    return int(got[0]) if got else int(cfg.steps)


def timings(store, curves, cfg) -> dict:
    """Per event curve its stage timing with censoring (empirical.metrics.stages.stage_timing): completion step
    and epoch, or censored at the epoch the run reached, of the protocol's PAPER_EPOCHS."""
    from critwin.empirical.metrics.stages import stage_timing
    spe, end = steps_per_epoch_of(cfg), reached_step(store, cfg)
    return {m: stage_timing(curves.index, curves[m].fillna(0.0), m, spe, PAPER_EPOCHS, end)
            for m in EVENT_CURVES if m in curves}


def censoring(tms) -> dict | None:
    """What a row needs that is censored: None when every timing in `tms` completed; else the censored runs,
    their stages, the epochs they reached, the protocol's length and the text for the verdict."""
    cens = [t for t in tms if t["censored"]]
    if not cens:
        return None
    ep = [t["epoch_reached"] for t in cens]
    return {"runs": len(cens), "of": len(tms), "stages": sorted({t["metric"] for t in cens}), "epochs": ep,
            "protocol_epochs": cens[0]["protocol_epochs"], "text": censored_text(ep, cens[0]["protocol_epochs"])}


def split_curves(store: RunStore, cfg, split: str = "test"):
    """A run's curves on one split (step x metric), or None when the run is not stored complete."""
    run = store.complete(cfg.run_id())
    if run is None:
        return None
    m = run.metrics
    return m[m.split == split].pivot_table(index="step", columns="metric", values="value").sort_index()


class InProgressView:
    """A store as the stage checks read it, in which a run paused, still training or killed midway reads as its
    curves so far (RunStore.so_far); `read` records each such run's (step, of steps) for the verdict's label."""

    def __init__(self, store: RunStore):
        self.store, self.read = store, {}

    def complete(self, run_id: str):
        from critwin.empirical.store import Run
        run = self.store.complete(run_id)
        got = None if run is not None else self.store.so_far(run_id)
        if got is None:
            return run
        metrics, step, steps, status = got
        self.read[run_id] = (step, steps)
        return Run(config={}, metrics=metrics, summary={"status": status}, environment={})


def with_precision(cfgs: dict, precision: str) -> dict:
    """The same configs trained at `precision` ('fp32': unchanged)."""
    from dataclasses import replace
    return cfgs if precision == "fp32" else {k: replace(c, precision=precision) for k, c in cfgs.items()}


def _row(value: str, vals, paper, tolerance=None, unit: str = "", censored: dict | None = None) -> dict:
    r = {"value": value, "paper": paper, **mean_sd(vals), "per_seed": [float(v) for v in vals]}
    if censored:
        r["censored"] = censored
    if tolerance is not None:
        r["tolerance"] = tolerance
    if unit:
        r["unit"] = unit
    return r


def _spearman_with_censoring(hops, times, end) -> float:
    from scipy.stats import spearmanr
    t = np.where(np.isnan(times), end, times)
    return float(spearmanr(hops, t).statistic) if np.ptp(t) > 0 else 0.0


def size_flat(size: str, variant: str, hops: int | None = None, paper_epochs: int = PAPER_EPOCHS,
              **overrides) -> dict:
    """A check's flat config at a size: `paper_epochs` at paper size; at the authors' size 150
    epochs with a checkpoint every 10 (the plasticity check branches from them); else the size's steps."""
    epochs = paper_epochs if size == "paper" else AUTHORS_EPOCHS if size == "authors" else None
    flat = alchemy_flat(size, variant, hops, epochs, **overrides)
    if size == "authors":
        per = flat["steps"] // AUTHORS_EPOCHS
        flat["checkpoints"] = [per * k for k in range(CHECKPOINT_EPOCHS, AUTHORS_EPOCHS, CHECKPOINT_EPOCHS)]
    return flat


def _size_decay_only(wd_scale: float, reading: dict | None) -> None:
    """The Alchemy checks train at their size's own decay: a scale or another decay reading is refused, not ignored."""
    if wd_scale != 1.0:
        raise ConfigError("wd_scale", wd_scale, "1 for the Alchemy checks (a size's own decay is part of the size)")
    for k, v in (reading or {}).items():
        if v is not None and v != DEFAULT_READING[k]:
            raise ConfigError(k, v, f"{DEFAULT_READING[k]} (the default) for the Alchemy checks: a size's own decay"
                                    " is part of the size")


def _seed_count(size: str, seeds: int | None, protocol_seeds: int) -> int:
    """Seeds a check runs at `size` (one at quick size), after checking the size."""
    if size not in STAGE_SIZES:
        raise ConfigError("size", size, "one of " + ", ".join(STAGE_SIZES) + " for the Alchemy checks")
    return 1 if size == "quick" else (seeds or protocol_seeds)


def _size_note(v: str, size: str, seeds: int, protocol_seeds: int) -> str:
    if size != "quick" and seeds != protocol_seeds:
        v = f"{v} ({seeds} of the protocol's {protocol_seeds} seeds)"
    if size == "authors":
        return f"{v} (the authors' recipe: their code's init, optimizer and query format, {AUTHORS_EPOCHS} epochs)"
    return v if size == "paper" else f"{v} ({size} size: orders and ratios only{'; not evidence' if size == 'quick' else ''})"


@dataclass(frozen=True)
class StageCheck:
    """Conditions (name -> variant, hops, overrides) x seeds at a named size; `measure(store,
    cfgs, size)` turns the stored curves into judged rows."""

    id: str
    claim: str
    conditions: dict
    measure: object
    seeds: int = 3
    tolerance: float = 0.1
    notes: str = ""
    paper_epochs: dict = field(default_factory=dict)    # condition -> epochs at paper size (else PAPER_EPOCHS)
    sizes: tuple = STAGE_SIZES

    def configs(self, size: str, seeds: int | None = None, input_format: str | None = None,
                task_seeds: int | None = None, variants=None) -> dict:
        """(condition, task instance, seed) -> config. Task instances 0..task_seeds-1 (the protocol: instance 0
        only; each instance its own held-out split and episodes); `variants`: only these conditions."""
        seeds, tasks = _seed_count(size, seeds, self.seeds), _seed_count(size, task_seeds, 1)
        out = {}
        for name in self.condition_names(variants):
            c = self.conditions[name]
            flat = size_flat(size, c["variant"], c.get("hops"), self.paper_epochs.get(name, PAPER_EPOCHS),
                             **c.get("overrides", {}), **({"input_format": input_format} if input_format else {}))
            if "lr_final_fraction" in c:      # a cosine that ends at this fraction of the size's lr
                flat.update(lr_schedule="cosine", lr_final=c["lr_final_fraction"] * flat["lr"])
            for t in range(tasks):
                for s in range(seeds):
                    out[(name, t, s)] = config_from_flat({**flat, "seed": s, "task_seed": t})
        return out

    def grid_size(self, size: str, seeds: int | None = None, task_seeds: int | None = None,
                  **variation) -> tuple[int, str]:
        """(the number of configs `run` builds, where it comes from), counted without building one."""
        seeds, tasks = _seed_count(size, seeds, self.seeds), _seed_count(size, task_seeds, 1)
        n = len(self.conditions)
        return n * tasks * seeds, f"{n} conditions x {tasks:,} task instances x {seeds:,} seeds"

    def condition_names(self, variants=None) -> list:
        """The conditions named in `variants` (all when None), checked against this check's own."""
        if variants is None:
            return list(self.conditions)
        unknown = [v for v in variants if v not in self.conditions]
        if unknown:
            raise ConfigError("variant", unknown, f"names of {self.id}'s conditions: " + "; ".join(self.conditions))
        return [n for n in self.conditions if n in variants]

    def missing(self, size: str, store: RunStore, *args, seeds: int | None = None, input_format: str | None = None,
                task_seeds: int | None = None, **kwargs) -> int:
        return sum(store.status(c.run_id()) is None
                   for c in self.configs(size, seeds, input_format, task_seeds).values())

    def run(self, size: str, store: RunStore, executor=None, progress: bool = True, train: bool = True,
            wd_scale: float = 1.0, seeds: int | None = None, device: str = "cpu", input_format: str | None = None,
            in_progress: bool = False, precision: str = "fp32", task_seeds: int | None = None, variants=None,
            reading: dict | None = None) -> dict:
        """Train what is missing (unless train=False; with `variants`, only those conditions' runs), measure every
        condition's stored runs, decide. Decay is the size's own: another decay reading or a wd_scale other than 1
        is refused. input_format stone_states: the
        stone-token variation, labelled so. in_progress: runs still training are read as far as
        their resume states go, labelled with their step (a stage not reached yet counts as never in S1, S2 and S5,
        and is left out of S3's and S4's times, whose ranks and ratios would otherwise read it as the end). precision
        bf16: the runs under bf16 autocast (a speed option, labelled). task_seeds: task instances 0..n-1 per
        condition and seed (the protocol: instance 0 only), labelled."""
        _size_decay_only(wd_scale, reading)
        cfgs = with_precision(on_device(self.configs(size, seeds, input_format, task_seeds), device), precision)
        if train:
            keep = set(self.condition_names(variants))
            run_sweep([c for k, c in cfgs.items() if k[0] in keep], store, executor, progress=progress)
        view = InProgressView(store) if in_progress else store
        rows = self.measure(view, cfgs, size)
        for r in rows:
            if row_verdict(r, r.get("tolerance", self.tolerance)) is not None:
                r["row_verdict"] = row_verdict(r, r.get("tolerance", self.tolerance))
        stage_timings = {}
        for c in cfgs.values():
            curves = split_curves(view, c)
            if curves is not None:
                stage_timings[c.run_id()] = timings(view, curves, c)
        v = verdict(rows, self.tolerance)
        have = sum(store.status(c.run_id()) == "complete" for c in cfgs.values())
        partial = getattr(view, "read", {})
        if partial:
            v = f"{v} (in progress: " + ", ".join(f"{rid} at step {a} of {b}" for rid, (a, b) in partial.items()) + ")"
        if have + len(partial) < len(cfgs):
            v = f"{v} (incomplete: {have} of {len(cfgs)} runs in the store)"
        n_seeds, n_tasks = _seed_count(size, seeds, self.seeds), _seed_count(size, task_seeds, 1)
        if n_tasks != 1:
            v = f"{v} ({n_tasks} task instances; the protocol has 1)"
        v = _size_note(v, size, n_seeds, self.seeds)
        if input_format in INPUT_LABELS:
            v = f"{v} ({INPUT_LABELS[input_format]})"
        if precision != "fp32":
            v = f"{v} ({precision} autocast)"
        return {"id": self.id, "claim": self.claim, "size": size, "metric": "stage times (steps)", "seeds": n_seeds,
                "protocol_seeds": self.seeds, "task_seeds": n_tasks, "protocol_task_seeds": 1,
                "tolerance": self.tolerance, "rows": rows, "verdict": v,
                "notes": self.notes, "run_ids": [c.run_id() for c in cfgs.values()],
                "protocol_epochs": PAPER_EPOCHS, "stage_timings": stage_timings,
                **({"input_format": input_format} if input_format else {}),
                **({"in_progress": {rid: {"step": a, "steps": b} for rid, (a, b) in partial.items()}}
                   if partial else {})}


def _per_condition(store, cfgs):
    """condition -> list over seeds of (curves or None, config)."""
    out: dict = {}
    for (name, _, _), c in cfgs.items():
        out.setdefault(name, []).append((split_curves(store, c), c))
    return out


def _epochs(cfg, step: float) -> float:
    from critwin.empirical.presets import steps_per_epoch
    return step / steps_per_epoch({"task": cfg.task, "task_seed": cfg.task_seed, "batch_size": cfg.batch_size,
                                   **cfg.task_options()})


def _s1(store, cfgs, size):
    (runs,) = _per_condition(store, cfgs).values()
    a, order, dip, dip_a, a_ep, c_ep, b_ep = [], [], [], [], [], [], []
    tm_a, tm_order, tm_b, tm_c = [], [], [], []
    for curves, cfg in runs:
        if curves is None:
            continue
        tm = timings(store, curves, cfg)
        ta, tc, tb = (tm[m]["step"] for m in ("event_a", "p_c_given_ab", "p_b_given_a"))
        tm_a.append(tm["event_a"])
        tm_b.append(tm["p_b_given_a"])
        tm_c.append(tm["p_c_given_ab"])
        a.append(1.0 if np.isfinite(ta) else float("nan"))      # not yet: censored, not a failure
        # the order is decided once B|A completes (before A or C|AB: out of order) or all three do; B|A not
        # complete, and nothing out of order yet: censored
        if np.isfinite(tb):
            order.append(float(np.isfinite(ta) and np.isfinite(tc) and ta <= tb and tc <= tb))
        else:
            order.append(float("nan"))
            tm_order.append(tm["p_b_given_a"])
            tm_order += [tm[m] for m in ("event_a", "p_c_given_ab") if tm[m]["censored"]]
        ba = curves["p_b_given_a"].dropna()
        ba = ba[ba.index > 0]
        dip.append(float(ba.loc[:tb].min()) if len(ba) else float("nan"))
        after_a = ba[(ba.index >= ta) & (ba.index <= (tb if np.isfinite(tb) else np.inf))] if np.isfinite(ta) else ba.iloc[:0]
        dip_a.append(float(after_a.min()) if len(after_a) else float("nan"))
        if size in ("paper", "authors"):       # epochs are compared at paper size only (and cost a pass over the data)
            a_ep.append(tm["event_a"]["epoch"])
            c_ep.append(tm["p_c_given_ab"]["epoch"])
            b_ep.append(tm["p_b_given_a"]["epoch"])
    later = [_row("epoch at which P(C|A,B) completes (reported; paper ~200; nan: not yet)", c_ep, None, unit="epochs",
                  censored=censoring(tm_c)),
             _row("epoch at which P(B|A) completes (reported; paper ~300; nan: not yet)", b_ep, None, unit="epochs",
                  censored=censoring(tm_b))] if size in ("paper", "authors") else []
    return [_row("A reaches 0.95 (fraction of seeds)", a, 1.0, 0.34, censored=censoring(tm_a)),
            _row("order: A and C|AB before B|A (fraction of seeds)", order, 1.0, 0.34,
                 censored=censoring(tm_order) if tm_order else None),
            _row("P(B|A) minimum before B|A completes", dip, 0.38, 0.12, censored=censoring(tm_b)),
            _row("P(B|A) minimum after A completes and before B|A completes (reported: the paper's dip comes"
                 " after A)", dip_a, None, censored=censoring(tm_a + tm_b)),
            _row("epoch at which A completes", a_ep, [68, 82] if size in ("paper", "authors") else None, 5.0, "epochs",
                 censored=censoring(tm_a) if size in ("paper", "authors") else None),
            *later]


def _s2(store, cfgs, size):
    (runs,) = _per_condition(store, cfgs).values()
    ablated, plain = [], []
    for curves, cfg in runs:
        abl = split_curves(store, cfg, "test_ablate_rewards")
        if curves is None or abl is None:
            continue
        ba = curves["p_b_given_a"].dropna()
        ba = ba[ba.index > 0]
        at = ba.idxmin() if len(ba) else curves.index[-1]       # the dip, where the shortcut is in use
        ablated.append(float(abl.loc[at, "acc"]))
        plain.append(float(curves.loc[at, "acc"]))
    return [_row("accuracy with every reward token hidden, at the P(B|A) dip", ablated, 0.05, 0.05),
            _row("accuracy with rewards shown, at the same evaluation", plain, None),
            _row("drop when rewards are hidden (shown - hidden; toolkit's rule: >= 0.2)",
                 [p - a for p, a in zip(plain, ablated)], [0.2, 1.0], 0.0)]


def _hops_rows(store, cfgs):
    """Per hop count the A completion by the threshold rule (judged) and by change points
    (reported: where A's last rise completes, a time that exists even when A stays below 0.95),
    and the middle stage, P(C given A,B), by the threshold rule (reported). Returns the rows and,
    one entry per stored run, its h, times ("a", "cp_a", "c", "cab") and whether it is still training ("live"),
    final exact accuracy and the end step. Each per-h row names its runs' task instances, seeds and
    whether each is still training, in order."""
    from critwin.empirical.metrics.stages import stage_time
    runs = {"h": [], "a": [], "cp_a": [], "c": [], "cab": [], "live": [], "final_c": [], "tm": []}
    live = getattr(store, "read", {})         # runs read from their resume states (InProgressView)
    rows, end, who = [], 0, []
    for name, stored in _per_condition(store, cfgs).items():
        h = int(name.split("h")[-1])
        for curves, cfg in stored:
            if curves is None:
                continue
            who.append((cfg.task_seed, cfg.seed))
            t = stage_times(curves)
            runs["tm"].append(timings(store, curves, cfg))
            a_curve = curves["event_a"].dropna()
            for key, v in (("h", h), ("live", cfg.run_id() in live), ("a", t["event_a"]), ("c", t["event_c"]),
                           ("cab", t.get("p_c_given_ab", float("nan"))),
                           ("cp_a", stage_time(a_curve.index, a_curve.to_numpy(), "event_a", "changepoint")),
                           ("final_c", float(curves["event_c"].iloc[-1]))):
                runs[key].append(v)
            end = max(end, cfg.steps)
        at_h = [k == h for k in runs["h"]]
        for key, label in (("a", "step A completes"),
                           ("cp_a", "step A's last rise completes (change points, threshold-free)"),
                           ("cab", "step P(C|A,B) completes (the middle stage; nan: never; reported)")):
            rows.append({**_row(f"h={h}: {label}", [x for x, here in zip(runs[key], at_h) if here], None),
                         "task_seed": [w[0] for w, here in zip(who, at_h) if here],
                         "seed": [w[1] for w, here in zip(who, at_h) if here],
                         "training": [bool(x) for x, here in zip(runs["live"], at_h) if here]})
    times = {k: np.array(v, bool if k == "live" else float) for k, v in runs.items() if k not in ("final_c", "tm")}
    times["tm"] = runs["tm"]
    return rows, times, runs["final_c"], end


def _settled(t: dict, key: str):
    """(hops, times) for `key` without the runs still training that have not reached it yet: their time is
    unknown (censored at their current step), not "never"."""
    keep = ~(t["live"] & np.isnan(t[key]))
    return t["h"][keep], t[key][keep]


METRIC_OF = {"a": "event_a", "c": "event_c", "cab": "p_c_given_ab"}


def _settled_censoring(t: dict, key: str) -> dict | None:
    """The censoring of the runs `_settled` keeps for `key`: their stage not complete by the step they reached."""
    keep = ~(t["live"] & np.isnan(t[key]))
    return censoring([tm[METRIC_OF[key]] for tm, k in zip(t["tm"], keep) if k and METRIC_OF[key] in tm])


def _rank_censoring(t: dict, key: str) -> dict | None:
    """A rank correlation with censored times (counted as the end) is still decided when each censored run
    reached at least every completed time (it ranks after them whenever it completes) and all of them share
    one hop count (their order among themselves leaves the correlation as it is); else it is censored."""
    keep = ~(t["live"] & np.isnan(t[key]))
    tms = [tm.get(METRIC_OF[key]) for tm, k in zip(t["tm"], keep) if k]
    hops = [h for h, k, tm in zip(t["h"], keep, tms) if k]
    hops = [h for h, tm in zip(hops, tms) if tm is not None]
    tms = [tm for tm in tms if tm is not None]
    cens = [(tm, h) for tm, h in zip(tms, hops) if tm["censored"]]
    done = [tm["step"] for tm in tms if not tm["censored"]]
    if not cens or (len({h for _, h in cens}) == 1
                    and min(tm["step_reached"] for tm, _ in cens) >= max(done, default=-np.inf)):
        return None
    return censoring(tms)


def _median_ratio(hops, times) -> list:
    """[slowest / fastest median time over hop counts], nan when some hop count has none."""
    med = [np.median(np.where(np.isnan(times[hops == h]), np.inf, times[hops == h])) for h in sorted(set(hops))]
    return [max(med) / min(med)] if med and np.all(np.isfinite(med)) and min(med) > 0 else [float("nan")]


def _s3(store, cfgs, size):
    rows, t, finals, _ = _hops_rows(store, cfgs)
    return rows + [_row("A time, slowest h / fastest h (median over seeds; nan if some h never)",
                        _median_ratio(*_settled(t, "a")), [1.0, 1.55], 0.25, unit="ratio",
                        censored=_settled_censoring(t, "a")),
                   _row("A's last rise (change points), slowest h / fastest h (reported)",
                        _median_ratio(*_settled(t, "cp_a")), None, unit="ratio"),
                   _row("final exact accuracy (every h and seed; a run that has not completed C is censored:"
                        " its final is a lower bound)", finals, 1.0, 0.1, censored=censoring([tm["event_c"] for tm in t["tm"]]))]


def _s4(store, cfgs, size):
    rows, t, _, end = _hops_rows(store, cfgs)

    def rank(key):       # [rank correlation of h with that time], nan with fewer than two hop counts
        hops, times = _settled(t, key)
        return [_spearman_with_censoring(hops, times, end)] if len(set(hops)) > 1 else [float("nan")]
    return rows + [_row("rank correlation of h with the A time (never = end)", rank("a"), 1.0, 0.2,
                        censored=_rank_censoring(t, "a")),
                   _row("rank correlation of h with A's last rise (change points, no rise = end; reported)",
                        rank("cp_a"), None),
                   _row("rank correlation of h with the C time (never = end)", rank("c"), 1.0, 0.2,
                        censored=_rank_censoring(t, "c")),
                   _row("rank correlation of h with the P(C|A,B) time (never = end; reported)", rank("cab"), None,
                        censored=_rank_censoring(t, "cab"))]


STALL_RANGE = 0.05    # S5: a curve that moves less than this over the last half of training has stalled


def _s5(store, cfgs, size):
    """Per setting the C time (never = end); the spread across settings, and whether the runs
    that never complete C stall: the last stage they complete is followed by a flat curve."""
    rows, t_c, stalls, end, tm_c = [], {}, [], 0, []
    nxt = {"event_a": "event_b", "event_b": "event_c"}
    for name, runs in _per_condition(store, cfgs).items():
        for curves, cfg in runs:
            if curves is None:
                continue
            end = max(end, cfg.steps)
            t = stage_times(curves)
            t_c.setdefault(name, []).append(t["event_c"])
            tm_c.append(timings(store, curves, cfg)["event_c"])
            if not np.isfinite(t["event_c"]):
                done = [m for m in ("event_a", "event_b") if np.isfinite(t[m])]
                after = curves[nxt[done[-1]] if done else "event_a"].dropna()
                late = after[after.index >= after.index.max() / 2]
                stalls.append(float(len(late) > 1 and np.ptp(late.to_numpy()) < STALL_RANGE))
        rows.append(_row(f"{name}: step C completes (nan: never)", t_c.get(name, []), None))
    med = [np.median(np.where(np.isnan(v), end, v)) for v in t_c.values()]
    spread = [max(med) / min(med)] if len(med) > 1 and min(med) > 0 else [float("nan")]
    # censored times count as the end, a lower bound: the ratio is a lower bound too, decided when the fastest
    # setting's median completed and the bound already reaches the claimed 1.5
    fastest = list(t_c.values())[int(np.argmin(med))] if med else []
    decided = (len(med) > 1 and np.isfinite(np.median(np.where(np.isnan(fastest), np.inf, fastest)))
               and spread[0] >= 1.5)
    rows.append(_row("C time, slowest / fastest setting (median over seeds, never = end; toolkit's rule: >= 1.5)",
                     spread, [1.5, 1000.0], 0.0, censored=None if decided else censoring(tm_c)))
    rows.append(_row(f"runs that never complete C and stall (next curve moves < {STALL_RANGE} over the last half;"
                     " fraction)", stalls, 1.0 if stalls else None, 0.0))
    return rows


S1 = StageCheck("S1", "withheld pair: three stages - A first, then exact-given-half, then the correct half;"
                " P(B|A) dips to ~0.38 on the way", {"withheld": {"variant": "withheld"}}, _s1)
S2 = StageCheck("S2", "the P(B|A) dip is a reward-adjacency shortcut: hiding reward tokens drops accuracy to ~0.05",
                {"withheld + ablation": {"variant": "withheld", "overrides": {"ablation": True}}}, _s2)
S3 = StageCheck("S3", "composition is invariant to the hop count 2-5 (A at epochs 11-17 for every h; all reach ~1)",
                {f"composition h{h}": {"variant": "composition", "hops": h} for h in (2, 3, 4, 5)}, _s3)
S4 = StageCheck("S4", "decomposition slows with the hop count (A and C later for larger h)",
                {f"decomposition h{h}": {"variant": "decomposition", "hops": h} for h in (2, 3, 4, 5)}, _s4)


@dataclass(frozen=True)
class PlasticityCheck:
    """S6: freeze one component from t_f on (t_f on a fixed grid of `points` steps across
    training; each frozen run branches from its baseline's checkpoint), per component the
    delay of the stage of `metric` against the baseline; the window is where the mean delay
    exceeds one grid spacing (the paper: 10 epochs). Judged: every Transformer layer has a
    window (freezing it early delays the stage), at least as long as the embedding's, and
    freezing at the last point delays nothing.
    A baseline that never completes the stage leaves every delay undefined: inconclusive.
    Below paper size no stage reaches its threshold (A plateaus near 0.75 at cpu size), so
    there the stage is A's rise timed by change points (`small_stage`), labelled as such.
    Under stone tokens (a variation, quick and cpu sizes) A completes at the first evaluation, so
    the stage is the middle one, P(C given A,B), by the threshold rule (`stone_stage`).
    At the authors' size the long run completes only A in its 150 epochs (C comes at ~200 in the
    paper), so the stage is A by the threshold rule (`authors_stage`). Its frozen branches pause once
    A completes (training on cannot move its time) or at epoch `authors_cap` (a delay past the cap is
    censored: a lower bound), so a branch costs epochs until A, not the run's 150."""

    id: str = "S6"
    claim: str = ("layer-specific plasticity windows: freezing a layer before a stage completes delays it;"
                  " Transformer layers have longer windows than the embedding")
    metric: str = "event_c"
    small_stage: tuple = ("event_a", "changepoint")    # (metric, method) at the quick and cpu sizes
    stone_stage: tuple = ("p_c_given_ab", "threshold")  # (metric, method) under stone tokens
    authors_stage: tuple = ("event_a", "threshold")     # (metric, method) at the authors' recipe
    authors_cap: int = 80                               # epoch at which a frozen branch stops at the latest
    paper_stages: tuple = ("p_b_given_a", "p_c_given_ab")   # the stages the paper times (from A's completion on)
    points: int = 9
    seeds: int = 2
    tolerance: float = 0.0
    notes: str = ""
    sizes: tuple = STAGE_SIZES

    def stage(self, size: str, input_format: str | None = None) -> tuple[str, str]:
        """(metric, detection method) of the stage whose delay is measured at `size` and input format."""
        if input_format == "stone_states":
            return self.stone_stage
        if size == "authors":
            return self.authors_stage
        return (self.metric, "threshold") if size == "paper" else self.small_stage

    def pause(self, size: str, flat: dict):
        """How the frozen branches pause (None: they train to the end): at the authors' size once their
        stage completes, or at epoch `authors_cap`."""
        if size != "authors":
            return None
        from critwin.empirical.metrics.stages import StageReached
        from critwin.empirical.sweep import Pause
        return Pause(until=flat["steps"] // AUTHORS_EPOCHS * self.authors_cap,
                     when=StageReached(self.authors_stage[0]))

    def plan(self, size: str, seeds: int | None = None, points: int | None = None, input_format: str | None = None):
        """(flat config, freeze steps, components, seeds, grid spacing); `points` freeze steps
        instead of the protocol's (coarser and cheaper: the branches are most of the cost)."""
        n_seeds, points, flat = self._plan_args(size, seeds, points, input_format)
        if size == "authors":       # the S1 run itself is the baseline; freezes branch from its checkpoints
            ckpts = flat["checkpoints"]
            # evenly over the checkpoints, halves rounded up (3 points: epochs 10, 80, 140)
            grid = [ckpts[int(i * (len(ckpts) - 1) / max(1, points - 1) + 0.5)] for i in range(points)] \
                if points > 1 else [ckpts[0]]
            grid = sorted(set(grid))
            every = ckpts[0]
        else:
            every = flat["steps"] // (points + 1)
            grid = [every * k for k in range(1, points + 1)]
        return flat, grid, self._components(flat), range(n_seeds), every

    def _plan_args(self, size: str, seeds: int | None, points: int | None, input_format: str | None):
        """(seeds, freeze points, flat config) of the plan, after checking them."""
        n_seeds = _seed_count(size, seeds, self.seeds)
        points = self.points if points is None else points
        if isinstance(points, bool) or not isinstance(points, int) or points < 1:
            raise ConfigError("freeze_points", points, "a whole number of freeze steps >= 1")
        if (input_format is not None and input_format not in INPUT_FORMATS) or (input_format == "stone_states"
                                                                                and size not in ("quick", "cpu")):
            raise ConfigError("input_format", input_format, "tokens, or stone_states at the quick and cpu sizes for"
                                                            " S6 (the authors' size branches from the long run)")
        if size == "authors":
            return n_seeds, points, size_flat(size, "withheld")
        return n_seeds, points, {**alchemy_flat(size, "withheld", None, PAPER_EPOCHS if size == "paper" else None),
                                 "freeze_optimizer": "rebuild",  # the paper's protocol: a fresh optimizer over the rest
                                 **({"input_format": input_format} if input_format == "stone_states" else {})}

    @staticmethod
    def _components(flat: dict) -> list:
        return ["embedding"] + [f"layer{i}" for i in range(flat.get("layers", 2))]

    def grid_size(self, size: str, seeds: int | None = None, points: int | None = None,
                  input_format: str | None = None, **variation) -> tuple[int, str]:
        """(the number of configs `run` builds, where it comes from), counted without building one (at the
        authors' size an upper bound: freeze points that fall on the same checkpoint are one)."""
        n_seeds, points, flat = self._plan_args(size, seeds, points, input_format)
        if size == "authors":
            points = min(points, len(flat["checkpoints"]))
        n = len(self._components(flat))
        return (n * (points + 1) * n_seeds,
                f"{n} components x ({points:,} freeze steps + the baseline) x {n_seeds:,} seeds")

    def missing(self, size: str, store: RunStore, *args, seeds: int | None = None, points: int | None = None,
                input_format: str | None = None, **kwargs) -> int:
        """Runs of the plan not yet stored (baselines with their checkpoints, and every branch)."""
        from critwin.bridge.plasticity import plasticity_configs
        flat, grid, comps, seed_range, _ = self.plan(size, seeds, points, input_format)
        cfgs = {c.run_id(): c for comp in comps
                for c in plasticity_configs(flat, comp, grid, seed_range, freeze_optimizer="rebuild").values()}
        return sum(store.status(rid) is None for rid in cfgs)

    def run(self, size: str, store: RunStore, executor=None, progress: bool = True, train: bool = True,
            wd_scale: float = 1.0, seeds: int | None = None, device: str = "cpu", points: int | None = None,
            precision: str = "fp32", task_seeds: int | None = None, reading: dict | None = None,
            input_format: str | None = None) -> dict:
        from critwin.bridge.plasticity import plasticity_configs, plasticity_window, train_plasticity
        _size_decay_only(wd_scale, reading)
        if task_seeds not in (None, 1):
            raise ConfigError("task_seeds", task_seeds, "1 for S6 (its frozen runs branch from task instance 0's"
                                                        " baselines)")
        flat, grid, comps, seed_range, every = self.plan(size, seeds, points, input_format)
        if device != "cpu":
            flat = {**flat, "device": device}
        if precision != "fp32":
            flat = {**flat, "precision": precision}
        metric, method = self.stage(size, input_format)
        pause = self.pause(size, flat)
        rows, windows, last, reached, finals, settled = [], {}, {}, [], [], 0
        grids = {comp: plasticity_configs(flat, comp, grid, seed_range, freeze_optimizer="rebuild") for comp in comps}
        if train:       # every component's frozen runs in one sweep: they share the workers
            train_plasticity(list(grids.values()), store, executor, progress, pause)
        from critwin.empirical.metrics.stages import stage_timing
        spe = steps_per_epoch_of(config_from_flat({**flat, "seed": 0}))
        undecided = {}        # component -> censored runs that leave its window undecided

        def cens_run(step) -> dict:      # a run that had not completed the stage at `step`
            return {"metric": metric, "censored": True, "epoch_reached": float(step) / spe,
                    "protocol_epochs": PAPER_EPOCHS}
        for comp in comps:
            per_run, table = plasticity_window(grids[comp], store, metric, "test", every, 3, executor, False, progress,
                                               method, pause)
            # a censored frozen run's delay is a lower bound: a freeze point whose mean delay (bounds included) is
            # already past the window's threshold is in the window; one below it with a censored run is undecided
            fr = per_run[per_run.freeze_step.notna()]
            undecided[comp] = [(tf, cens_run(r.step)) for tf, g in fr.groupby("freeze_step") for r in g.itertuples()
                               if r.censored and not (table.delta_mean[table.freeze_step == tf].iloc[0] > every)]
            undecided[comp] += [(None, cens_run(r.step)) for r in per_run[per_run.freeze_step.isna()].itertuples()
                                if r.censored]        # a baseline without the stage: no delay at all
            base = per_run[per_run.freeze_step.isna()]
            settled += int(per_run.settled[per_run.freeze_step.notna()].sum())
            reached = [float(np.isfinite(t)) for t in base.stage_step]
            finals = list(base.final)
            # a delay needs the stage in the baseline: one that never completes it (a size too small
            # for the stage) would make every delay 0 and pass the check on nothing
            judged = len(table) and reached and min(reached) == 1.0
            windows[comp] = float(table.in_window.sum() * every) if judged else float("nan")
            at_last = table.delta_mean[table.freeze_step == grid[-1]] if judged else []
            last[comp] = float(at_last.iloc[0]) if len(at_last) else float("nan")    # none read there yet: NaN
            rows.append({"value": f"{comp}: window length (steps)", "paper": None, "measured": windows[comp],
                         "unit": "window length (steps)",
                         "delays": table.delta_mean.tolist() if len(table) else [],
                         "finals": table.final_mean.tolist() if len(table) else []})
        rows.append(_row(f"baselines that complete the {metric} stage (fraction; delays need it)", reached, None))
        rows.append(_row(f"baseline's final {metric} (the frozen runs' finals are in each window row)", finals, None))
        layers = [c for c in comps if c != "embedding"]
        longer = [float(windows[c] >= windows["embedding"]) for c in layers
                  if np.isfinite(windows[c]) and np.isfinite(windows["embedding"])]
        # the paper times B given A and C given A,B; where this size times another stage (A at the authors'
        # recipe), the judged rows stand for the paper's only if the baselines complete its stages
        paper_cens = []
        if metric not in self.paper_stages and size == "authors":
            for (tf, s), c in grids[comps[0]].items():
                got = store.so_far(c.run_id()) if tf is None else None
                if got is None:
                    continue
                m = got[0][got[0].split == "test"]
                for st in self.paper_stages:
                    cur = m[m.metric == st].sort_values("step")
                    if len(cur) < 2:            # a curve the run does not log: nothing to time
                        continue
                    paper_cens.append(stage_timing(cur.step, cur.value.fillna(0.0), st, spe, PAPER_EPOCHS, got[1]))
            paper_cens = [t for t in paper_cens if t["censored"]]
            rows.append(_row("baselines' epoch reached without the paper's stages (P(B|A), P(C|A,B)) complete",
                             [t["epoch_reached"] for t in paper_cens], None, censored=censoring(paper_cens)))
        lay_c = censoring([x for c in layers for _, x in undecided[c]] + paper_cens)
        rows.append(_row("Transformer layers whose window is not empty (fraction; freezing before the stage delays it)",
                         [float(windows[c] > 0) for c in layers if np.isfinite(windows[c])], 1.0, 0.0,
                         censored=lay_c))
        rows.append(_row("Transformer layers with a window at least the embedding's (fraction)", longer, 1.0, 0.0,
                         censored=censoring([x for c in comps for _, x in undecided[c]] + paper_cens)))
        at_last_c = [x for c in comps for tf, x in undecided[c] if tf is None or tf == grid[-1]]
        rows.append(_row(f"delay when frozen at the last point, step {grid[-1]} (steps)",
                         [last[c] for c in comps], [0.0, float(every)], 0.0,
                         censored=censoring(at_last_c + paper_cens)))
        for r in rows:
            if row_verdict(r, r.get("tolerance", self.tolerance)) is not None:
                r["row_verdict"] = row_verdict(r, r.get("tolerance", self.tolerance))
        v = verdict(rows, self.tolerance)
        # a planned run not yet trained, or trained partway, could still change its stage time: its censored
        # delay is a lower bound only, so no verdict yet
        planned = (len(grid) * len(comps) + 1) * len(seed_range)
        unsettled = planned - settled - int(base.settled.sum())
        if unsettled:
            v = f"inconclusive (in progress: {unsettled} of {planned} runs still to train)"
        if len(grid) != self.points:
            v = f"{v} ({len(grid)} of the protocol's {self.points} freeze points)"
        v = _size_note(v, size, len(seed_range), self.seeds)
        if input_format in INPUT_LABELS:
            v = f"{v} ({INPUT_LABELS[input_format]})"
        if precision != "fp32":
            v = f"{v} ({precision} autocast)"
        return {"id": self.id, "claim": self.claim, "size": size,
                **({"input_format": input_format} if input_format in INPUT_LABELS else {}),
                "metric": f"{metric} stage delay (steps; stage by {method})" + (
                    "; the paper times P(B|A) and P(C|A,B) from A's completion on, which the baselines have not"
                    " completed" if paper_cens else ""), "protocol_epochs": PAPER_EPOCHS,
                "seeds": len(seed_range), "protocol_seeds": self.seeds, "tolerance": self.tolerance,
                "freeze_steps": grid, "freeze_points": len(grid), "protocol_freeze_points": self.points,
                "runs_to_train": unsettled, "rows": rows,
                "verdict": v, "notes": self.notes}


S5 = StageCheck("S5", "decomposition is hyper-parameter sensitive: weight decay and the final learning rate"
                " change when (and whether) it is solved; failing runs stall in a stage",
                {"wd 0": {"variant": "decomposition", "hops": 2, "overrides": {"wd": 0.0}, "lr_final_fraction": 0.0},
                 "wd 0.01": {"variant": "decomposition", "hops": 2, "overrides": {"wd": 0.01}, "lr_final_fraction": 0.0},
                 "wd 0.1": {"variant": "decomposition", "hops": 2, "overrides": {"wd": 0.1}, "lr_final_fraction": 0.0},
                 "wd 0.1, final lr / 10": {"variant": "decomposition", "hops": 2, "overrides": {"wd": 0.1},
                                           "lr_final_fraction": 0.1}},
                _s5, notes="h = 2 (the cheapest decomposition); cosine schedules; decay as the size's decay reading.")
S6 = PlasticityCheck()
STAGE_CHECKS = (S1, S2, S3, S4, S5, S6)
