"""Left edges of the L2 window from no-decay runs: the composition model read coordinate by coordinate.

Short no-decay probes (the paper-size anchor task) keep a state every few steps; at each, the held share of
the attention weights the loss grows (empirical.metrics.survival) is measured for each lambda, averaged
over task instances and seeds, and theory.composition.survival_edge reads the predicted left edge off the
curve. Nothing is fitted: lambda is the penalty's own value and the level 1/2 comes from Adam's sign limit.
"""
from __future__ import annotations

import io

import numpy as np
import torch
from critwin.empirical.metrics.survival import held_share
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import batch_loss, initial_model, train
from critwin.theory.composition import HELD_LEVEL, survival_edge

from critwin.errors import ConfigError

# optimizer -> (config keys, probe steps, state every): AdamW as in the paper, SGD with momentum as in W9
PROBES = {"adamw": ({"lr": 3e-3}, 600, 10),
          "sgd": ({"optimizer": "sgd", "lr": 0.1, "momentum": 0.9}, 1000, 20)}


def probe_config(optimizer: str, gamma: float, task_seed: int, seed: int, steps: int | None = None):
    """The no-decay probe run: paper-size anchor task, a state kept every few steps (in memory). `steps`
    shortens it (default: PROBES'); a shorter probe is the same run cut early, so an edge inside it is
    the same edge."""
    if optimizer not in PROBES:
        raise ConfigError("optimizer", optimizer, "one of " + ", ".join(PROBES))
    extra, default_steps, every = PROBES[optimizer]
    steps = default_steps if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= every:
        raise ConfigError("steps", steps, f"a whole number of steps > {every} (a state every {every})")
    return config_from_flat({"task": "anchor_permutation", "gamma": gamma, "task_seed": task_seed, "seed": seed,
                             "steps": steps, "eval_every": steps, **extra,
                             "checkpoints": list(range(every, steps, every))})


def states_along(cfg):
    """Train `cfg` (its checkpoints kept in memory) and yield (step, model, data) at step 0 and at each
    checkpoint, the model loaded with that step's weights and in eval mode."""
    run = train(cfg, progress=False)
    model, data = initial_model(cfg)
    states = {0: None, **run.checkpoints}
    for step in sorted(states):
        if states[step] is not None:
            blob = torch.load(io.BytesIO(states[step]), map_location="cpu", weights_only=False)
            model.load_state_dict(blob["model"])
        model.eval()
        yield step, model, data


def accuracy(model, split) -> float:
    """Exact-match accuracy of the last-position prediction on a whole split."""
    with torch.no_grad():
        return float((model(torch.as_tensor(split.inputs)).argmax(-1) == torch.as_tensor(split.targets)).float().mean())


def held_curves(cfg, lams) -> dict:
    """Train one probe; at step 0 and each kept state: train accuracy, grown share and held share per lambda
    (attention and MLP). Returns lists keyed 'step', 'train_acc', 'attn_grown', 'attn_<lam>', ..."""
    out: dict[str, list] = {"step": [], "train_acc": []}
    for step, model, data in states_along(cfg):
        split = data.splits["train"]
        x, y = torch.as_tensor(split.inputs), torch.as_tensor(split.targets)
        shares = held_share(model, lambda m: batch_loss(m, x, y), lams)
        out["step"].append(step)
        out["train_acc"].append(accuracy(model, split))
        for grp, row in shares.items():
            out.setdefault(f"{grp}_grown", []).append(row["grown"])
            for lam in lams:
                out.setdefault(f"{grp}_{float(lam):g}", []).append(row[float(lam)])
    return out


def mean_curves(curves: list[dict]) -> dict:
    """Average probes logged at the same steps."""
    steps = curves[0]["step"]
    if any(c["step"] != steps for c in curves):
        raise ConfigError("curves", "steps differ", "probes of one optimizer, logged at the same steps")
    return {k: (steps if k == "step" else list(np.mean([c[k] for c in curves], axis=0))) for k in curves[0]}


def predict_left_edges(curves: dict, lams, group: str = "attn") -> dict:
    """{lam: predicted left edge (steps) or None (no onset's penalty is outpulled within the probe)}."""
    return {float(lam): survival_edge(curves["step"], curves[f"{group}_{float(lam):g}"], HELD_LEVEL) for lam in lams}


def predict(optimizers, gammas, lams, task_seeds, seeds, progress=None, steps: int | None = None
            ) -> tuple[list[dict], dict]:
    """Probe every (optimizer, gamma) over task instances x seeds; rows of predicted left edges and the
    mean curves they were read from."""
    rows, curves = [], {}
    for opt in optimizers:
        for g in gammas:
            runs = []
            for ts in task_seeds:
                for s in seeds:
                    runs.append(held_curves(probe_config(opt, g, ts, s, steps), lams))
                    if progress:
                        progress(f"probed {opt} gamma {g} task {ts} seed {s}")
            mean = mean_curves(runs)
            curves[f"{opt} gamma {g:g}"] = mean
            for lam, edge in predict_left_edges(mean, lams).items():
                rows.append({"optimizer": opt, "gamma": g, "lambda": lam, "predicted_left_edge": edge,
                             "probe_steps": steps or PROBES[opt][1], "probes": len(runs)})
    return rows, curves


__all__ = ["PROBES", "accuracy", "held_curves", "mean_curves", "predict", "predict_left_edges", "probe_config", "states_along"]
