"""Pausing a run once a stage is reached, branching from a run still in training, and the
plasticity window read from paused branches (S6 at the authors' recipe trains its frozen
branches only until event A completes)."""
import pandas as pd
import pytest
import torch

from critwin.bridge.plasticity import plasticity_configs, plasticity_window
from critwin.empirical.metrics.stages import StageReached
from critwin.cli.main import main
from critwin.empirical import RunStore
from critwin.empirical.loop import Paused
from critwin.empirical.sweep import LocalExecutor, Pause, config_from_flat, run_sweep
from critwin.empirical.train import train

BASE = {"steps": 60, "d": 16, "batch_size": 32, "eval_every": 10, "lr": 1e-2}


class AfterStep:
    """A stop rule that holds once a row at or past `step` is logged (a module-level class: it pickles)."""

    def __init__(self, step):
        self.step = step

    def __call__(self, rows):
        return any(r[0] >= self.step for r in rows)


def test_stage_reached_holds_from_the_third_evaluation_at_the_level_on():
    """Event A's level is 0.95 for three evaluations in a row: counted by hand on a short curve."""
    curve = [(0, 0.2), (10, 0.96), (20, 0.97), (30, 0.90), (40, 0.95), (50, 0.99), (60, 0.96), (70, 0.5)]
    rows = [(s, "test", "event_a", v) for s, v in curve] + [(s, "train", "event_a", 1.0) for s, _ in curve]
    rule = StageReached("event_a")
    seen = [rule(rows[:k] + rows[len(curve):len(curve) + k]) for k in range(1, len(curve) + 1)]
    assert seen == [False, False, False, False, False, False, True, True]
    assert not StageReached("event_a", split="train")(rows[:2] + rows[len(curve):len(curve) + 2])   # two only
    assert StageReached("event_a", split="train")(rows)


def test_a_stop_rule_pauses_at_the_first_evaluation_it_holds_and_the_run_continues_exactly(tmp_path):
    cfg = config_from_flat(BASE)
    whole = train(cfg, progress=False)
    resume = tmp_path / f".resume-{cfg.run_id()}.pt"
    with pytest.raises(Paused) as paused:
        train(cfg, progress=False, resume=resume, save_every=1e9, stop_when=AfterStep(25))
    assert paused.value.step == 30 and torch.load(resume, weights_only=False)["step"] == 30
    with pytest.raises(Paused):                      # the rule holds already: nothing trained, nothing rewritten
        train(cfg, progress=False, resume=resume, stop_when=AfterStep(25))
    assert torch.load(resume, weights_only=False)["step"] == 30
    pd.testing.assert_frame_equal(train(cfg, progress=False, resume=resume).metrics, whole.metrics)


def test_a_stop_rule_needs_a_resume_state(tmp_path):
    from critwin.errors import ConfigError
    with pytest.raises(ConfigError, match="stop_when"):
        train(config_from_flat(BASE), progress=False, stop_when=AfterStep(25))


@pytest.mark.slow
def test_a_branch_takes_its_checkpoint_from_a_run_still_in_training(tmp_path):
    """The checkpoint a paused run's resume state holds gives the same branch as the stored run's."""
    flat = {**BASE, "checkpoints": [20]}
    cfgs = plasticity_configs(flat, "layer0", [20], [0])
    base, branch = cfgs[(None, 0)], cfgs[(20, 0)]
    early, done = RunStore(tmp_path / "early").ensure_writable(), RunStore(tmp_path / "done")
    with pytest.raises(Paused):
        train(base, progress=False, resume=early.resume_path(base.run_id()), until=40)
    assert early.status(base.run_id()) is None and early.checkpoint_steps(base.run_id()) == [20]
    run_sweep([base], done, progress=False)
    for store in (early, done):
        run_sweep([branch], store, progress=False)
    pd.testing.assert_frame_equal(early.load(branch.run_id()).metrics, done.load(branch.run_id()).metrics)


@pytest.mark.slow
def test_a_sweep_pause_keeps_the_runs_and_the_same_sweep_without_it_finishes_them(tmp_path, capsys):
    cfgs = plasticity_configs({**BASE, "checkpoints": [20]}, "layer0", [20], [0, 1])
    store, ref = RunStore(tmp_path / "s"), RunStore(tmp_path / "ref")
    base = [c for k, c in cfgs.items() if k[0] is None]
    frozen = [c for k, c in cfgs.items() if k[0] is not None]
    for s in (store, ref):
        run_sweep(base, s, progress=False)
    res = run_sweep(frozen, store, LocalExecutor(1), progress=False, pause=Pause(until=40))
    assert sorted(res.paused) == sorted((c.run_id(), 40) for c in frozen) and not res.done
    assert all(store.status(c.run_id()) == "paused" and store.partial(c.run_id())[1] == 40 for c in frozen)
    assert all(store.load(c.run_id()).summary["steps_done"] == 40 for c in frozen)
    rows = store.in_progress()          # paused with their resume states: listed as paused, not as killed
    assert sorted(r["run_id"] for r in rows) == sorted(c.run_id() for c in frozen) and all(r["paused"] for r in rows)
    assert main(["runs", "progress", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert out.count("paused: stored where its stop rule held") == 2 and "killed" not in out
    again = run_sweep(frozen, store, progress=False, pause=Pause(until=40))     # where this pause leaves them
    assert sorted(again.skipped) == sorted(c.run_id() for c in frozen) and not again.paused
    assert "2 paused" in res.describe()
    run_sweep(frozen, store, progress=False)
    run_sweep(frozen, ref, progress=False)
    for c in frozen:
        pd.testing.assert_frame_equal(store.load(c.run_id()).metrics, ref.load(c.run_id()).metrics)


def test_a_pause_applies_to_runs_trained_alone_only(tmp_path):
    from critwin.errors import ConfigError
    with pytest.raises(ConfigError, match="pause"):
        run_sweep([config_from_flat(BASE)], RunStore(tmp_path), LocalExecutor(1, pack=4), progress=False,
                  pause=Pause(until=20))


def test_plasticity_reads_paused_branches_as_settled_or_lower_bounds(tmp_path):
    """A branch paused at the cap with its stage unreached is censored there (a lower bound, settled);
    one paused by the stage rule has its exact stage time; a branch cut short by a stop is unsettled."""
    flat = {**BASE, "steps": 80, "checkpoints": [20, 40]}
    cfgs = plasticity_configs(flat, "layer0", [20, 40], [0])
    store = RunStore(tmp_path)
    run_sweep([cfgs[(None, 0)]], store, progress=False)
    per_run, table = plasticity_window(cfgs, store, metric="acc", split="train", executor=LocalExecutor(1),
                                       progress=False, pause=Pause(until=60, when=AfterStep(50)))
    got = per_run.set_index("freeze_step", drop=False)
    assert got.settled.all()
    assert list(got.step) == [80, 50, 50]           # baseline stored; branches paused at the rule's first evaluation
    assert all(store.status(cfgs[(tf, 0)].run_id()) == "paused" for tf in (20, 40))
    # cut one branch short: delete it and train it to step 30 only (a kill leaves a resume state, no folder)
    import shutil
    c = cfgs[(20, 0)]
    store.drop_resume(c.run_id())
    shutil.rmtree(store.path(c.run_id()))
    with pytest.raises(Paused):
        train(c, progress=False, start=store.checkpoint(*c.branch_point()), resume=store.resume_path(c.run_id()),
              until=30)
    per_run, _ = plasticity_window(cfgs, store, metric="acc", split="train", train=False, pause=Pause(until=60))
    row = per_run[per_run.freeze_step == 20].iloc[0]
    assert row.step == 30 and not row.settled


def _state(store, cfg, curve, steps, at):
    """A resume state as training leaves it (the fields RunStore.partial reads), rows up to step `at`."""
    rows = [(int(s), "test", "event_a", float(v)) for s, v in zip(steps, curve) if s <= at]
    torch.save({"step": int(at), "config": cfg.resolved(), "rows": rows, "checkpoints": {}},
               store.ensure_writable().resume_path(cfg.run_id()))


@pytest.mark.parametrize("cut", [False, True])
def test_s6_at_the_authors_recipe_times_event_a_with_branches_paused_at_a_or_the_cap(tmp_path, cut):
    """S6 at the authors' size: the stage is A (the long run's only completed stage), the baseline read as
    far as it has trained, every branch paused once A completes or at epoch 80. Layers frozen at epoch 10
    never complete A (censored at the cap: a delay of at least 30 epochs), the embedding completes it two
    epochs late; a branch cut short before the cap (`cut`) leaves the verdict in progress."""
    import numpy as np

    from critwin.paper_checks.claims import CHECKS
    s6 = CHECKS["S6"]
    store = RunStore(tmp_path)
    flat, grid, comps, seeds, every = s6.plan("authors", seeds=1, points=3)
    per = flat["steps"] // 150
    assert grid == [10 * per, 80 * per, 140 * per] and every == 10 * per and s6.stage("authors") == ("event_a", "threshold")
    pause = s6.pause("authors", flat)
    assert pause.until == 80 * per and pause.when([(e * per, "test", "event_a", 0.96) for e in (1, 2, 3)])
    steps = np.arange(0, flat["steps"] + 1, per)
    a_at = lambda epoch: np.where(steps >= epoch * per, 0.97, 0.4)        # noqa: E731
    for comp in comps:
        for (tf, s), cfg in plasticity_configs(flat, comp, grid, seeds, freeze_optimizer="rebuild").items():
            if tf is None:                      # the long run, in training at epoch 113
                _state(store, cfg, a_at(50), steps, 113 * per)
            elif tf > 10 * per:                 # after A: its rows (the baseline's) have A already; paused at once
                _state(store, cfg, a_at(50), steps, tf)
            elif comp == "embedding":           # two epochs late, paused three evaluations after
                _state(store, cfg, a_at(52), steps, 54 * per)
            else:                               # never: paused at the cap (or, cut, killed before it)
                _state(store, cfg, np.full(len(steps), 0.4), steps, (60 if cut and comp == "layer3" else 80) * per)
    res = s6.run("authors", store, train=False, seeds=1, points=3)
    rows = {r["value"]: r["measured"] for r in res["rows"]}
    assert res["metric"] == "event_a stage delay (steps; stage by threshold)"
    assert rows["embedding: window length (steps)"] == 0 and rows["layer0: window length (steps)"] == every
    delays = {r["value"]: r.get("delays") for r in res["rows"]}["layer1: window length (steps)"]
    assert delays == [30 * per, 0, 0]       # censored at the cap: a lower bound
    if cut:
        assert res["verdict"].startswith("inconclusive (in progress: 1 of 16 runs") and res["runs_to_train"] == 1
    else:
        assert res["verdict"].startswith("reproduced") and res["runs_to_train"] == 0
    assert rows["delay when frozen at the last point, step %d (steps)" % grid[-1]] == 0


def test_s6_reads_no_delay_at_a_freeze_point_it_has_not_trained(tmp_path):
    """With only the branches from epoch 10 trained (the embedding's cut short), the row of the last freeze
    point (epoch 140) has nothing to read: NaN, not the delay of an earlier point."""
    import math

    import numpy as np

    from critwin.paper_checks.claims import CHECKS
    s6 = CHECKS["S6"]
    store = RunStore(tmp_path)
    flat, grid, comps, seeds, every = s6.plan("authors", seeds=1, points=3)
    per = flat["steps"] // 150
    steps = np.arange(0, flat["steps"] + 1, per)
    for comp in comps:
        for (tf, s), cfg in plasticity_configs(flat, comp, grid, seeds, freeze_optimizer="rebuild").items():
            if tf is None:
                _state(store, cfg, np.where(steps >= 50 * per, 0.97, 0.4), steps, 113 * per)
            elif tf == grid[0]:
                _state(store, cfg, np.full(len(steps), 0.4), steps, (26 if comp == "embedding" else 80) * per)
    res = s6.run("authors", store, train=False, seeds=1, points=3)
    rows = {r["value"]: r["measured"] for r in res["rows"]}
    assert math.isnan(rows["delay when frozen at the last point, step %d (steps)" % grid[-1]])
    assert res["runs_to_train"] == 1 + 2 * len(comps)


@pytest.mark.slow
def test_critwin_train_stop_at_stage_pauses_at_the_third_evaluation_at_the_level(tmp_path):
    """`--stop-at-stage train:acc` pauses at the third evaluation in a row with train accuracy >= 0.9, found here
    by a plain count on the unpaused run's curve; the command without it finishes the run as if unpaused; a metric
    the run does not log is a one-line error before any training."""
    import json
    import subprocess
    import sys
    base = [sys.executable, "-m", "critwin.cli", "train", "anchor", "--steps", "400", "--eval-every", "20",
            "--no-progress", "--json", "--threads", "1"]
    whole = json.loads(subprocess.run([*base, "--store", str(tmp_path / "whole")], capture_output=True, text=True,
                                      check=True, timeout=300).stdout)
    m = RunStore(tmp_path / "whole").load(whole["run_id"]).metrics
    acc = m[(m.split == "train") & (m.metric == "acc")].sort_values("step")
    run, expect = 0, None
    for step, v in zip(acc.step, acc.value):
        run = run + 1 if v >= 0.9 else 0
        if run == 3:
            expect = int(step)
            break
    assert expect is not None and expect < 400
    cmd = [*base, "--store", str(tmp_path / "s"), "--stop-at-stage", "train:acc"]
    paused = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout)
    assert paused["status"] == "paused" and paused["step"] == expect
    done = json.loads(subprocess.run(cmd[:-2], capture_output=True, text=True, check=True, timeout=300).stdout)
    store = RunStore(tmp_path / "s")
    assert done["summary"]["resumed_from_step"] == expect and store.status(done["run_id"]) == "complete"
    pd.testing.assert_frame_equal(store.load(done["run_id"]).metrics, m)
    bad = subprocess.run([*base, "--store", str(tmp_path / "b"), "--stop-at-stage", "train:accuracy"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "stop_at_stage='train:accuracy'" in bad.stderr and "train:acc" in bad.stderr
    assert not list((tmp_path / "b").glob(".resume-*"))


def test_a_run_reads_as_far_as_it_got_from_its_paused_folder_or_its_further_resume_state(tmp_path):
    """RunStore.so_far, which S1's in-progress reading and the plasticity window share: a paused folder without
    its resume state (carried to another machine), then the same run continued past the pause (its resume state
    further on than its folder), then stored complete; each read equals the uninterrupted run's rows cut there."""
    from critwin.paper_checks.alchemy_checks import InProgressView
    cfg = config_from_flat(BASE)
    rid, key = cfg.run_id(), ["step", "split", "metric"]
    whole = train(cfg, progress=False).metrics

    def cut(step):
        return whole[whole.step <= step].sort_values(key).reset_index(drop=True)

    store = RunStore(tmp_path).ensure_writable()
    run_sweep([cfg], store, LocalExecutor(1, pack=1), progress=False, pause=Pause(until=20))
    store.drop_resume(rid)
    assert store.partial(rid) is None
    for step, status in ((20, "paused"), (40, "in progress"), (60, "complete")):
        if status == "in progress":
            with pytest.raises(Paused):
                train(cfg, progress=False, resume=store.resume_path(rid), until=40)
        elif status == "complete":
            run_sweep([cfg], store, progress=False)     # a sweep that packs: the run goes on alone from step 40
            assert store.load(rid).summary["resumed_from_step"] == 40
        metrics, got_step, steps, got_status = store.so_far(rid)
        assert (got_step, steps, got_status) == (step, 60, status)
        pd.testing.assert_frame_equal(metrics.sort_values(key).reset_index(drop=True), cut(step), check_dtype=False)
        view = InProgressView(store)
        assert view.complete(rid).metrics.step.max() == step
        assert view.read == ({} if status == "complete" else {rid: (step, 60)})
    assert RunStore(tmp_path / "none").so_far(rid) is None
