import sys, torch, pandas as pd
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
