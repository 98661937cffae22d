"""Which reading of the critical-window paper reproduces its tables?

A reading is how the paper's weight decay lambda acts: its form (decoupled shrink after the
step, or an L2 penalty through the optimizer), the parameters it touches, the scale of
lambda (the decoupled form read as a per-step shrink is x333), and the head's bias. For
each reading, the protocols of the paper checks (their variants) are run over task
instances and seeds, and the reading is scored by its distance to the paper's numbers:
the mean |measured - paper| over rows and the count of rows within tolerance, with and
without the onset-0 hypothesis (a window starting at step 0 never switched on in the
paper, so that row equals the no-decay run of the same task instance and seed).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from critwin.empirical.sweep import run_sweep
from critwin.paper_checks import CHECKS
from critwin.paper_checks.base import distance, final_metric

from critwin.errors import ConfigError
from critwin.vocabulary import Reading

# The rows a cheap ranking runs: the core contrast, the cliff and the collapse of large decay.
RANK_ROWS = (("W2", "no decay"), ("W2", "window [0,5000) 4e-3"), ("W1", "window [5000,10000) 4e-3"),
             ("W4", "onset 400"), ("W10", "lambda 0.01"))
RANKED_CLAIMS = ("W1", "W2", "W3", "W4", "W5", "W10")
NO_DECAY = ("W2", "no decay")


DEFAULT_READINGS = (Reading("l2", "non_embedding"), Reading("decoupled", "matrices", 1000 / 3),
                    Reading("l2", "matrices"), Reading("decoupled", "matrices"),
                    Reading("decoupled", "non_embedding", 1000 / 3))


def select_rows(rows: str | tuple = "rank", claims=RANKED_CLAIMS) -> list[tuple[str, str]]:
    """(check id, variant) pairs: `rank` (RANK_ROWS) or `all` (every variant of `claims`)."""
    if rows == "rank":
        out = list(RANK_ROWS)
    elif rows == "all":
        for c in claims:
            if c not in CHECKS or not hasattr(CHECKS[c], "variants"):
                raise ConfigError("claims", c, "empirical checks among " + ", ".join(RANKED_CLAIMS))
        out = [(c, v) for c in claims for v in CHECKS[c].variants]
    else:
        raise ConfigError("rows", rows, "rank or all")
    return out if NO_DECAY in out else [NO_DECAY] + out


def plan(readings, rows, task_seeds: int = 3, seeds: int = 1) -> dict:
    """Configs by (reading label, check id, variant, task seed, seed), paper size."""
    out = {}
    for r in readings:
        for cid, variant in rows:
            cfgs = CHECKS[cid].configs("paper", r.wd_scale, seeds, task_seeds, r.options())
            for (name, t, s), c in cfgs.items():
                if name == variant:
                    out[(r.label, cid, variant, t, s)] = c
    return out


def plan_size(readings, rows, task_seeds: int = 3, seeds: int = 1) -> tuple[int, str]:
    """(the number of configs `plan` builds, where it comes from), counted without building one."""
    n_readings, n_rows = len({r.label for r in readings}), len(set(rows))
    return (n_readings * n_rows * task_seeds * seeds,
            f"{n_readings} readings x {n_rows} rows x {task_seeds:,} task instances x {seeds:,} seeds")


def unique_configs(planned: dict) -> list:
    """Each run once, in plan order (the no-decay run is shared by every reading)."""
    seen, out = set(), []
    for c in planned.values():
        if c.run_id() not in seen:
            seen.add(c.run_id())
            out.append(c)
    return out


@dataclass
class ReadingsResult:
    per_run: pd.DataFrame            # reading, claim, variant, task_seed, seed, run_id, measured
    rows: pd.DataFrame               # per reading x row: paper, measured mean, sd, n, distance, within
    ranking: pd.DataFrame            # per reading (x hypothesis): score, rows within tolerance
    notes: list = field(default_factory=list)


def measure(readings, rows, store, task_seeds: int = 3, seeds: int = 1, executor=None, train: bool = False,
            progress: bool = True) -> ReadingsResult:
    """Train (optionally) and score every reading on `rows`; missing runs are left out (nan)."""
    planned = plan(readings, rows, task_seeds, seeds)
    if train:
        run_sweep(unique_configs(planned), store, executor, progress=progress)
    recs = [{"reading": k[0], "claim": k[1], "variant": k[2], "task_seed": k[3], "seed": k[4],
             "run_id": c.run_id(), "window_at_0": _starts_at_zero(c),
             "measured": final_metric(store, c)} for k, c in planned.items()]
    per_run = pd.DataFrame(recs)
    return ReadingsResult(per_run, *score(per_run))


def _starts_at_zero(cfg) -> bool:
    """A decay window that starts at step 0 and ends before training does (not constant decay)."""
    return any(a == 0 and b < cfg.steps for a, b, _ in cfg.wd_windows)


def score(per_run: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-row distances and the ranking, as measured and under the onset-0 hypothesis."""
    base = per_run[(per_run.claim == NO_DECAY[0]) & (per_run.variant == NO_DECAY[1])]
    none = {(r.reading, r.task_seed, r.seed): r.measured for r in base.itertuples()}
    per_run = per_run.assign(onset0=[none.get((r.reading, r.task_seed, r.seed), np.nan) if r.window_at_0
                                     else r.measured for r in per_run.itertuples()])
    out = []
    for (reading, cid, variant), g in per_run.groupby(["reading", "claim", "variant"], sort=False):
        chk = CHECKS[cid]
        paper, tol = chk.paper[variant], chk.tolerance
        for hyp, col in (("as measured", "measured"), ("onset 0 = no decay", "onset0")):
            v = g[col].to_numpy(float)
            v = v[~np.isnan(v)]
            m = float(v.mean()) if len(v) else np.nan
            d = distance(m, paper) if paper is not None and len(v) else np.nan
            out.append({"reading": reading, "hypothesis": hyp, "claim": cid, "variant": variant,
                        "paper": paper, "measured": m, "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                        "n": int(len(v)), "distance": d, "within": bool(d <= tol) if np.isfinite(d) else False})
    rows = pd.DataFrame(out)
    judged = rows[rows.paper.notna()]
    # rows measured under every reading: the only fair basis for a ranking
    measured = judged[np.isfinite(judged.distance.astype(float))]
    n_readings = judged.reading.nunique()
    common = {k for k, g in measured.groupby(["hypothesis", "claim", "variant"]) if g.reading.nunique() == n_readings}
    judged = judged.assign(common=[(h, c, v) in common for h, c, v in zip(judged.hypothesis, judged.claim,
                                                                        judged.variant)])
    rank = (judged.groupby(["reading", "hypothesis"], sort=False)
            .agg(score=("distance", lambda d: float(np.nanmean(d[judged.loc[d.index, "common"]]))
                        if judged.loc[d.index, "common"].any() else np.nan),
                 within=("within", lambda w: int(w[judged.loc[w.index, "common"]].sum())),
                 common_rows=("common", "sum"),
                 score_all=("distance", lambda d: float(np.nanmean(d)) if np.isfinite(d.astype(float)).any() else np.nan),
                 within_all=("within", "sum"), rows=("distance", "size"),
                 measured_rows=("distance", lambda d: int(np.isfinite(d.astype(float)).sum())))
            .reset_index().sort_values(["score", "within"], ascending=[True, False]))
    for c in ("within", "within_all", "common_rows"):
        rank[c] = rank[c].astype(int)
    return rows, rank


def render(res: ReadingsResult, top_rows: int = 1) -> str:
    """The ranking (both hypotheses) and the per-claim rows of the best reading(s)."""
    from critwin.table import format_table
    rank = res.ranking.to_dict(orient="records")
    text = ["Readings ranked by the mean |measured - paper| over the rows measured under every reading"
            " (common_rows; within: of those, rows inside the check's tolerance); score_all / within_all: over"
            " each reading's own measured rows:",
            format_table(rank, ["reading", "hypothesis", "score", "within", "common_rows", "score_all",
                                "within_all", "measured_rows", "rows"])]
    for r in rank[:top_rows]:
        sub = res.rows[(res.rows.reading == r["reading"]) & (res.rows.hypothesis == r["hypothesis"])]
        text += ["", f"Rows of the best: {r['reading']} ({r['hypothesis']})",
                 format_table(sub.to_dict(orient="records"),
                              ["claim", "variant", "paper", "measured", "sd", "n", "distance", "within"])]
    wide = res.per_run.pivot_table(index=["claim", "variant", "task_seed", "seed"], columns="reading",
                                   values="measured", sort=False).reset_index()
    text += ["", "Final OOD per run (task instance x seed) under each reading:",
             format_table(wide.to_dict(orient="records"))]
    text += res.notes
    return "\n".join(text)


