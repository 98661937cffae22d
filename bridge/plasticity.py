"""The plasticity window of a component: freeze it from each step t_f on, train the frozen runs (branched from
the baseline's checkpoints where it has them) and read how much later the stage completes than in the unfrozen
baseline (`plasticity_window`). The stage times come from the stage detectors (`empirical.metrics.stages.stage_time`)."""
from __future__ import annotations

import numpy as np

from critwin.empirical.metrics.stages import check_method, stage_time
from critwin.errors import ConfigError


def plasticity_configs(base: dict, component: str, freeze_steps, seeds, branch: bool = True,
                       freeze_optimizer: str | None = None) -> dict:
    """{(t_f or None for the baseline, seed): config}: baselines from the flat config `base` (with
    a checkpoint at every t_f when branching, beside those it asks for) and the runs frozen from
    each t_f (`frozen_configs`)."""
    from critwin.empirical.sweep import config_from_flat
    points = sorted({int(tf) for tf in freeze_steps if tf >= 1} | set(base.get("checkpoints") or ())) if branch else []
    baselines = {s: config_from_flat({**base, "seed": s, **({"checkpoints": points} if points else {})}) for s in seeds}
    return frozen_configs(baselines, component, freeze_steps, freeze_optimizer=freeze_optimizer)


def frozen_configs(baselines: dict, component: str, freeze_steps, branch: bool = True,
                   freeze_optimizer: str | None = None) -> dict:
    """{(None, seed): baseline} and, per t_f and seed, the baseline with `component` frozen from
    t_f on: branched from the baseline's checkpoint at t_f where it has one (and `branch`), else
    trained from step 0; `freeze_optimizer` (keep / rebuild) for the frozen runs only, where the
    baseline's own is not the one wanted (a baseline without freezes is the same run either way)."""
    from dataclasses import replace
    cfgs = {(None, s): b for s, b in baselines.items()}
    for tf in freeze_steps:
        tf = int(tf)
        for s, b in baselines.items():
            cfgs[(tf, s)] = replace(b, checkpoints=(), freeze=b.freeze + ((component, tf),),
                                    branch=f"{b.run_id()}@{tf}" if branch and tf in b.checkpoints else None,
                                    freeze_optimizer=freeze_optimizer or b.freeze_optimizer)
    return cfgs


def train_plasticity(grids: list, store, executor=None, progress: bool = True, pause=None) -> None:
    """Train the runs of one or more plasticity grids (`plasticity_configs` dicts): the baselines first, then
    in one sweep every frozen run whose source checkpoint is there, latest branch first, so that the frozen
    runs of several components share the workers instead of waiting component by component."""
    from critwin.empirical.sweep import run_sweep
    base = {c.run_id(): c for g in grids for k, c in g.items() if k[0] is None}
    frozen = {c.run_id(): c for g in grids for k, c in g.items() if k[0] is not None}
    run_sweep(list(base.values()), store, executor, progress=progress)   # the frozen runs start from their checkpoints
    # a branch of a baseline that failed would be stored as failed (and not retried): leave it for next time
    have = {src: set(store.checkpoint_steps(src)) for src in
            {c.branch_point()[0] for c in frozen.values() if c.branch}
            if store.status(src) in (None, "complete", "paused")}
    ready = [c for c in frozen.values() if c.branch is None or c.branch_point()[1] in have.get(c.branch_point()[0], ())]
    # latest branch first: under a stage pause a late branch inherits its stage complete and settles at once
    ready.sort(key=lambda c: -(c.branch_point()[1] if c.branch else 0))
    run_sweep(ready, store, executor, progress=progress, pause=pause)


def plasticity_window(cfgs: dict, store, metric: str = "event_c", split: str = "test", delay: float = 0.0,
                      n: int = 3, executor=None, train: bool = True, progress: bool = True,
                      method: str = "threshold", pause=None):
    """Per run of `cfgs` (`plasticity_configs` or `frozen_configs`): freeze a component from each
    step t_f to the end, detect the stage of `metric` per run (the threshold rule, or where the
    curve's last change-point rise completes), and compare with the unfrozen baseline: delta =
    stage time (frozen) - stage time (baseline), a stage never reached counting as the end of
    training. The window is the t_f where the mean delta over seeds exceeds `delay`; `final_mean`
    is the curve's last value (freezing may lower the level reached rather than delay it). Frozen runs
    that branch from the baseline's checkpoint at t_f have the same numbers as training them
    from step 0, at up to half the cost, and may start while the baseline still trains (its resume
    state holds the checkpoint). `pause` (empirical.sweep.Pause) pauses the frozen runs, say at a cap
    or once the stage is reached (`StageReached`). A run still in training or paused is read as far
    as it got (`step`): a stage it has not reached counts as that step (`censored`), so its delay is
    a lower bound, and `settled` says whether more training could still change what it reads."""
    import pandas as pd
    check_method(method)
    if train:
        train_plasticity([cfgs], store, executor, progress, pause)
    rows = []
    for (tf, s), c in cfgs.items():
        got = store.so_far(c.run_id())
        if got is None:
            continue
        m, step, _, status = got
        done = status == "complete"
        curve = m[(m.split == split) & (m.metric == metric)].sort_values("step")
        if curve.empty:
            raise ConfigError("metric", metric, f"a curve the runs log on split '{split}'")
        t = stage_time(curve.step, curve.value, metric, method, n)
        # settled: no more training can change what is read, or the pause trains it no further
        # (stored; a threshold stage reached; at the pause's step; its rule holds)
        settled = done or (method == "threshold" and np.isfinite(t)) or (pause is not None and pause.settles(m, step))
        rows.append({"freeze_step": tf, "seed": s, "stage_step": t, "step": step, "censored": not np.isfinite(t),
                     "settled": bool(settled),
                     "stage_or_end": t if np.isfinite(t) else float(c.steps if done else step),
                     "final": float(curve.value.iloc[-1])})
    per_run = pd.DataFrame(rows, columns=["freeze_step", "seed", "stage_step", "step", "censored", "settled",
                                          "stage_or_end", "final"])
    if per_run.empty:
        return per_run, pd.DataFrame()
    base_t = per_run[per_run.freeze_step.isna()].set_index("seed").stage_or_end
    fr = per_run[per_run.freeze_step.notna()].copy()
    fr["delta"] = fr.stage_or_end - fr.seed.map(base_t)
    table = (fr.groupby("freeze_step").agg(delta_mean=("delta", "mean"), delta_max=("delta", "max"),
                                           reached=("stage_step", lambda v: float(np.isfinite(v).mean())),
                                           final_mean=("final", "mean"), seeds=("seed", "size")).reset_index())
    table["in_window"] = table.delta_mean > delay
    return per_run, table


def _freeze_grid(start: int, stop: int, every: int) -> list[int]:
    if every is None or every < 1 or stop <= start:
        raise ConfigError("every", every, "a positive step between --start and a larger --stop")
    return list(range(start, stop + 1, every))


