"""The Alchemy checks on hand-made stored curves (the rule decides what the curves say) and
once end to end at quick size."""
import numpy as np
import pandas as pd
import pytest

from critwin.empirical import Run, RunStore
from critwin.errors import ConfigError
from critwin.paper_checks import CHECKS

STEPS = np.arange(0, 3001, 100)


def rise(at, lo=0.0, hi=1.0):
    return np.where(STEPS >= at, hi, lo) if at is not None else np.full(len(STEPS), lo)


def save(store, cfg, curves: dict, split="test", steps=STEPS):
    rows = [(int(s), split, m, float(v)) for m, c in curves.items() for s, v in zip(steps, c)]
    store.save(Run(cfg.resolved(), pd.DataFrame(rows, columns=["step", "split", "metric", "value"]),
                   {"status": "complete", "final": {}}, {}))


def withheld_curves(t_a, t_cab, t_ba, dip=0.38):
    ba = np.where(STEPS >= t_ba, 0.97, np.where(STEPS >= t_a, dip, 0.5))
    return {"event_a": rise(t_a, 0.2), "p_c_given_ab": rise(t_cab, 0.3), "p_b_given_a": ba,
            "event_b": rise(t_ba, 0.1), "event_c": rise(t_ba, 0.05), "acc": rise(t_ba, 0.05, 0.99)}


@pytest.mark.parametrize("order,expect", [((300, 600, 1500), "reproduced"), ((1500, 600, 300), "not reproduced")])
def test_s1_judges_the_order_and_the_dip(tmp_path, order, expect):
    store = RunStore(tmp_path)
    for (_, _, s), cfg in CHECKS["S1"].configs("cpu").items():
        save(store, cfg, withheld_curves(*order))
    res = CHECKS["S1"].run("cpu", store, train=False)
    assert res["verdict"].startswith(expect) and "cpu size" in res["verdict"]
    rows = {r["value"]: r for r in res["rows"]}
    assert rows["order: A and C|AB before B|A (fraction of seeds)"]["measured"] == (1.0 if expect == "reproduced" else 0.0)


def test_s2_reads_the_ablated_accuracy_at_the_dip(tmp_path):
    store = RunStore(tmp_path)
    for _, cfg in CHECKS["S2"].configs("cpu").items():
        save(store, cfg, {**withheld_curves(300, 600, 1500), "acc": np.where(STEPS >= 300, 0.4, 0.05)})
        run = store.complete(cfg.run_id())
        m = pd.concat([run.metrics, pd.DataFrame({"step": STEPS, "split": "test_ablate_rewards", "metric": "acc",
                                                   "value": 0.04})], ignore_index=True)
        store.save(Run(cfg.resolved(), m, run.summary, {}), replace=True)
    res = CHECKS["S2"].run("cpu", store, train=False)
    hidden, shown, drop = (r["measured"] for r in res["rows"])
    assert hidden == pytest.approx(0.04) and shown == pytest.approx(0.4) and drop == pytest.approx(0.36)
    assert res["verdict"].startswith("reproduced")


def test_s4_ranks_hop_counts_with_censoring(tmp_path):
    store = RunStore(tmp_path)
    t_by_h = {2: 300, 3: 700, 4: 1200, 5: None}          # h = 5 never completes: counts as the end
    cab_by_h = {2: 2000, 3: 1500, 4: 900, 5: None}       # the middle stage, reported only
    for (name, _, s), cfg in CHECKS["S4"].configs("cpu").items():
        t = t_by_h[int(name[-1])]
        save(store, cfg, {"event_a": rise(t, 0.2), "event_c": rise(t, 0.0),
                          "p_c_given_ab": rise(cab_by_h[int(name[-1])], 0.3)})
    res = CHECKS["S4"].run("cpu", store, train=False)
    rows = {r["value"]: r["measured"] for r in res["rows"]}
    assert rows["rank correlation of h with the A time (never = end)"] == pytest.approx(1.0)
    assert rows["h=3: step A completes"] == 700 and np.isnan(rows["h=5: step A completes"])
    cp3 = rows["h=3: step A's last rise completes (change points, threshold-free)"]     # within one evaluation
    assert cp3 == pytest.approx(700, abs=100) and np.isnan(rows["h=5: step A's last rise completes (change points, "
                                                                 "threshold-free)"])
    assert rows["rank correlation of h with A's last rise (change points, no rise = end; reported)"] == pytest.approx(1.0)
    assert rows["h=4: step P(C|A,B) completes (the middle stage; nan: never; reported)"] == 900
    assert np.isnan(rows["h=5: step P(C|A,B) completes (the middle stage; nan: never; reported)"])
    # ranks by hand: h 2/3/4/5 -> 2/5/8/11 (three tied seeds each), times 2000/1500/900/end -> 8/5/2/11;
    # Pearson of the ranks = 9 / 45 over the four groups
    assert rows["rank correlation of h with the P(C|A,B) time (never = end; reported)"] == pytest.approx(0.2)
    assert res["verdict"].startswith("reproduced")      # a reported row does not enter the verdict
    s3 = CHECKS["S3"].run("cpu", store, train=False)       # nothing stored for composition
    assert "incomplete: 0 of 12" in s3["verdict"]


@pytest.mark.parametrize("final_c,expect", [(0.95, "inconclusive (censored"), (0.2, "inconclusive (censored")])
def test_s3_reports_change_point_times_when_a_never_completes(tmp_path, final_c, expect):
    """A that rises only to 0.7 (the cpu size's plateau) has no threshold time: A is censored at the run's end,
    so the judged ratio is nan and censored; the change points still time the rise for every h. Exact accuracy
    that has not completed C (0.9) by the end is censored too, whether it ends near 1 or far below: the run
    stopped before the stage, so the check is inconclusive (censored), not failed."""
    store = RunStore(tmp_path)
    t_by_h = {2: 300, 3: 400, 4: 500, 5: 600}
    for (name, _, s), cfg in CHECKS["S3"].configs("cpu").items():
        t = t_by_h[int(name[-1])]
        save(store, cfg, {"event_a": rise(t, 0.2, 0.7), "event_c": rise(t, 0.0, final_c)})
    res = CHECKS["S3"].run("cpu", store, train=False)
    rows = {r["value"]: r["measured"] for r in res["rows"]}
    assert np.isnan(rows["A time, slowest h / fastest h (median over seeds; nan if some h never)"])
    assert rows["A's last rise (change points), slowest h / fastest h (reported)"] == pytest.approx(2.0, rel=0.08)
    assert res["verdict"].startswith(expect)


def test_anchor_checks_refuse_the_cpu_size():
    with pytest.raises(ConfigError) as e:
        CHECKS["W1"].configs("cpu")
    assert e.value.field == "size"
    with pytest.raises(ConfigError):
        CHECKS["S1"].run("cpu", RunStore("unused"), train=False, wd_scale=2.0)


def test_s1_end_to_end_at_quick_size(tmp_path, capsys):
    import json

    from critwin.cli.main import main
    code = main(["check", "S1", "--size", "quick", "--store", str(tmp_path / "runs"), "--results",
                 str(tmp_path / "res"), "--no-progress", "--workers", "1", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert d["id"] == "S1" and "not evidence" in d["verdict"] and len(d["rows"]) == 5
    assert (tmp_path / "res" / "S1_quick.json").exists() and (tmp_path / "res" / "S1_quick.png").exists()


def test_s6_windows_from_stored_branches(tmp_path):
    """Hand-made curves for every run of S6's cpu plan: A rises from 0.37 to 0.75 (the cpu
    size's plateau, never the 0.95 threshold), timed by change points; freezing a layer at one
    of the first three points stops the rise, freezing the embedding never delays it."""
    from critwin.bridge.plasticity import plasticity_configs
    s6 = CHECKS["S6"]
    store = RunStore(tmp_path)
    flat, grid, comps, seeds, every = s6.plan("cpu")
    assert s6.missing("cpu", store) == len(seeds) * (1 + len(grid) * len(comps))
    for comp in comps:
        for (tf, s), cfg in plasticity_configs(flat, comp, grid, seeds).items():
            late = tf is not None and comp != "embedding" and tf <= grid[2]    # frozen early: A never rises
            save(store, cfg, {"event_a": rise(None if late else grid[0] + every // 2, 0.37, 0.75)})
    assert s6.stage("cpu") == ("event_a", "changepoint") and s6.stage("paper") == ("event_c", "threshold")
    res = s6.run("cpu", store, train=False)
    assert res["metric"] == "event_a stage delay (steps; stage by changepoint)"
    rows = {r["value"]: r["measured"] for r in res["rows"]}
    assert rows["embedding: window length (steps)"] == 0 and rows["layer0: window length (steps)"] == 3 * every
    assert rows["Transformer layers with a window at least the embedding's (fraction)"] == 1.0
    assert rows["baseline's final event_a (the frozen runs' finals are in each window row)"] == 0.75
    finals = {r["value"]: r.get("finals") for r in res["rows"]}      # freezing early holds A at its start level
    assert finals["layer0: window length (steps)"] == [0.37] * 3 + [0.75] * (len(grid) - 3)
    assert finals["embedding: window length (steps)"] == [0.75] * len(grid)
    assert res["verdict"].startswith("reproduced") and s6.missing("cpu", store) == 0


def test_s6_under_stone_tokens_times_the_middle_stage_by_the_threshold_rule(tmp_path):
    """Stone tokens (a variation): A completes at the first evaluation, so S6 times P(C given A,B) by
    the threshold rule. Its runs are their own (the input format is in every config), and freezing
    a layer at the first two points keeps the middle stage from completing."""
    from critwin.bridge.plasticity import plasticity_configs
    s6 = CHECKS["S6"]
    store = RunStore(tmp_path)
    flat, grid, comps, seeds, every = s6.plan("cpu", points=4, input_format="stone_states")
    tokens = s6.plan("cpu", points=4)[0]
    assert flat["input_format"] == "stone_states" and {k: v for k, v in flat.items() if k != "input_format"} == tokens
    assert grid == [every * k for k in (1, 2, 3, 4)] and every == flat["steps"] // 5
    assert s6.stage("cpu", "stone_states") == ("p_c_given_ab", "threshold")
    steps = np.arange(0, flat["steps"] + 1, 343)            # the run's own evaluations
    for comp in comps:
        for (tf, s), cfg in plasticity_configs(flat, comp, grid, seeds).items():
            assert cfg.input_format == "stone_states"
            stalled = tf is not None and comp != "embedding" and tf <= grid[1]
            # 0.92 from grid[1] + every/2 on: above 0.9 but below A's 0.95 (so the rule must be the 0.9 one)
            cab = np.where(steps >= grid[1] + every // 2, 0.92, 0.25) if not stalled else np.full(len(steps), 0.25)
            save(store, cfg, {"event_a": np.ones(len(steps)), "p_c_given_ab": cab}, steps=steps)
    res = s6.run("cpu", store, train=False, points=4, input_format="stone_states")
    assert res["metric"] == "p_c_given_ab stage delay (steps; stage by threshold)"
    assert res["input_format"] == "stone_states" and "variation: stone tokens" in res["verdict"]
    rows = {r["value"]: r["measured"] for r in res["rows"]}
    assert rows["layer1: window length (steps)"] == 2 * every and rows["embedding: window length (steps)"] == 0
    assert res["verdict"].startswith("reproduced")
    with pytest.raises(ConfigError, match="input_format"):
        s6.plan("authors", input_format="stone_states")


def test_s6_without_any_window_is_not_reproduced(tmp_path):
    """Freezing changes nothing: every window is empty, so 'layers at least as long as the
    embedding' holds as 0 >= 0; the claim that freezing a layer early delays the stage fails."""
    from critwin.bridge.plasticity import plasticity_configs
    s6 = CHECKS["S6"]
    store = RunStore(tmp_path)
    flat, grid, comps, seeds, every = s6.plan("cpu")
    for comp in comps:
        for (tf, s), cfg in plasticity_configs(flat, comp, grid, seeds).items():
            save(store, cfg, {"event_a": rise(grid[0] + every // 2, 0.37, 0.75)})
    res = s6.run("cpu", store, train=False)
    rows = {r["value"].split(" (")[0]: r["measured"] for r in res["rows"]}
    assert rows["Transformer layers with a window at least the embedding's"] == 1.0
    assert rows["Transformer layers whose window is not empty"] == 0.0 and res["verdict"].startswith("not reproduced")


def test_s6_is_inconclusive_when_the_baseline_never_completes_the_stage(tmp_path):
    """A baseline whose A never rises: every run is censored at the end, the delays would all
    be 0 and the check would pass on nothing."""
    from critwin.bridge.plasticity import plasticity_configs
    s6 = CHECKS["S6"]
    store = RunStore(tmp_path)
    flat, grid, comps, seeds, every = s6.plan("cpu")
    for comp in comps:
        for (tf, s), cfg in plasticity_configs(flat, comp, grid, seeds).items():
            save(store, cfg, {"event_a": rise(None, 0.5)})
    res = s6.run("cpu", store, train=False)
    rows = {r["value"]: r["measured"] for r in res["rows"]}
    assert rows["baselines that complete the event_a stage (fraction; delays need it)"] == 0.0
    assert np.isnan(rows["layer0: window length (steps)"]) and res["verdict"].startswith("inconclusive")


def _s5_store(tmp_path, c_by_setting):
    store = RunStore(tmp_path)
    for (name, _, s), cfg in CHECKS["S5"].configs("cpu").items():
        t_c = c_by_setting[name]
        b = rise(t_c, 0.5) if t_c is not None else np.full(len(STEPS), 0.5)     # never: B stays flat at 0.5
        save(store, cfg, {"event_a": rise(200, 0.2), "event_b": b, "event_c": rise(t_c, 0.05)})
    return store


def test_s5_sees_sensitivity_and_stalled_failures(tmp_path):
    store = _s5_store(tmp_path, {"wd 0": None, "wd 0.01": 1000, "wd 0.1": 500, "wd 0.1, final lr / 10": 600})
    res = CHECKS["S5"].run("cpu", store, train=False)
    rows = {r["value"].split(" (")[0]: r for r in res["rows"]}
    end = CHECKS["S5"].configs("cpu")[("wd 0", 0, 0)].steps
    assert rows["C time, slowest / fastest setting"]["measured"] == pytest.approx(end / 500)
    assert rows["runs that never complete C and stall"]["measured"] == 1.0
    assert res["verdict"].startswith("reproduced")
    cfg = CHECKS["S5"].configs("cpu")[("wd 0.1, final lr / 10", 0, 0)]
    assert cfg.lr_schedule == "cosine" and cfg.lr_at(cfg.steps) == pytest.approx(cfg.lr / 10)


def test_s5_insensitive_runs_are_not_reproduced(tmp_path):
    store = _s5_store(tmp_path, dict.fromkeys(("wd 0", "wd 0.01", "wd 0.1", "wd 0.1, final lr / 10"), 500))
    res = CHECKS["S5"].run("cpu", store, train=False)
    stall = [r for r in res["rows"] if r["value"].startswith("runs that never")][0]
    assert stall["paper"] is None and res["verdict"].startswith("not reproduced")


def test_cosine_lr_final_is_validated():
    from critwin.empirical import TrainConfig
    with pytest.raises(ConfigError, match="lr_final"):
        TrainConfig(lr_final=1e-4)                                  # constant schedule
    with pytest.raises(ConfigError, match="lr_final"):
        TrainConfig(lr=1e-3, lr_schedule="cosine", lr_final=2e-3)   # above lr
    c = TrainConfig(lr=1e-3, lr_schedule="cosine", lr_final=1e-4, steps=100)
    assert c.lr_at(0) == pytest.approx(1e-3) and c.lr_at(100) == pytest.approx(1e-4)
    assert TrainConfig(lr_schedule="cosine").run_id() == "38a0a82eeaf70f86"    # the id it had before lr_final


def test_s6_freeze_points_trade_resolution_for_cost(tmp_path, capsys):
    """--freeze-points N: N evenly spaced freeze steps instead of the protocol's 9, labelled in
    the verdict; only S6 takes it, and only a count >= 1."""
    from critwin.cli.main import main
    s6 = CHECKS["S6"]
    flat, grid, comps, seeds, every = s6.plan("cpu", points=4)
    assert grid == [every * k for k in (1, 2, 3, 4)] and every == flat["steps"] // 5
    store = RunStore(tmp_path)
    assert s6.missing("cpu", store, points=4) == len(seeds) * (1 + 4 * len(comps)) < s6.missing("cpu", store)
    res = s6.run("cpu", store, train=False, points=4)
    assert "4 of the protocol's 9 freeze points" in res["verdict"] and res["freeze_steps"] == grid
    assert "freeze points" not in s6.run("cpu", store, train=False)["verdict"]
    from critwin.paper_checks import write_result
    assert write_result(res, tmp_path / "res", "cmd").name == "S6_cpu_points4.json"   # not the 9-point file
    with pytest.raises(ConfigError, match="freeze_points"):
        s6.plan("cpu", points=0)
    for argv in (["W1", "--freeze-points", "3"], ["S6", "--size", "cpu", "--freeze-points", "0"]):
        assert main(["check", *argv, "--store", str(tmp_path), "--no-train", "--results", ""]) == 2
        assert "freeze_points" in capsys.readouterr().err


def test_s1_at_bf16_reads_the_bf16_runs_and_says_so(tmp_path):
    from dataclasses import replace
    store = RunStore(tmp_path)
    for cfg in CHECKS["S1"].configs("cpu").values():
        save(store, replace(cfg, precision="bf16"), withheld_curves(300, 600, 1500))
    res = CHECKS["S1"].run("cpu", store, train=False, precision="bf16")
    assert res["verdict"].startswith("reproduced") and "bf16 autocast" in res["verdict"]
    assert "incomplete" in CHECKS["S1"].run("cpu", store, train=False)["verdict"]     # the fp32 runs are other runs


def test_precision_is_for_the_alchemy_checks_only(tmp_path, capsys):
    from critwin.cli.main import main
    assert main(["check", "W1", "--precision", "bf16", "--no-train", "--store", str(tmp_path)]) == 2
    assert "precision" in capsys.readouterr().err


def test_s1_at_the_authors_size_reports_the_epochs_of_every_stage(tmp_path):
    store = RunStore(tmp_path)
    (cfg,) = CHECKS["S1"].configs("authors", seeds=1).values()
    save(store, cfg, withheld_curves(343 * 2, 343 * 4, 343 * 6))     # steps on this grid: 700, 1400, 2100 follow
    rows = {r["value"].split(" (")[0]: r for r in CHECKS["S1"].run("authors", store, train=False, seeds=1)["rows"]}
    per = [STEPS[STEPS >= 343 * k][0] / 343 for k in (2, 4, 6)]        # the first logged step at or after each rise
    assert rows["epoch at which A completes"]["measured"] == pytest.approx(per[0])
    assert rows["epoch at which P(C|A,B) completes"]["measured"] == pytest.approx(per[1])
    assert rows["epoch at which P(B|A) completes"]["measured"] == pytest.approx(per[2])


def test_s6_under_stone_tokens_trains_end_to_end_at_quick_size(tmp_path, monkeypatch):
    """The CLI trains S6's baselines and branches with stone tokens (every stored run says so) and names the result.
    The frozen runs of every component go in one sweep after the baseline's, so that they share the workers."""
    import json

    from critwin.cli.main import main
    from critwin.empirical import sweep
    sizes, real = [], sweep.run_sweep

    def spy(configs, *args, **kwargs):
        sizes.append(len(configs))
        starts = [int(c.branch.split("@")[1]) if c.branch else 0 for c in configs]
        assert starts == sorted(starts, reverse=True)          # latest branch first
        return real(configs, *args, **kwargs)
    monkeypatch.setattr(sweep, "run_sweep", spy)
    assert main(["check", "S6", "--size", "quick", "--input-format", "stone_states", "--freeze-points", "2",
                 "--store", str(tmp_path / "runs"), "--results", str(tmp_path / "res"), "--no-progress",
                 "--workers", "1"]) == 0
    res = json.loads((tmp_path / "res" / "S6_quick_stone_states.json").read_text())
    assert res["metric"].startswith("p_c_given_ab") and "variation: stone tokens" in res["verdict"]
    configs = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/config.json")]
    assert len(configs) == 1 + 2 * 3 and all(c["input_format"] == "stone_states" for c in configs)
    assert sum(bool(c["freeze"]) for c in configs) == 6
    assert sizes[:2] == [1, 6]
