"""The calibrated held share (bridge.calibrated): its fit is the penalised likelihood's maximum (finite differences of
a likelihood written here), it recovers known coefficients, it fits each optimizer apart; and Theory III's fourth
to sixth registrations are remade from their committed inputs, so a change of clip, ridge, build data or probe
reading fails; the sixth carries the fourth's and fifth's coefficients unrefitted onto cells never measured."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from critwin.bridge.calibrated import CalibratedHeld, HeldLogistic
from critwin.errors import ConfigError

THEORY3 = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "theory3"
VERSIONS = [v for v in (4, 5, 6) if (THEORY3 / f"v{v}" / "registration.json").is_file()]


def _nll(w, held, lam, y, clip=0.01, ridge=1.0):
    h = np.clip(held, clip, 1 - clip)
    z = w[0] + w[1] * np.log(h / (1 - h)) + w[2] * np.log2(lam / 8e-3)
    return np.sum(np.log1p(np.exp(z)) - y * z) + ridge / 2 * (w[1] ** 2 + w[2] ** 2)


def _synthetic(n, coef, seed=0):
    rng = np.random.default_rng(seed)
    held = rng.uniform(0, 1, n)
    lam = rng.choice([2e-3, 8e-3, 3.2e-2], n)
    h = np.clip(held, 0.01, 0.99)
    z = coef[0] + coef[1] * np.log(h / (1 - h)) + coef[2] * np.log2(lam / 8e-3)
    return held, lam, (rng.random(n) < 1 / (1 + np.exp(-z))).astype(float)


def test_the_fit_is_the_penalised_likelihood_maximum():
    held, lam, y = _synthetic(300, (0.5, 2.0, -0.7))
    m = HeldLogistic().fit(held, lam, y)
    for i in range(3):                                   # every partial derivative vanishes at the fit
        e = np.zeros(3)
        e[i] = 1e-5
        slope = (_nll(m.coef_ + e, held, lam, y) - _nll(m.coef_ - e, held, lam, y)) / 2e-5
        assert abs(slope) < 1e-3
    rng = np.random.default_rng(1)
    assert all(_nll(m.coef_, held, lam, y) <= _nll(m.coef_ + rng.normal(0, 0.05, 3), held, lam, y) for _ in range(50))


def test_the_fit_recovers_known_coefficients():
    held, lam, y = _synthetic(40000, (0.5, 2.0, -0.7), seed=2)
    m = HeldLogistic().fit(held, lam, y)
    assert m.coef_ == pytest.approx([0.5, 2.0, -0.7], abs=0.08)
    p = m.predict_proba([0.2, 0.5, 0.8], 8e-3)
    assert (np.diff(p) > 0).all()                        # more held, more composing
    with pytest.raises(ConfigError):
        HeldLogistic().fit([0.1, 0.9], [8e-3, 8e-3], [1, 1])
    with pytest.raises(ConfigError):
        m.predict_proba([0.5], [0.0])


def test_the_training_accuracy_terms_are_fitted_where_asked():
    rng = np.random.default_rng(5)
    held, lam, _ = _synthetic(40000, (0, 0, 0), seed=6)
    tr = rng.uniform(0, 1, len(held))
    h = np.clip(held, 0.01, 0.99)
    ll = np.log2(lam / 8e-3)
    z = -1.0 + 1.0 * np.log(h / (1 - h)) - 0.4 * ll + 2.0 * tr + 1.5 * tr * ll
    y = (rng.random(len(z)) < 1 / (1 + np.exp(-z))).astype(float)
    m = HeldLogistic(train=True).fit(held, lam, y, tr)
    assert m.coef_ == pytest.approx([-1.0, 1.0, -0.4, 2.0, 1.5], abs=0.1)
    with pytest.raises(ConfigError, match="train_acc"):
        m.predict_proba([0.5], [8e-3])
    runs = pd.DataFrame({"optimizer": "adamw", "held_max": held, "lambda": lam, "composes": y})
    with pytest.raises(ConfigError, match="train_acc"):
        CalibratedHeld(("adamw",)).fit(runs)
    cal = CalibratedHeld(("adamw",)).fit(runs.assign(train_acc=tr))
    assert cal.models_["adamw"].coef_ == pytest.approx(m.coef_)
    assert set(cal.coefficients()["adamw"]) == {"intercept", "logit_held", "log2_lambda", "train_acc",
                                                "train_acc_x_log2_lambda", "runs"}


def test_each_optimizer_is_fitted_apart():
    a = _synthetic(4000, (2.0, 1.0, 1.0), seed=3)
    s = _synthetic(4000, (-1.0, 3.0, 0.0), seed=4)
    runs = pd.concat([pd.DataFrame({"optimizer": o, "held_max": h, "lambda": lam, "composes": y})
                      for o, (h, lam, y) in (("adamw", a), ("sgd", s))])
    cal = CalibratedHeld().fit(runs)
    alone = HeldLogistic().fit(*s)
    assert cal.models_["sgd"].coef_ == pytest.approx(alone.coef_)
    assert cal.predict_proba("adamw", [0.3], 3.2e-2)[0] > 0.8 > 0.2 > cal.predict_proba("sgd", [0.3], 3.2e-2)[0]
    assert cal.coefficients()["sgd"]["runs"] == 4000
    with pytest.raises(ConfigError, match="optimizer"):
        cal.predict_proba("lion", [0.3], 8e-3)
    with pytest.raises(ConfigError, match="composes"):
        CalibratedHeld().fit(runs.drop(columns="composes"))


def test_a_registered_calibration_predicts_again_unrefitted():
    """From the coefficients a registration records, the same P as the fitted calibration; with the training terms
    only for the optimizers named; a record missing a coefficient is refused, naming it."""
    a, s = _synthetic(3000, (1.0, 2.0, 0.5), seed=7), _synthetic(3000, (-0.5, 1.0, -1.0), seed=8)
    tr = np.random.default_rng(9).uniform(0, 1, 3000)
    runs = pd.concat([pd.DataFrame({"optimizer": o, "held_max": h, "lambda": lam, "composes": y, "train_acc": tr})
                      for o, (h, lam, y) in (("adamw", a), ("sgd", s))])
    cal = CalibratedHeld(("adamw",)).fit(runs)
    record = json.loads(json.dumps(cal.coefficients()))        # as a registration stores it
    again = CalibratedHeld.from_coefficients(record, ("adamw",))
    for o, (h, lam, _) in (("adamw", a), ("sgd", s)):
        assert again.predict_proba(o, h, lam, tr) == pytest.approx(cal.predict_proba(o, h, lam, tr), abs=1e-12)
    w = record["adamw"]
    assert again.predict_proba("adamw", [0.3], 3.2e-2, [0.9])[0] == pytest.approx(
        1 / (1 + np.exp(-_z(w, 0.3, 3.2e-2, 0.9))), abs=1e-12)
    del record["sgd"]["log2_lambda"]
    with pytest.raises(ConfigError, match="log2_lambda"):
        CalibratedHeld.from_coefficients(record)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_later_registration_is_remade_from_its_committed_inputs(version):
    """Its build runs are the panel's measured runs of the cells before it; its coefficients are their fit; its
    per-run predictions are the calibration of each run's own running maximum held share (and, where it reads it,
    the run's training accuracy at the onset in its own probe)."""
    from critwin.bridge.panel import load_probes
    folder = THEORY3 / f"v{version}"
    reg = json.loads((folder / "registration.json").read_text())
    reg3 = json.loads((THEORY3 / "registration.json").read_text())
    runs = pd.read_csv(folder / "registration_runs.csv")
    build = pd.read_csv(folder / "build_runs.csv")
    method, terms = reg["methods"][0], reg.get("train_terms", [])
    ids = [c["id"] for c in reg3["cells"]]
    scored = [c["id"] for c in reg["cells"]]
    panel = [c for c in scored if c in ids]
    assert scored == panel + reg.get("extension", {}).get("cells", [])    # the extension's cells after the panel's
    assert panel == ids[ids.index(panel[0]):]                            # the panel's order from the first scored cell
    assert set(build["cell"]) <= set(ids[:ids.index(panel[0])])           # build runs come from earlier cells only
    assert len(runs) == 54 * len(scored) and set(runs["cell"]) == set(scored)
    keys = ["cell", "onset", "task_seed", "seed"]
    measured = pd.concat([pd.read_csv(THEORY3 / "measured" / f"{c}.csv") for c in build["cell"].unique()])
    both = build.merge(measured, on=keys, suffixes=("", "_m"))
    assert len(both) == len(build) and (both["ood_acc"] == both["ood_acc_m"]).all()
    v3 = pd.read_csv(THEORY3 / "registration_runs.csv")
    assert (build.merge(v3, on=keys, suffixes=("", "_v3")).eval("held_max == held_max_v3")).all()
    probes = load_probes(THEORY3 / "probes")

    def train_acc(optimizer, gamma, ts, s, onset):
        c = probes[(optimizer, float(gamma), int(ts), int(s))]
        return c["train_acc"][int(np.flatnonzero(np.asarray(c["step"]) <= onset)[-1])]
    if terms:
        for r in build.sample(40, random_state=1).itertuples():
            assert r.train_acc == pytest.approx(train_acc(r.optimizer, r.gamma, r.task_seed, r.seed, r.onset), abs=1e-5)
    cal = CalibratedHeld(terms).fit(build.assign(composes=(build["ood_acc"] >= 0.5).astype(float)))
    for o, c in cal.coefficients().items():
        assert c == pytest.approx(reg["calibration"][o], abs=1e-6)
    pinned = runs.merge(v3, on=keys, suffixes=("", "_v3"))
    assert (pinned["held_max"] - pinned["held_max_v3"]).abs().max() < 1e-4  # the same reading of the same probe
    cells = {c["id"]: c for c in reg["cells"]}
    for r in pinned.sample(60, random_state=0).itertuples():
        cell = cells[r.cell]
        w = reg["calibration"][cell["optimizer"]]
        tr = train_acc(cell["optimizer"], cell["gamma"], r.task_seed, r.seed, r.onset)
        p = 1 / (1 + np.exp(-_z(w, r.held_max_v3, cell["lambda"], tr)))
        assert getattr(r, method) == pytest.approx(p, abs=1e-4)


@pytest.mark.skipif(6 not in VERSIONS, reason="the sixth version is not registered in this checkout")
def test_the_sixth_version_scores_earlier_versions_unrefitted_on_new_cells():
    """Its extension cells are the panel's optimizers and gammas at lambdas no cell was measured at (neither the
    panel's nor Theory II's), read from the panel's 48 probes rerun (the same curves at the panel's lambdas, stored
    beside the new ones); on the panel cells it shares with the fourth and fifth versions their methods' per-run
    P are the ones those registered; on its extension cells held_max is the running maximum of the run's own held
    share at the cell's lambda in the rerun probes (step 0's transient replaced by the next state's), and the carried
    methods are the earlier coefficients applied to it."""
    from critwin.bridge.panel import load_probes
    reg = json.loads((THEORY3 / "v6" / "registration.json").read_text())
    runs = pd.read_csv(THEORY3 / "v6" / "registration_runs.csv")
    ext = reg["extension"]
    cells = {c["id"]: c for c in reg["cells"]}
    settings = {(cells[c]["optimizer"], cells[c]["gamma"], cells[c]["lambda"]) for c in ext["cells"]}
    assert settings == {(o, g, lam) for o in ext["optimizers"] for g in ext["gammas"] for lam in ext["lambdas"]}
    reg3 = json.loads((THEORY3 / "registration.json").read_text())
    theory2 = pd.read_csv(THEORY3 / "build_cells.csv")
    before = {(c["optimizer"], c["gamma"], c["lambda"]) for c in reg3["cells"]}
    before |= set(zip(theory2["optimizer"], theory2["gamma"], theory2["lambda"]))
    assert not settings & before
    keys = ["cell", "onset", "task_seed", "seed"]
    for name, v in reg["frozen"].items():
        earlier = pd.read_csv(THEORY3 / f"v{v}" / "registration_runs.csv")[keys + [name]]
        both = runs[keys + [name]].merge(earlier, on=keys, suffixes=("", "_then"))
        assert len(both) == 54 * len(set(both["cell"])) > 0
        assert (both[name] - both[f"{name}_then"]).abs().max() < 1e-4
    probes, panel = load_probes(THEORY3 / ext["probes"]), load_probes(THEORY3 / "probes")
    assert probes.keys() == panel.keys()                 # the same 48 runs, rerun: at the panel's lambdas, the same
    for key, c in panel.items():
        for k, v in c.items():
            assert np.asarray(probes[key][k], float) == pytest.approx(np.asarray(v, float), abs=1e-6), (key, k)
    for r in runs[runs["cell"].isin(ext["cells"])].sample(80, random_state=2).itertuples():
        cell = cells[r.cell]
        c = probes[(cell["optimizer"], float(cell["gamma"]), int(r.task_seed), int(r.seed))]
        share = np.asarray(c[f"attn_{cell['lambda']:g}"], float)
        share[0] = share[1]
        i = int(np.flatnonzero(np.asarray(c["step"]) <= r.onset)[-1])
        assert r.held_max == pytest.approx(share[:i + 1].max(), abs=1e-5)
        for name, v in reg["frozen"].items():
            w = json.loads((THEORY3 / f"v{v}" / "registration.json").read_text())["calibration"][cell["optimizer"]]
            p = 1 / (1 + np.exp(-_z(w, share[:i + 1].max(), cell["lambda"], c["train_acc"][i])))
            assert getattr(r, name) == pytest.approx(p, abs=1e-4)


def _z(w, held, lam, train):
    h = min(max(held, 0.01), 0.99)
    ll = np.log2(lam / 8e-3)
    return (w["intercept"] + w["logit_held"] * np.log(h / (1 - h)) + w["log2_lambda"] * ll
            + w.get("train_acc", 0.0) * train + w.get("train_acc_x_log2_lambda", 0.0) * train * ll)
