"""Paper checks: a claim, the runs that test it, and a verdict rule fixed in advance.

Verdict rule (the same for every empirical check, written before any run):
for each compared value, d = |measured mean - paper value| (the distance to the interval
where the paper gives a range) and se = sd / sqrt(n);
  reproduced      if d <= tolerance for every value,
  not reproduced  if d > tolerance + 2 se for any value,
  inconclusive    otherwise.
`quick` runs the same protocol with every time scaled by 1/10 and one seed: it exercises
the machinery and is never evidence (its verdict is reported as such).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..empirical import RunStore
from ..empirical.sweep import config_from_flat, run_sweep

SIZES = ("quick", "paper")
TIME_KEYS = ("steps", "wd_window_start", "wd_width", "width", "budget")


def distance(measured: float, paper) -> float:
    """|measured - paper|, or the distance to [lo, hi] when the paper gives a range."""
    if isinstance(paper, (list, tuple)):
        lo, hi = paper
        return max(lo - measured, 0.0, measured - hi)
    return abs(measured - paper)


def verdict(rows: list[dict], tolerance: float) -> str:
    """The rule above; a row's own "tolerance" overrides the check's, and rows without a
    paper value (None) are reported but not judged."""
    rows = [r for r in rows if r["paper"] is not None]
    d = [distance(r["measured"], r["paper"]) for r in rows]
    tol = [r.get("tolerance", tolerance) for r in rows]
    se = [r["sd"] / math.sqrt(r["n"]) if r.get("n", 1) > 1 else 0.0 for r in rows]
    if any(math.isnan(x) for x in d):
        return "inconclusive"
    if all(x <= t for x, t in zip(d, tol)):
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
    """A run's final metric; nan when the run is not (completely) in the store."""
    if store.status(cfg.run_id()) != "complete":
        return float("nan")
    return float(store.load(cfg.run_id()).summary["final"].get(metric, np.nan))


def mean_sd(vals) -> dict:
    """measured (mean), sd (ddof 1) and n over the finite values; nan when there are none."""
    v = np.asarray(vals, float)
    v = v[~np.isnan(v)]
    return {"measured": float(v.mean()) if len(v) else float("nan"),
            "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0, "n": int(len(v))}


@dataclass(frozen=True)
class EmpiricalCheck:
    """Runs `variants` x `seeds` on top of `base`; compares final `metric` per variant."""

    id: str
    claim: str
    base: dict
    variants: dict          # name -> flat overrides
    paper: dict             # name -> paper value of the mean final metric
    seeds: int = 3
    tolerance: float = 0.10
    metric: str = "ood_acc"
    notes: str = ""
    extra_rows: object = None   # callable(store, configs by (variant, seed)) -> more judged rows

    def configs(self, size: str, wd_scale: float = 1.0, seeds: int | None = None) -> dict:
        """Run configs by (variant, seed); wd_scale multiplies every decay value (wd, budget);
        seeds (paper size only) overrides the protocol's seed count."""
        f, seeds = (1.0, seeds or self.seeds) if size == "paper" else (0.1, 1)

        def flat(v, s):
            d = {**self.base, **v, "seed": s}
            for k in ("wd", "budget"):
                if k in d and wd_scale != 1.0:
                    d[k] = d[k] * wd_scale
            return _scale(d, f) if f != 1.0 else d
        return {(name, s): config_from_flat(flat(v, s)) for name, v in self.variants.items()
                for s in range(seeds)}

    def missing(self, size: str, store: RunStore, wd_scale: float = 1.0, seeds: int | None = None) -> int:
        return sum(store.status(c.run_id()) is None for c in self.configs(size, wd_scale, seeds).values())

    def run(self, size: str, store: RunStore, executor=None, progress: bool = True,
            train: bool = True, wd_scale: float = 1.0, seeds: int | None = None) -> dict:
        """Train what is missing (unless train=False), then measure and decide.

        wd_scale != 1 and fewer seeds than the protocol are variations (reported as such).
        """
        cfgs = self.configs(size, wd_scale, seeds)
        seeds = seeds or self.seeds
        if train:
            run_sweep(list(cfgs.values()), store, executor, progress=progress)
        rows = []
        for name in self.variants:
            vals = np.array([final_metric(store, c, self.metric) for (n, _), c in cfgs.items() if n == name])
            rows.append({"value": name, "paper": self.paper[name], **mean_sd(vals), "per_seed": vals.tolist(),
                         "run_ids": [c.run_id() for (n, _), c in cfgs.items() if n == name]})
        if self.extra_rows is not None:
            rows += self.extra_rows(store, cfgs)
        v = verdict(rows, self.tolerance)
        if wd_scale != 1.0:
            v = f"{v} (decay x{wd_scale:g}: a variation, not the paper's protocol)"
        if size == "paper" and seeds != self.seeds:
            v = f"{v} ({seeds} seeds; the protocol has {self.seeds})"
        return {"id": self.id, "claim": self.claim, "size": size, "wd_scale": wd_scale, "metric": self.metric,
                "seeds": seeds if size == "paper" else 1, "protocol_seeds": self.seeds,
                "tolerance": self.tolerance, "rule": __doc__.split("\n\n")[1].strip(), "rows": rows,
                "verdict": v if size == "paper" else f"{v} (quick size: not evidence)", "notes": self.notes}


@dataclass(frozen=True)
class TheoryCheck:
    id: str
    claim: str
    measure: object          # callable() -> (rows, verdict)
    notes: str = ""

    def missing(self, size: str, store=None, wd_scale: float = 1.0, seeds: int | None = None) -> int:
        return 0

    def run(self, size: str, store=None, executor=None, progress: bool = True, train: bool = True,
            wd_scale: float = 1.0, seeds: int | None = None) -> dict:
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
    suffix = "" if scale == 1.0 else f"_wd_x{scale:g}"
    if result.get("seeds", 1) != result.get("protocol_seeds", 1) and result["size"] == "paper":
        suffix += f"_seeds{result['seeds']}"
    path = folder / f"{result['id']}_{result['size']}{suffix}.json"
    path.write_text(json.dumps(result, indent=1, default=float))
    pd.DataFrame([{k: v for k, v in r.items() if k not in ("per_seed", "run_ids")} for r in result["rows"]]
                 ).to_csv(path.with_suffix(".csv"), index=False)
    return path

