"""Dense logging of the first steps of the permutation anchor task: no decay and an L2 penalty
(4e-3, non_embedding) from onsets 0 / 125 / 250, 3 task instances x seed 0, logged every 10 steps.
Run: python probe_first_steps.py GAMMA STEPS (writes probe1_gGAMMA_STEPS.parquet here). A window that covers the
rest of a short run trains exactly like the first steps of the 20k-step runs (constant learning rate)."""
import sys

import pandas as pd
import torch

torch.set_num_threads(1)
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.train import train

gamma = float(sys.argv[1]); steps = int(sys.argv[2])
rows = []
for ts in (0, 1, 2):
    for onset in (None, 0, 125, 250):
        flat = dict(gamma=gamma, task_seed=ts, steps=steps, eval_every=10)
        if onset is not None:
            flat.update(wd=4e-3, wd_window_start=onset, wd_width=steps - onset, decay_form="l2", decay_set="non_embedding")
        run = train(config_from_flat(flat), progress=False)
        m = run.metrics
        m = m[m.split.isin(["train", "ood", "model", "optim"])]
        m = m.assign(task_seed=ts, onset=-1 if onset is None else onset)
        rows.append(m)
        print(ts, onset, run.summary["final"]["train_acc"], run.summary["final"]["ood_acc"], flush=True)
pd.concat(rows).to_parquet(f"probe1_g{gamma}_{steps}.parquet")
