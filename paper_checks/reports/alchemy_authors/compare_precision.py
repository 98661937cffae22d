"""bf16 autocast against fp32 at the authors' recipe, by the rule the README registered before the runs:
d_prec (mean |A bf16 s0 - A fp32 s0| over the epochs all three runs have, held-out event A) must not exceed
d_seed (mean |A bf16 s0 - A bf16 s1|), and bf16 s0's escape from the plateau (first epoch with training loss
below 3.30) must come within 3 epochs of fp32 s0's.

    python3 compare_precision.py FP32_S0 BF16_S0 BF16_S1 > precision.txt

Each argument is a run's resume state (a store's .resume-ID.pt, or carry*/state.pt) or a stored run's folder.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import torch
from critwin.empirical import RunStore

STEPS_PER_EPOCH = 343
ESCAPE_LOSS = 3.30
ESCAPE_EPOCHS = 3


def rows_of(path: str) -> pd.DataFrame:
    """Every logged (step, split, metric, value) of a run, from a resume state or a stored run's folder."""
    p = Path(path)
    if p.is_dir():                          # a stored run: the store reads it
        return RunStore(p.parent).load(p.name).metrics[["step", "split", "metric", "value"]]
    return pd.DataFrame(torch.load(p, map_location="cpu", weights_only=False)["rows"],
                        columns=["step", "split", "metric", "value"])


def curve(path: str) -> pd.DataFrame:
    """Epoch -> held-out event A and training loss, from a resume state or a stored run."""
    d = {}
    for step, split, metric, value in rows_of(path).itertuples(index=False):
        if (split, metric) in (("test", "event_a"), ("train", "loss")):
            d.setdefault(int(step) // STEPS_PER_EPOCH, {})[f"{split}_{metric}"] = float(value)
    return pd.DataFrame.from_dict(d, orient="index").sort_index()


def escape(c: pd.DataFrame):
    below = c.index[(c["train_loss"] < ESCAPE_LOSS) & (c.index > 0)]
    return int(below[0]) if len(below) else None


def main(fp32_s0: str, bf16_s0: str, bf16_s1: str) -> int:
    f0, b0, b1 = curve(fp32_s0), curve(bf16_s0), curve(bf16_s1)
    common = [e for e in f0.index if e > 0 and e in b0.index and e in b1.index]
    a = pd.DataFrame({"fp32 s0": f0["test_event_a"], "bf16 s0": b0["test_event_a"],
                      "bf16 s1": b1["test_event_a"]}).loc[lambda x: x.index > 0]
    print("held-out event A by epoch (all three runs' epochs first)")
    print(a.round(3).to_string())
    d_prec = (b0.loc[common, "test_event_a"] - f0.loc[common, "test_event_a"]).abs().mean()
    d_seed = (b0.loc[common, "test_event_a"] - b1.loc[common, "test_event_a"]).abs().mean()
    e_f, e_b = escape(f0), escape(b0)
    rule1 = d_prec <= d_seed
    rule2 = None if e_f is None or e_b is None else abs(e_f - e_b) <= ESCAPE_EPOCHS
    print(f"\nepochs compared: {common[0]}-{common[-1]} ({len(common)})")
    print(f"d_prec {d_prec:.4f}  d_seed {d_seed:.4f}: rule 1 {'holds' if rule1 else 'fails'}")
    print(f"escape (train loss < {ESCAPE_LOSS}): fp32 s0 epoch {e_f}, bf16 s0 epoch {e_b}, bf16 s1 epoch "
          f"{escape(b1)}: rule 2 {'not decidable yet' if rule2 is None else 'holds' if rule2 else 'fails'}")
    verdict = "bf16 kept" if rule1 and rule2 else "bf16 not kept" if rule2 is False or not rule1 else "undecided"
    print(f"verdict: {verdict}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
