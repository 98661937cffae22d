"""Where event-A failures come from: the predictions on 1,320 held-out and 1,320 training
queries split into event A, right features with the wrong reward, and features no stone of the
chemistry has, and event A by rotation.

Run:
  python diagnose_event_a.py train N     # trial I's spec (trial_I.toml, beside this file) at 2 layers
                                         # (trial G), trained N epochs here (~7 min for N = 15, busy core)
  python diagnose_event_a.py state STORE [SPEC]  # the model of SPEC's run (default trial_I.toml) as its
                                                # resume state in STORE left it
  python diagnose_event_a.py curve STORE SPEC   # the per-epoch event curves in that resume state
"""
import collections
import io
import sys
from pathlib import Path

import numpy as np
import torch
from critwin.empirical.store import RunStore
from critwin.empirical.sweep import SweepSpec
from critwin.empirical.tasks.alchemy_chemistry import Chemistry
from critwin.empirical.train import initial_model, train

SPEC = Path(__file__).with_name("trial_I.toml")
STEPS_PER_EPOCH = 343


def model_after_training(epochs: int):
    base = dict(SweepSpec.from_toml(SPEC).base)
    steps = STEPS_PER_EPOCH * epochs
    cfg = SweepSpec({**base, "layers": 2, "steps": steps, "checkpoints": [steps]}).expand()[0]
    run = train(cfg, progress=False)
    print("final", {k: round(v, 3) for k, v in run.summary["final"].items() if "event" in k or k.endswith("acc")})
    return cfg, torch.load(io.BytesIO(run.checkpoints[steps]), weights_only=False)["model"]


def resume_state(store: str, spec: str | Path = SPEC):
    """The config of SPEC's run and the resume state its (killed) training left in STORE."""
    cfg = SweepSpec.from_toml(spec).expand()[0]
    return cfg, torch.load(RunStore(store).resume_path(cfg.run_id()), map_location="cpu", weights_only=False)


def model_from_resume_state(store: str, spec: str | Path = SPEC):
    cfg, state = resume_state(store, spec)
    print(f"resume state at step {state['step']} (epoch {state['step'] / STEPS_PER_EPOCH:.1f})")
    return cfg, state["model"]


def curve(store: str, spec: str) -> None:
    """Held-out and training events per evaluation, from a (killed) run's resume state."""
    cfg, state = resume_state(store, spec)
    by = collections.defaultdict(dict)
    for step, split, metric, value in state["rows"]:
        by[step][f"{split}_{metric}"] = value
    print(f"{cfg.run_id()}: resume state at step {state['step']}")
    for step in sorted(by)[1:]:
        r = by[step]
        print(f"  epoch {step / STEPS_PER_EPOCH:5.1f}  held-out A {r['test_event_a']:.3f} exact {r['test_event_c']:.3f}"
              f" P(B|A) {r['test_p_b_given_a']:.3f} P(C|A,B) {r['test_p_c_given_ab']:.3f}"
              f" | training A {r['train_event_a']:.3f} exact {r['train_event_c']:.3f}")


def diagnose(cfg, weights) -> None:
    model, data = initial_model(cfg)
    model.load_state_dict(weights)
    model.eval()
    for name in ("test", "train"):
        sp = data.splits[name].sample(1320)
        with torch.no_grad():
            pred = torch.cat([model(torch.as_tensor(sp.inputs[i:i + 256]),
                                    torch.as_tensor(sp.extra["lengths"][i:i + 256])).argmax(-1)
                              for i in range(0, len(sp.targets), 256)]).numpy()
        stones = sp.extra["chemistry_stones"]
        kinds, by_rot = collections.Counter(), collections.defaultdict(list)
        for i, cid in enumerate(sp.extra["chemistry"].tolist()):
            a = pred[i] in stones[i]
            by_rot[Chemistry.from_id(cid).rotation].append(a)
            feats = {s // 4 for s in stones[i]}       # class = features * 4 + reward index
            kinds["A" if a else ("right features, wrong reward" if pred[i] // 4 in feats else "features of no stone")] += 1
        print(name, "exact", round(float((pred == sp.targets).mean()), 3),
              {k: round(v / len(pred), 3) for k, v in kinds.items()},
              "A by rotation", {r: round(float(np.mean(v)), 3) for r, v in sorted(by_rot.items())})


if __name__ == "__main__":
    torch.set_num_threads(1)
    mode, arg = sys.argv[1], sys.argv[2]
    if mode == "curve":
        curve(arg, sys.argv[3])
    else:
        diagnose(*(model_after_training(int(arg)) if mode == "train" else model_from_resume_state(arg, *sys.argv[3:4])))
