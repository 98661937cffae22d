"""Where event-A failures come from (issue 11): trains trial G (d 64, 2 layers, post-LN, sinusoidal positions,
the /work/runs/alch_I.toml base at 2 layers) for N epochs, then splits held-out and training predictions into
event A, right features with the wrong reward, and features no stone of the chemistry has, by rotation.
Run: python diagnose_event_a.py N [TOML] (~7 min for N = 15 on a busy core)."""
import io, sys, collections, numpy as np, torch
torch.set_num_threads(1)
from critwin.empirical.sweep import SweepSpec
from critwin.empirical.train import train, initial_model
from critwin.empirical.tasks.alchemy import support_and_query
from critwin.empirical.tasks.alchemy_chemistry import Chemistry
spec = SweepSpec.from_toml(sys.argv[2] if len(sys.argv) > 2 else '/work/runs/alch_I.toml')
base = dict(spec.base); base.update(layers=2, steps=343*int(sys.argv[1]), checkpoints=[343*int(sys.argv[1])])
cfg = SweepSpec(base).expand()[0]
run = train(cfg, progress=False)
print("final", {k: round(v, 3) for k, v in run.summary["final"].items() if "event" in k or k.endswith("acc")})
model, data = initial_model(cfg)
st = torch.load(io.BytesIO(run.checkpoints[cfg.steps]), weights_only=False)
model.load_state_dict(st["model"]); model.eval()

for name in ("test", "train"):
    sp = data.splits[name].sample(1320)
    with torch.no_grad():
        pred = torch.cat([model(torch.as_tensor(sp.inputs[i:i+256]), torch.as_tensor(sp.extra["lengths"][i:i+256])).argmax(-1) for i in range(0, len(sp.targets), 256)]).numpy()
    stones = sp.extra["chemistry_stones"]
    kinds = collections.Counter(); by_rot = collections.defaultdict(list)
    for i, cid in enumerate(sp.extra["chemistry"].tolist()):
        rot = Chemistry.from_id(cid).rotation
        a = pred[i] in stones[i]; by_rot[rot].append(a)
        feats = set(s // 4 for s in stones[i])
        kinds["A" if a else ("right features, wrong reward" if pred[i] // 4 in feats else "features of no stone")] += 1
    print(name, "exact", round(float((pred == sp.targets).mean()), 3), {k: round(v / len(pred), 3) for k, v in kinds.items()},
          "A by rotation", {r: round(float(np.mean(v)), 3) for r, v in sorted(by_rot.items())})
