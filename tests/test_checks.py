import json

import pytest

from critwin.cli.main import main
from critwin.paper_checks import CHECKS, verdict


def row(measured, paper, sd=0.0, n=3):
    return {"measured": measured, "paper": paper, "sd": sd, "n": n}


def test_verdict_rule():
    assert verdict([row(0.90, 0.93), row(0.88, 0.91)], 0.1) == "reproduced"
    assert verdict([row(0.40, 0.93, sd=0.01)], 0.1) == "not reproduced"
    assert verdict([row(0.80, 0.93, sd=0.3)], 0.1) == "inconclusive"   # 0.13 > 0.1 but within 2 se
    assert verdict([row(float("nan"), 0.93)], 0.1) == "inconclusive"
    # a claim is a conjunction: one value clearly outside decides, even beside one not measured
    assert verdict([row(float("nan"), 0.93), row(0.23, 1.0)], 0.1) == "not reproduced"
    assert verdict([row(float("nan"), 0.93), row(0.95, 1.0)], 0.1) == "inconclusive"


def test_quick_configs_scale_time_only():
    cfgs = CHECKS["W4"].configs("quick")
    assert len(cfgs) == 3 and all(c.steps == 2000 for c in cfgs.values())
    assert {c.wd_windows[0][:2] for c in cfgs.values()} == {(0.0, 500.0), (10.0, 510.0), (40.0, 540.0)}
    assert {c.wd_windows[0][2] for c in cfgs.values()} == {4e-3}
    paper = CHECKS["W3"].configs("paper")
    assert len(paper) == 18 * 3 and {round(c.wd_windows[0][2] * (c.wd_windows[0][1] - c.wd_windows[0][0]), 6)
                                 for c in paper.values()} == {20.0}


def test_t1_check(capsys, tmp_path):
    code = main(["check", "T1", "--results", str(tmp_path), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["verdict"] in ("reproduced", "not reproduced")
    assert (tmp_path / "T1_quick.json").exists() and (tmp_path / "T1_quick.csv").exists()
    assert (tmp_path / "T1_quick.png").stat().st_size > 1000


@pytest.mark.slow
def test_quick_empirical_check_runs_end_to_end(capsys, tmp_path):
    code = main(["check", "W2", "--size", "quick", "--store", str(tmp_path / "runs"), "--results",
                 str(tmp_path / "res"), "--workers", "2", "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["verdict"].endswith("(quick size: not evidence)")
    assert {r["value"] for r in d["rows"]} == {"window [0,5000) 4e-3", "no decay"}
    assert all(r["n"] == 1 and 0 <= r["measured"] <= 1 for r in d["rows"])
    saved = json.loads((tmp_path / "res" / "W2_quick.json").read_text())
    assert (tmp_path / "res" / "W2_quick.png").stat().st_size > 1000
    assert saved["command"].startswith("critwin check W2")


def test_unknown_check_names_what_exists(capsys):
    code = main(["check", "W99", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 2 and d["field"] == "id" and "W1" in d["allowed"] and "S1" in d["allowed"]


def test_ranges_in_the_verdict_rule():
    from critwin.paper_checks.base import distance
    assert distance(0.9, (0.85, 0.93)) == 0 and distance(0.8, (0.85, 0.93)) == pytest.approx(0.05)
    assert verdict([row(0.88, (0.85, 0.93))], 0.1) == "reproduced"


def test_every_registered_check_expands():
    for cid, chk in CHECKS.items():
        if hasattr(chk, "variants"):
            assert len(chk.configs("paper")) == len(chk.variants) * chk.seeds * chk.task_seeds, cid
        elif hasattr(chk, "conditions"):           # the Alchemy checks: conditions x seeds, every size
            for size, seeds in (("quick", 1), ("cpu", chk.seeds), ("paper", chk.seeds)):
                assert len(chk.configs(size)) == len(chk.conditions) * seeds, cid


def test_wd_scale_is_a_labelled_variation():
    base = CHECKS["W1"].configs("paper")
    scaled = CHECKS["W1"].configs("paper", wd_scale=10.0)
    for k in base:
        assert [w[2] * 10 for w in base[k].wd_windows] == pytest.approx([w[2] for w in scaled[k].wd_windows])


def test_verdict_skips_unjudged_rows_and_uses_row_tolerance():
    assert verdict([row(0.90, 0.93), row(0.1, None)], 0.1) == "reproduced"
    assert verdict([{**row(40.0, 42.4), "tolerance": 4.24}], 0.1) == "reproduced"
    assert verdict([{**row(30.0, 42.4), "tolerance": 4.24}], 0.1) == "not reproduced"


class _FakeRun:
    def __init__(self, ood, cond_at_4000):
        import pandas as pd
        self.summary = {"final": {"ood_acc": ood}}
        self.metrics = pd.DataFrame({"step": [0, 4000, 20000], "split": ["model"] * 3,
                                     "metric": ["condensation"] * 3, "value": [46.0, cond_at_4000, 20.0]})


class _FakeStore:
    def __init__(self, runs):
        self.runs = runs

    def status(self, run_id):
        return "complete" if run_id in self.runs else None

    def load(self, run_id):
        return self.runs[run_id]

    def complete(self, run_id):
        return self.runs.get(run_id)


def test_w10_rows_read_condensation_at_a_fifth_and_rank_correlate():
    from scipy.stats import spearmanr
    chk = CHECKS["W10"]
    cfgs = chk.configs("paper")
    conds = {k: 40.0 - 4 * i + k[2] for i, k in enumerate(cfgs)}        # decreasing with lambda
    oods = {k: 0.1 + 0.05 * ((i * 7) % 5) for i, k in enumerate(cfgs)}
    store = _FakeStore({c.run_id(): _FakeRun(oods[k], conds[k]) for k, c in cfgs.items()})
    rows = {r["value"]: r for r in chk.extra_rows(store, cfgs)}
    first = [k for k in cfgs if k[0] == "lambda 0"]
    assert rows["C(0.2T) lambda 0"]["measured"] == pytest.approx(sum(conds[k] for k in first) / len(first))
    rho = rows["Spearman rho(C(0.2T), final OOD) over runs"]
    assert rho["n"] == len(cfgs)
    assert rho["measured"] == pytest.approx(spearmanr([conds[k] for k in cfgs], [oods[k] for k in cfgs]).statistic)


def test_w6_judges_only_plateau_onsets():
    chk = CHECKS["W6"]
    judged = {k for k, v in chk.paper.items() if v is not None}
    assert judged == {f"gamma {g} onset {o}" for g in (0.5, 0.8, 1.1) for o in (2500, 7500, 12500)}
    w5 = {c.run_id() for c in CHECKS["W5"].configs("paper").values()}
    w6 = {c.run_id() for (n, *_), c in chk.configs("paper").items() if n.startswith("gamma 0.8")}
    assert len(w5 & w6) == 12 * 3   # gamma 0.8, onsets 2500, 7500, 12500, 15000: W5 runs reused


def test_fewer_seeds_is_a_labelled_variation(tmp_path):
    from critwin.paper_checks import write_result
    chk = CHECKS["W7"]
    cfgs = chk.configs("paper", seeds=3)
    assert len(cfgs) == 4 * 3 * 3 and {s for *_, s in cfgs} == {0, 1, 2} and {t for _, t, _ in cfgs} == {0, 1, 2}
    assert set(cfgs.values()) <= set(chk.configs("paper").values())     # a prefix of the protocol's runs
    res = chk.run("paper", _FakeStore({}), train=False, seeds=3)
    assert res["seeds"] == 3 and "(3 task instances x 3 seeds; the protocol has 3 x 12)" in res["verdict"]
    assert write_result(res, tmp_path, "critwin check W7").name == "W7_paper_seeds3.json"
    code = main(["check", "W7", "--size", "paper", "--seeds", "0", "--json"])
    assert code == 2


def test_check_without_training_reads_what_is_there(tmp_path, capsys):
    """--no-train never starts a run; a check over an incomplete store says so in its verdict."""
    from critwin.paper_checks import CHECKS
    from helpers import save_fake_run
    from critwin.empirical import RunStore
    store = RunStore(tmp_path / "runs")
    cfgs = CHECKS["W2"].configs("paper", seeds=1, task_seeds=2)
    first = next(iter(cfgs.values()))
    save_fake_run(store, first, 0.2)
    code = main(["check", "W2", "--size", "paper", "--seeds", "1", "--task-seeds", "2", "--store", str(tmp_path / "runs"),
                 "--no-train", "--results", "", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and "incomplete: 1 of 4 runs" in d["verdict"]
    assert main(["check", "W2", "--size", "paper", "--store", str(tmp_path / "none"), "--no-train"]) == 2


def test_w11_reads_grokking_steps_with_censoring_and_counts_faster_lambdas():
    chk = CHECKS["W11"]
    cfgs = chk.configs("paper", seeds=1, task_seeds=2)
    assert {c.task for c in cfgs.values()} == {"modarith"} and len(cfgs) == 10 * 2

    class Run:
        def __init__(self, step):
            self.summary = {"final": {}, "test_reach_step": step}
    # constant groks at 700 (seed 0) / never (seed 1 of lambda 3: censored at T); windows at 3500
    steps = {k: (700 if k[0].startswith("constant") else 3500) for k in cfgs}
    steps[("constant 3", 1, 0)] = None
    store = _FakeStore({c.run_id(): Run(steps[k]) for k, c in cfgs.items()})
    res = chk.run("paper", store, train=False, seeds=1, task_seeds=2)
    rows = {r["value"]: r for r in res["rows"]}
    assert rows["constant 0.01"]["measured"] == 700 and rows["constant 0.01"]["tolerance"] == 350
    assert rows["constant 3"]["measured"] == pytest.approx((700 + 10000) / 2)      # censored = T
    count = rows["lambdas where constant groks no later than the window"]
    assert count["measured"] == 4 and count["paper"] == 5          # lambda 3: 5350 > 3500
    assert res["verdict"].startswith("not reproduced")


def test_check_device_option_moves_every_run_and_is_validated():
    """--device cuda asks for cuda runs (their own run ids); without a GPU training them fails
    with the device named, and the option is refused where it is not a device."""
    import torch

    from critwin.paper_checks.base import on_device
    cfgs = CHECKS["W2"].configs("quick")
    moved = on_device(cfgs, "cuda")
    assert all(c.device == "cuda" for c in moved.values()) and on_device(cfgs, "cpu") is cfgs
    assert {c.run_id() for c in moved.values()}.isdisjoint(c.run_id() for c in cfgs.values())
    import argparse
    with pytest.raises((SystemExit, argparse.ArgumentError)):
        main(["check", "W2", "--device", "tpu"])
    if not torch.cuda.is_available():
        from critwin.empirical import train
        from critwin.errors import ConfigError
        with pytest.raises(ConfigError, match="device"):
            train(next(iter(moved.values())), progress=False)


def test_check_figure_puts_each_quantity_on_its_own_axis(tmp_path, monkeypatch):
    """Accuracies, the check's metric (steps) and a counted row each get a panel; a row not yet
    measured stays with the metric, not on the 0-1 axis."""
    from critwin import figures
    seen = {}
    monkeypatch.setattr(figures, "_save", lambda fig, path: seen.setdefault("fig", fig) and path)
    result = {"id": "X", "verdict": "v", "metric": "test_reach_step", "rows": [
        {"value": "acc", "paper": 0.9, "measured": 0.8, "sd": 0.0},
        {"value": "step a", "paper": 700, "measured": 650.0, "sd": 0.0},
        {"value": "step b", "paper": None, "measured": float("nan"), "sd": 0.0},
        {"value": "count", "paper": 5, "measured": 1.0, "sd": 0.0, "unit": "lambdas (count)"}]}
    figures.plot_check(result, tmp_path / "x.png")
    axes = seen["fig"].axes
    labels = {ax.get_xlabel(): [t.get_text() for t in ax.get_yticklabels()] for ax in axes}
    assert labels == {"0-1 scale": ["acc"], "test_reach_step": ["step a", "step b"], "lambdas (count)": ["count"]}


def test_several_checks_train_their_runs_as_one_sweep(tmp_path, monkeypatch, capsys):
    """`critwin check W1 W2` hands every run of both checks to one sweep (so they share packs
    and workers), each run once; then each check only reads."""
    import critwin.paper_checks.base as base
    calls = []
    monkeypatch.setattr(base, "run_sweep", lambda cfgs, store, ex, progress=True: calls.append(list(cfgs)))
    code = main(["check", "w2", "W1", "W2", "--size", "paper", "--seeds", "1", "--task-seeds", "2",
                 "--decay-form", "l2", "--store", str(tmp_path / "runs"), "--results", "", "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["id"] for r in d["results"]] == ["W2", "W1"]
    want = {c.run_id() for i in ("W1", "W2")
            for c in CHECKS[i].configs("paper", seeds=1, task_seeds=2, reading={"decay_form": "l2"}).values()}
    first = [c.run_id() for c in calls[0]]
    assert len(first) == len(set(first)) == len(want) and set(first) == want
    assert len(calls) == 3          # then each check's own call, which finds everything stored in real use
    assert main(["check", "W1", "W99", "--json"]) == 2


def test_check_variant_trains_only_the_named_variants_and_judges_them_all(tmp_path, monkeypatch, capsys):
    """`critwin check W11 --variant 'constant 0.01' --variant 'window 0.01'` trains only those runs
    (every instance x seed of them); the verdict still reads all ten variants from the store."""
    import critwin.paper_checks.base as base
    calls = []
    monkeypatch.setattr(base, "run_sweep", lambda cfgs, store, ex, progress=True: calls.append(list(cfgs)))
    args = ["check", "W11", "--size", "paper", "--seeds", "2", "--task-seeds", "3", "--store", str(tmp_path / "runs"),
            "--results", "", "--no-progress", "--json"]
    code = main([*args, "--variant", "constant 0.01", "--variant", "window 0.01"])
    d = json.loads(capsys.readouterr().out)
    want = {c.run_id() for (name, *_), c in CHECKS["W11"].configs("paper", seeds=2, task_seeds=3).items()
            if name in ("constant 0.01", "window 0.01")}
    assert code == 0 and len(calls) == 1 and {c.run_id() for c in calls[0]} == want and len(want) == 12
    assert len(d["rows"]) == 11 and "incomplete: 0 of 60 runs" in d["verdict"]
    assert main([*args, "--variant", "constant 0.02"]) == 2
    err = capsys.readouterr().err
    assert "variant" in err and "constant 0.01" in err and "Traceback" not in err
    assert main(["check", "W11", "W12", "--variant", "constant 0.01", "--store", str(tmp_path)]) == 2
    assert main(["check", "S1", "--variant", "constant 0.01", "--store", str(tmp_path)]) == 2
