"""Paper checks: a claim, the runs that test it, and a verdict rule fixed in advance.

Verdict rule (the same for every empirical check, written before any run):
for each compared value, d = |measured mean - paper value| (the distance to the interval
where the paper gives a range) and se = sd / sqrt(n);
  reproduced      if d <= tolerance for every value,
  not reproduced  if d > tolerance + 2 se for any value,
  inconclusive    otherwise.
A value that could not be measured (nan) is neither within tolerance nor outside it: it keeps a
check from "reproduced" but not from "not reproduced" when another value clearly fails.
A value that needs a stage some run had not completed by its end is censored there, not absent
(its row carries "censored": the runs, the epoch they reached and the protocol's length): it is
judged neither way, and a check whose other values would pass reads "inconclusive (censored at
epoch E of the protocol's N (P%))".
`quick` runs the same protocol with every time scaled by 1/10 and one seed: it exercises
the machinery and is never evidence (its verdict is reported as such).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from critwin.empirical import RunStore
from critwin.empirical.sweep import config_from_flat, run_sweep
from critwin.empirical.train import censored_reach

from critwin.errors import ConfigError
from critwin.vocabulary import PAPER_READING, reading_label

CHECK_SIZES = ("quick", "cpu", "paper", "authors")   # cpu, authors: Alchemy sizes (the anchor checks are CPU-sized at paper)
TIME_KEYS = ("steps", "wd_window_start", "wd_width", "width", "budget")


def distance(measured: float, paper) -> float:
    """|measured - paper|, or the distance to [lo, hi] when the paper gives a range."""
    if math.isnan(measured):
        return math.nan
    if isinstance(paper, (list, tuple)):
        lo, hi = paper
        return max(lo - measured, 0.0, measured - hi)
    return abs(measured - paper)


def censored_text(epochs, protocol_epochs: int) -> str:
    """'censored at epoch 150 of the protocol's 1000 (15%)' for the epoch(s) the censored runs reached
    (a range where they differ)."""
    e = [float(x) for x in np.atleast_1d(epochs)]
    lo, hi = min(e), max(e)
    fmt = lambda x: f"{round(x, 1):g}"   # noqa: E731
    pct = lambda x: (lambda v: f"{v:.0f}" if v >= 99.5 else f"{v:.2g}")(100 * x / protocol_epochs)   # noqa: E731
    if fmt(lo) == fmt(hi):
        return f"censored at epoch {fmt(hi)} of the protocol's {protocol_epochs} ({pct(hi)}%)"
    return f"censored at epochs {fmt(lo)}-{fmt(hi)} of the protocol's {protocol_epochs} ({pct(lo)}-{pct(hi)}%)"


def row_verdict(row: dict, tolerance: float) -> str | None:
    """One judged row by the rule above (None: reported, not judged)."""
    if row["paper"] is None:
        return None
    if row.get("censored"):
        return f"inconclusive ({row['censored']['text']})"
    return _rule([row], tolerance)


def verdict(rows: list[dict], tolerance: float) -> str:
    """The rule above; a row's own "tolerance" overrides the check's, and rows without a
    paper value (None) are reported but not judged; censored rows are judged neither way."""
    judged = [r for r in rows if r["paper"] is not None]
    cens = [r["censored"] for r in judged if r.get("censored")]
    v = _rule([r for r in judged if not r.get("censored")], tolerance)
    if not cens:
        return v
    text = censored_text([e for c in cens for e in c["epochs"]], cens[0]["protocol_epochs"])
    if v == "not reproduced":
        return f"not reproduced (and {len(cens)} of {len(judged)} judged rows {text})"
    return f"inconclusive ({text})"


def _rule(rows: list[dict], tolerance: float) -> str:
    d = [distance(r["measured"], r["paper"]) for r in rows]
    tol = [r.get("tolerance", tolerance) for r in rows]
    se = [r["sd"] / math.sqrt(r["n"]) if r.get("n", 1) > 1 else 0.0 for r in rows]
    if all(x <= t for x, t in zip(d, tol)):       # a nan distance compares False both ways
        return "reproduced"
    if any(x > t + 2 * s for x, t, s in zip(d, tol, se)):
        return "not reproduced"
    return "inconclusive"


def _scale(flat: dict, f: float) -> dict:
    out = dict(flat)
    for k in TIME_KEYS:
        if k in out and out[k] is not None:
            out[k] = type(out[k])(out[k] * f) if isinstance(out[k], int) else out[k] * f
    if "wd_window" in out:
        a, b = (float(x) for x in out["wd_window"].split(":"))
        out["wd_window"] = f"{a * f:g}:{b * f:g}"
    if "steps" in out:
        out["steps"] = int(round(out["steps"]))
        out["eval_every"] = max(1, int(out.get("eval_every", 100) * f))
    return out


def final_metric(store: RunStore, cfg, metric: str = "ood_acc") -> float:
    """A run's final metric; nan when the run is not (completely) in the store. A `*_reach_step`
    metric (first evaluation at >= 0.95, e.g. the grokking step) is read from the summary and
    a run that never reached it counts as its last step (censored)."""
    run = store.complete(cfg.run_id())
    if run is None:
        return float("nan")
    if metric.endswith("_reach_step"):
        return censored_reach(run.summary.get(metric), cfg.steps)
    return float(run.summary["final"].get(metric, np.nan))


def mean_sd(vals) -> dict:
    """measured (mean), sd (ddof 1) and n over the finite values; nan when there are none."""
    v = np.asarray(vals, float)
    v = v[~np.isnan(v)]
    return {"measured": float(v.mean()) if len(v) else float("nan"),
            "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0, "n": int(len(v))}


def variance_split(values, instances) -> dict:
    """Share of the spread of `values` between task instances (one-way ANOVA: between-instance
    sum of squares / total) and within them (init seeds); None where it cannot be split."""
    v, g = np.asarray(values, float), np.asarray(instances)
    ok = ~np.isnan(v)
    v, g = v[ok], g[ok]
    total = float(((v - v.mean()) ** 2).sum()) if len(v) else 0.0
    groups = [v[g == k] for k in np.unique(g)]
    if len(groups) < 2 or total == 0 or all(len(x) < 2 for x in groups):
        return {"instance_share": None, "seed_share": None}
    between = float(sum(len(x) * (x.mean() - v.mean()) ** 2 for x in groups))
    return {"instance_share": between / total, "seed_share": 1.0 - between / total}


DEFAULT_READING = dict(PAPER_READING)       # the paper's protocol; any other reading is a labelled variation
READING_KEYS = tuple(DEFAULT_READING)


def scaled_reading_label(reading: dict | None, wd_scale: float = 1.0) -> str:
    """'l2/non_embedding' (the paper's reading, the default), 'decoupled/matrices', '... x333'."""
    r = {**DEFAULT_READING, **(reading or {})}
    return reading_label(r["decay_form"], r["decay_set"], r["head_bias"], wd_scale)




@dataclass(frozen=True)
class EmpiricalCheck:
    """Runs `variants` x task instances x seeds on top of `base`; compares final `metric` per variant."""

    id: str
    claim: str
    base: dict
    variants: dict          # name -> flat overrides
    paper: dict             # name -> paper value of the mean final metric
    seeds: int = 3
    tolerance: float = 0.10
    metric: str = "ood_acc"
    notes: str = ""
    extra_rows: object = None   # callable(store, configs by (variant, task seed, seed)) -> more judged rows
    task_seeds: int = 3     # task instances (task_seed 0..n-1): the outcome depends on them
    row_tolerance: dict = field(default_factory=dict)   # variant -> its own tolerance (else the check's)
    sizes: tuple = ("quick", "paper")

    def _counts(self, size: str, seeds: int | None, task_seeds: int | None) -> tuple[float, int, int]:
        """(time factor, seeds, task instances) of `size`, after checking it."""
        if size not in self.sizes:
            raise ConfigError("size", size, " or ".join(self.sizes) + f" for {self.id}")
        if size == "paper":
            return 1.0, seeds or self.seeds, task_seeds or self.task_seeds
        return 0.1, 1, 1

    def grid_size(self, size: str, seeds: int | None = None, task_seeds: int | None = None,
                  **variation) -> tuple[int, str]:
        """(the number of configs `run` builds, where it comes from), counted without building one."""
        _, seeds, tasks = self._counts(size, seeds, task_seeds)
        n = len(self.variants)
        return n * tasks * seeds, f"{n} variants x {tasks:,} task instances x {seeds:,} seeds"

    def configs(self, size: str, wd_scale: float = 1.0, seeds: int | None = None,
                task_seeds: int | None = None, reading: dict | None = None) -> dict:
        """Run configs by (variant, task seed, seed). wd_scale multiplies every decay value (wd,
        budget); seeds / task_seeds (paper size only) override the protocol's counts; reading
        sets the decay reading (decay_form, decay_set, head_bias). Quick size: one of each."""
        f, seeds, tasks = self._counts(size, seeds, task_seeds)
        unknown = set(reading or {}) - set(READING_KEYS)
        if unknown:
            raise ConfigError("reading", sorted(unknown), "keys among " + ", ".join(READING_KEYS))

        def flat(v, t, s):
            d = {**DEFAULT_READING, **self.base, **v, **(reading or {}), "task_seed": t, "seed": s}
            for k in ("wd", "budget"):
                if k in d and wd_scale != 1.0:
                    d[k] = d[k] * wd_scale
            return _scale(d, f) if f != 1.0 else d
        return {(name, t, s): config_from_flat(flat(v, t, s)) for name, v in self.variants.items()
                for t in range(tasks) for s in range(seeds)}

    def missing(self, size: str, store: RunStore, wd_scale: float = 1.0, seeds: int | None = None,
                task_seeds: int | None = None, reading: dict | None = None) -> int:
        return sum(store.status(c.run_id()) is None
                   for c in self.configs(size, wd_scale, seeds, task_seeds, reading).values())

    def planned(self, size: str, wd_scale: float = 1.0, seeds: int | None = None, task_seeds: int | None = None,
                reading: dict | None = None, device: str = "cpu", variants=None) -> dict:
        """The configs `run` trains and reads, by (variant, task seed, seed), on `device`; with
        `variants` (names), only theirs."""
        unknown = sorted(set(variants or ()) - set(self.variants))
        if unknown:
            raise ConfigError("variant", unknown, f"names of {self.id}'s variants: " + "; ".join(self.variants))
        cfgs = on_device(self.configs(size, wd_scale, seeds, task_seeds, reading), device)
        return cfgs if variants is None else {k: c for k, c in cfgs.items() if k[0] in variants}

    def run(self, size: str, store: RunStore, executor=None, progress: bool = True,
            train: bool = True, wd_scale: float = 1.0, seeds: int | None = None,
            task_seeds: int | None = None, reading: dict | None = None, device: str = "cpu",
            variants=None) -> dict:
        """Train what is missing (unless train=False; with `variants`, only theirs), then measure
        and decide from every variant's runs in the store.

        wd_scale != 1, another reading and fewer seeds or task instances than the protocol are
        variations (reported as such). Each row splits its spread into task instance vs seed.
        device: where the runs train (part of a run's identity, so cuda runs are their own).
        """
        cfgs = self.planned(size, wd_scale, seeds, task_seeds, reading, device)
        todo = cfgs if variants is None else self.planned(size, wd_scale, seeds, task_seeds, reading, device, variants)
        seeds, tasks = (seeds or self.seeds, task_seeds or self.task_seeds) if size == "paper" else (1, 1)
        if train:
            run_sweep(list(todo.values()), store, executor, progress=progress)
        rows = []
        for name in self.variants:
            keys = [k for k in cfgs if k[0] == name]
            vals = np.array([final_metric(store, cfgs[k], self.metric) for k in keys])
            rows.append({"value": name, "paper": self.paper[name], **mean_sd(vals), "per_seed": vals.tolist(),
                         "task_seed": [k[1] for k in keys], **variance_split(vals, [k[1] for k in keys]),
                         "run_ids": [cfgs[k].run_id() for k in keys],
                         **({"tolerance": self.row_tolerance[name]} if name in self.row_tolerance else {})})
        if self.extra_rows is not None:
            rows += self.extra_rows(store, cfgs)
        v = verdict(rows, self.tolerance)
        have = sum(store.status(c.run_id()) == "complete" for c in cfgs.values())
        if have < len(cfgs):
            v = f"{v} (incomplete: {have} of {len(cfgs)} runs in the store)"
        label = scaled_reading_label(reading, wd_scale)
        if label != scaled_reading_label(None):
            v = f"{v} (decay reading {label}: a variation, not the paper's Eq. 4)"
        if size == "paper" and (seeds, tasks) != (self.seeds, self.task_seeds):
            v = f"{v} ({tasks} task instances x {seeds} seeds; the protocol has {self.task_seeds} x {self.seeds})"
        return {"id": self.id, "claim": self.claim, "size": size, "wd_scale": wd_scale, "metric": self.metric,
                "reading": scaled_reading_label(reading), "reading_options": dict(reading or {}),
                "seeds": seeds, "protocol_seeds": self.seeds if size == "paper" else 1,
                "task_seeds": tasks, "protocol_task_seeds": self.task_seeds if size == "paper" else 1,
                "tolerance": self.tolerance, "rule": __doc__.split("\n\n")[1].strip(), "rows": rows,
                "verdict": v if size == "paper" else f"{v} (quick size: not evidence)", "notes": self.notes}


def on_device(cfgs: dict, device: str) -> dict:
    """The same configs trained on `device` ('cpu': unchanged)."""
    return cfgs if device == "cpu" else {k: replace(c, device=device) for k, c in cfgs.items()}


def train_checks(checks: list, size: str, store: RunStore, executor=None, progress: bool = True,
                 **variation) -> int:
    """Train what the empirical checks among `checks` are missing as one sweep, so runs of
    different checks share packs and workers (check by check, a pack holds one check's runs at
    most); their `run` then only reads. Returns the number of distinct configs."""
    cfgs = {}
    for chk in checks:
        if isinstance(chk, EmpiricalCheck) and size in chk.sizes:
            cfgs.update((c.run_id(), c) for c in chk.planned(size, **variation).values())
    if cfgs:
        run_sweep(list(cfgs.values()), store, executor, progress=progress)
    return len(cfgs)


@dataclass(frozen=True)
class TheoryCheck:
    id: str
    claim: str
    measure: object          # callable() -> (rows, verdict)
    notes: str = ""
    sizes: tuple = CHECK_SIZES

    def missing(self, size: str, store=None, *args, **kwargs) -> int:
        return 0

    def grid_size(self, size: str, **variation) -> tuple[int, str]:
        return 0, "no runs"

    def run(self, size: str, store=None, executor=None, progress: bool = True, train: bool = True,
            **variation) -> dict:
        rows, v = self.measure()
        return {"id": self.id, "claim": self.claim, "size": size, "rows": rows, "verdict": v,
                "notes": self.notes}


def write_result(result: dict, folder, command: str) -> Path:
    """JSON (with the command that produced it) and a CSV of the rows."""
    import pandas as pd
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    result = {**result, "command": command}
    scale = result.get("wd_scale", 1.0)
    opts = result.get("reading_options") or {}
    suffix = "".join("_headbias" if k == "head_bias" else f"_{v}" for k, v in opts.items() if v != DEFAULT_READING[k])
    suffix += "" if scale == 1.0 else f"_wd_x{scale:g}"
    if result.get("input_format"):
        suffix += f"_{result['input_format']}"
    if result["size"] in ("paper", "cpu", "authors"):
        if result.get("task_seeds", 1) != result.get("protocol_task_seeds", 1):
            suffix += f"_tasks{result['task_seeds']}"
        if result.get("seeds", 1) != result.get("protocol_seeds", 1):
            suffix += f"_seeds{result['seeds']}"
        if result.get("freeze_points") != result.get("protocol_freeze_points"):
            suffix += f"_points{result['freeze_points']}"
    path = folder / f"{result['id']}_{result['size']}{suffix}.json"
    path.write_text(json.dumps(result, indent=1, default=float))
    pd.DataFrame([{k: v for k, v in r.items() if k not in ("per_seed", "run_ids")} for r in result["rows"]]
                 ).to_csv(path.with_suffix(".csv"), index=False)
    return path

