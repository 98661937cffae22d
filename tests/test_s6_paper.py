"""S6 in the paper's form: freeze points from a hand-built baseline curve, delays against hand-built frozen curves,
censoring, and the registered verdict rule on hand-built delays (no training)."""
import math

import numpy as np
import pytest

from critwin.empirical.metrics.stages import StagesReached, stage_timing
from critwin.paper_checks.s6_paper import (
    PROTOCOLS,
    Protocol,
    either_stage,
    freeze_epochs,
    judge,
    over_seeds,
    point_status,
    stage_delay,
    stage_window,
)

SPE = 10                                       # steps an epoch in the hand-built curves (one evaluation an epoch)
P = Protocol("tiny", "cpu", None, 60, 4)       # 60 epochs, freeze at t_A + 0, 10, 20, 30


def curve(rise_epoch, epochs=60, low=0.3, high=0.97, spike=None):
    """One evaluation an epoch (step = epoch * SPE): `low` before `rise_epoch`, `high` from it (never: None)."""
    ep = np.arange(epochs + 1)
    v = np.where(ep >= (rise_epoch if rise_epoch is not None else epochs + 1), high, low).astype(float)
    if spike is not None:
        v[spike] = high
    return ep * SPE, v


def timing(metric, rise_epoch, epochs=60, **kw):
    s, v = curve(rise_epoch, epochs, **kw)
    return stage_timing(s, v, metric, SPE, P.epochs)


def test_freeze_points_from_a_hand_built_baseline():
    # A at 0.97 from epoch 7; isolated spikes earlier do not count (three in a row)
    t_a = timing("event_a", 7, spike=[2, 4])
    assert not t_a["censored"] and t_a["epoch"] == 7
    assert freeze_epochs(t_a["epoch"], P) == [7, 17, 27, 37]
    # points at or past the protocol's end are dropped; A never complete: no freeze points
    assert freeze_epochs(35, P) == [35, 45, 55]
    assert freeze_epochs(float("nan"), P) == []
    # A at 0.94 never completes A (level 0.95) but would complete a 0.9 stage
    s, v = curve(5, high=0.94)
    assert stage_timing(s, v, "event_a", SPE, 60)["censored"]
    assert not stage_timing(s, v, "p_b_given_a", SPE, 60)["censored"]
    # the registered protocols
    assert (PROTOCOLS["stone_cpu"].epochs, PROTOCOLS["stone_cpu"].points, PROTOCOLS["stone_cpu"].seeds) == (100, 8, 3)
    assert freeze_epochs(1, PROTOCOLS["stone_cpu"]) == [1, 11, 21, 31, 41, 51, 61, 71]
    assert freeze_epochs(68, PROTOCOLS["authors"])[-1] == 308       # the authors' held-out seed 42: 68 .. 308


def test_delays_against_hand_built_frozen_curves():
    base = timing("p_b_given_a", 20)
    assert base["epoch"] == 20
    # frozen from epoch 7: completes at 35 -> 15 epochs late, in the window
    d = stage_delay(base, timing("p_b_given_a", 35), 7)
    assert d == {"kind": "complete", "delay": 15.0, "lower_bound": False} and point_status(d, 10) == "in"
    # frozen from 17: completes at 24 -> 4 epochs, closed
    d = stage_delay(base, timing("p_b_given_a", 24), 17)
    assert d["delay"] == 4 and point_status(d, 10) == "closed"
    # frozen at or after the baseline's completion: inherited 0 whatever the frozen curve does
    d = stage_delay(base, timing("p_b_given_a", None), 20)
    assert d["kind"] == "inherited" and d["delay"] == 0 and point_status(d, 10) == "inherited"
    # the frozen run's curve holds the baseline's prefix (a branch), so a rise continuing across the freeze counts
    s, v = curve(19)
    assert stage_timing(s, v, "p_b_given_a", SPE, 60)["epoch"] == 19


def test_censoring_frozen_and_baseline():
    base = timing("p_c_given_ab", 45)
    # frozen from 27, never complete by epoch 60: delay >= 15, a lower bound past 10 -> in the window
    fro = timing("p_c_given_ab", None)
    assert fro["censored"] and fro["epoch_reached"] == 60
    d = stage_delay(base, fro, 27)
    assert d["kind"] == "censored" and d["lower_bound"] and d["delay"] == 15 and point_status(d, 10) == "in"
    # baseline completes at 55: a frozen run censored at 60 bounds the delay by 5 only -> undecided
    late = timing("p_c_given_ab", 55)
    d = stage_delay(late, fro, 37)
    assert d["delay"] == 5 and point_status(d, 10) == "undecided"
    # a frozen run paused at epoch 30 (still training) is censored where it stopped
    s, v = curve(None)
    cut = stage_timing(s[:31], v[:31], "p_c_given_ab", SPE, 60)
    assert cut["epoch_reached"] == 30
    # baseline censored: no delay, whatever the frozen run does
    d = stage_delay(timing("p_c_given_ab", None), timing("p_c_given_ab", 30), 7)
    assert d["kind"] == "baseline censored" and math.isnan(d["delay"]) and point_status(d, 10) == "baseline censored"
    assert d["epoch_reached"] == 60 and d["protocol_epochs"] == 60


def test_stages_reached_pause_rule():
    rows = [(e * SPE, "test", m, 0.95 if e >= 3 else 0.2) for e in range(8) for m in ("p_b_given_a",)]
    rows += [(e * SPE, "test", "p_c_given_ab", 0.95 if e >= 6 else 0.2) for e in range(8)]
    rule = StagesReached(("p_b_given_a", "p_c_given_ab"))
    assert not rule([r for r in rows if r[0] <= 7 * SPE])        # C given A,B: 6, 7 only two in a row
    assert rule(rows + [(8 * SPE, "test", "p_c_given_ab", 0.95)])


def _d(kind, delay=math.nan, lower=False, reached=None):
    out = {"kind": kind, "delay": delay, "lower_bound": lower}
    if reached is not None:
        out.update(epoch_reached=reached, protocol_epochs=100)
    return out


def test_stage_window_statuses_and_lengths():
    # in at 1 and 11, closed from 21: a window of 20 epochs, closing at 21
    w = stage_window([(1, _d("censored", 80, True, 100)), (11, _d("complete", 30)), (21, _d("complete", 3)),
                      (31, _d("inherited", 0.0))], 10)
    assert w["status"] == "window" and w["length"] == 20 and w["closes_at"] == 21 and not w["length_censored"]
    # in the window up to the last non-inherited point: closes at the next point, inherited (not censored)
    w = stage_window([(1, _d("complete", 15)), (11, _d("inherited", 0.0))], 10)
    assert w["status"] == "window" and w["length"] == 10 and w["closes_at"] == 11 and not w["length_censored"]
    # in up to the last freeze point: a lower bound
    w = stage_window([(1, _d("complete", 15)), (11, _d("censored", 40, True, 100))], 10)
    assert w["status"] == "window" and w["length"] == 20 and w["length_censored"]
    # every non-inherited point closed: none
    w = stage_window([(1, _d("complete", 2)), (11, _d("complete", 0)), (21, _d("inherited", 0.0))], 10)
    assert w["status"] == "none" and w["length"] == 0
    # baseline censored: inconclusive, carrying the censoring
    w = stage_window([(1, _d("baseline censored", reached=100)), (11, _d("baseline censored", reached=100))], 10)
    assert w["status"] == "inconclusive" and w["why"] == "censored" and len(w["censored"]) == 2
    # undecided with none in the window: inconclusive; every point inherited: not testable
    w = stage_window([(1, _d("complete", 1)), (91, _d("censored", 5, True, 100))], 10)
    assert w["status"] == "inconclusive"
    w = stage_window([(1, _d("inherited", 0.0))], 10)
    assert w["status"] == "inconclusive" and "first freeze point" in w["why"]
    # a run not read yet keeps it open
    w = stage_window([(1, _d("complete", 1)), (11, _d("missing"))], 10)
    assert w["status"] == "inconclusive" and w["why"] == "runs missing"


def _windows(table):
    """(component, stage, seed) -> stage_window from compact specs: 'w<len>' window closing, 'W<len>' window
    censored at its length, 'n' none, 'c' baseline censored."""
    out = {}
    for (c, st, s), spec in table.items():
        if spec == "n":
            pts = [(1, _d("complete", 0))]
        elif spec == "c":
            pts = [(1, _d("baseline censored", reached=100))]
        elif spec[0] == "w":
            k = int(spec[1:]) // 10
            pts = [(1 + 10 * i, _d("complete", 30)) for i in range(k)] + [(1 + 10 * k, _d("complete", 0))]
        else:
            k = int(spec[1:]) // 10
            pts = [(1 + 10 * i, _d("censored", 50, True, 100)) for i in range(k)]
        out[(c, st, s)] = stage_window(pts, 10)
    return out


def _table(spec):
    """spec: component -> (B given A per seed, C given A,B per seed)."""
    return {(c, st, s): v for c, (b, cc) in spec.items()
            for st, vals in (("p_b_given_a", b), ("p_c_given_ab", cc)) for s, v in enumerate(vals)}


def test_verdict_rule_reproduced_not_reproduced_inconclusive():
    layers = ["layer0", "layer1"]
    # every layer has a window (B given A) on 2 of 3 seeds; the third is censored: reproduced
    w = _windows(_table({"embedding": (["w10", "w10", "c"], ["n", "n", "n"]),
                         "layer0": (["w20", "w30", "c"], ["n", "n", "n"]),
                         "layer1": (["n", "w20", "c"], ["w10", "n", "n"])}))
    j = judge(w, layers, 3, 100)
    assert j["per_seed"][("layer1", 0)] == "window"         # through C given A,B
    assert j["per_component"] == {"embedding": "window", "layer0": "window", "layer1": "window"}
    assert j["claim"] == "reproduced" and j["layers_with_window"] == "2 of 2" and j["fraction_decided"] == 1.0
    assert j["longer"]["verdict"] == "reproduced"            # layer0 20, 30 >= 10, 10 (B given A); layer1 shares B given A windows with the embedding on one seed only: not compared
    # layer 1 has none on 2 seeds: not reproduced
    w = _windows(_table({"embedding": (["w10"] * 3, ["n"] * 3), "layer0": (["w20"] * 3, ["n"] * 3),
                         "layer1": (["n", "n", "w10"], ["n", "n", "n"])}))
    j = judge(w, layers, 3, 100)
    assert j["per_component"]["layer1"] == "none" and j["claim"] == "not reproduced" and j["fraction_decided"] == 0.5
    # layer 1: one window, one none, one censored: inconclusive, naming the censoring
    w = _windows(_table({"embedding": (["w10"] * 3, ["n"] * 3), "layer0": (["w20"] * 3, ["n"] * 3),
                         "layer1": (["w10", "n", "c"], ["n", "n", "c"])}))
    j = judge(w, layers, 3, 100)
    assert j["per_component"]["layer1"] == "inconclusive"
    assert j["claim"] == "inconclusive (censored at epoch 100 of the protocol's 100 (100%))"


def test_verdict_rule_layers_against_the_embedding():
    layers = ["layer0"]
    # the layer's window shorter than the embedding's on every seed: not reproduced
    w = _windows(_table({"embedding": (["w30"] * 3, ["n"] * 3), "layer0": (["w10"] * 3, ["n"] * 3)}))
    assert judge(w, layers, 3, 100)["longer"]["verdict"] == "not reproduced"
    # both windows run to the last freeze point: lengths censored, inconclusive
    w = _windows(_table({"embedding": (["W40"] * 3, ["n"] * 3), "layer0": (["W40"] * 3, ["n"] * 3)}))
    j = judge(w, layers, 3, 100)
    assert j["claim"] == "reproduced" and j["longer"]["verdict"].startswith("inconclusive")
    # a layer's censored bound already past the embedding's decided length: yes
    w = _windows(_table({"embedding": (["w10"] * 3, ["n"] * 3), "layer0": (["W40"] * 3, ["n"] * 3)}))
    assert judge(w, layers, 3, 100)["longer"]["verdict"] == "reproduced"


def test_combining_stages_and_seeds():
    assert either_stage(["none", "window"]) == "window"
    assert either_stage(["none", "none"]) == "none"
    assert either_stage(["none", "inconclusive"]) == "inconclusive"
    assert over_seeds(["window", "window", "none"], 2) == "window"
    assert over_seeds(["none", "inconclusive", "none"], 2) == "none"
    assert over_seeds(["window", "none", "inconclusive"], 2) == "inconclusive"


@pytest.mark.parametrize("name", ["stone_cpu", "authors"])
def test_dry_run_lists_the_runs_without_training(tmp_path, name):
    from critwin.empirical import RunStore
    from critwin.paper_checks.s6_paper import dry_run
    store = RunStore(tmp_path / "store")
    text = dry_run(PROTOCOLS[name], store)
    assert text.count("probe") >= 3 and "at most" in text
    assert not any((tmp_path / "store").glob("*/summary.json"))


class _FakeStore:
    """A store whose runs are hand-built held-out curves: run id -> (metrics frame, step, steps, status)."""

    def __init__(self):
        self.runs = {}

    def so_far(self, rid):
        return self.runs.get(rid)

    def status(self, rid):
        got = self.runs.get(rid)
        return None if got is None else got[3]


def _frame(spe, epochs, rises):
    import pandas as pd
    rows = [(e * spe, "test", m, 0.97 if (r is not None and e >= r) else 0.3)
            for m, r in rises.items() for e in range(epochs + 1)]
    return pd.DataFrame(rows, columns=["step", "split", "metric", "value"])


def test_measure_and_verdict_on_a_hand_built_store():
    from dataclasses import replace

    from critwin.paper_checks.s6_paper import plan, result
    prot = replace(PROTOCOLS["stone_cpu"], seeds=1)
    store = _FakeStore()
    p = plan(prot, store)
    spe, r = p["spe"], p["per_seed"][0]
    assert r["t_a"] is None and not r["branches"]           # no probe yet: nothing else planned
    store.runs[r["probe"].run_id()] = (_frame(spe, 3, {"event_a": 1}), 3 * spe, prot.epochs * spe, "paused")
    r = plan(prot, store)["per_seed"][0]
    assert r["t_a"] == 1 and r["freeze_epochs"] == [1, 11, 21, 31, 41, 51, 61, 71]
    assert r["baseline"].checkpoints == tuple(f * spe for f in r["freeze_epochs"])
    base = {"event_a": 1, "p_b_given_a": 20, "p_c_given_ab": 8}
    store.runs[r["baseline"].run_id()] = (_frame(spe, 100, base), 100 * spe, 100 * spe, "complete")
    r = plan(prot, store)["per_seed"][0]
    assert sorted({f for _, f in r["branches"]}) == [1, 11]  # later points inherit both stages
    bl = {("embedding", 1): 25, ("embedding", 11): 25, ("layer0", 1): None, ("layer0", 11): None,
          ("layer1", 1): 40, ("layer1", 11): 22}
    assert "incomplete" in result(prot, store)["verdict"]
    for (c, f), cfg in r["branches"].items():
        curve = _frame(spe, 100, {**base, "p_b_given_a": bl[(c, f)]})
        store.runs[cfg.run_id()] = (curve, 100 * spe, 100 * spe, "complete")
    res = result(prot, store)
    assert res["verdict"].startswith("reproduced (2 of 2 layers with a window")
    d = {(x["component"], x["stage"], x["freeze_epoch"]): x for x in res["delays"]}
    assert d[("layer0", "p_b_given_a", 1)]["delay"] == 80 and d[("layer0", "p_b_given_a", 1)]["lower_bound"]
    assert d[("embedding", "p_b_given_a", 11)]["status"] == "closed"
    assert d[("layer1", "p_c_given_ab", 11)]["kind"] == "inherited"


def _state(root):
    """Every stored run folder and file under a store, with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if p.is_file()}


def _component_names(cfg, state: dict) -> dict:
    """Component -> its parameters' names in a checkpoint's model state (from the model's own `components`)."""
    from critwin.empirical.train import build_model
    model = build_model(cfg, state["tok.weight"].shape[0], state["pos.weight"].shape[0], state["unembed.weight"].shape[0])
    names = {id(p): n for n, p in model.named_parameters()}
    return {c: [names[id(p)] for p in ps] for c, ps in model.components().items()}


@pytest.mark.slow
def test_quick_protocol_trains_the_whole_path(tmp_path, capsys):
    """The training path end to end at the quick (test) size, through the real command: the probe pauses at A's
    completion, the baseline checkpoints at the freeze points, the timing rows and the verdict (censored: no later
    stage completes at this size), a rerun that trains nothing; then one branch per component and point from those
    checkpoints, paused by the branch rule, freezes that component (its parameters unchanged after)."""
    import json
    from dataclasses import replace

    import torch

    from critwin.cli.main import main
    from critwin.empirical.metrics.stages import StageReached
    from critwin.empirical.store import RunStore
    from critwin.empirical.sweep import run_sweep
    from critwin.empirical.sweep.executors import LocalExecutor
    from critwin.paper_checks.s6_paper import PAPER_STAGES, plan, settled, read_timings

    prot = PROTOCOLS["quick"]
    assert "TEST SIZE" in prot.label
    root, results = tmp_path / "store", tmp_path / "results"
    cmd = ["check", "S6", "--paper-form", "quick", "--store", str(root), "--results", str(results),
           "--workers", "1", "--no-progress"]
    assert main(cmd) == 0
    out = capsys.readouterr().out
    store = RunStore(root)
    p = plan(prot, store)
    spe, r = p["spe"], p["per_seed"][0]
    assert p["flat"]["eval_every"] == spe and p["components"] == ["embedding", "layer0", "layer1"]

    # the probe: paused at the first evaluation where A has completed (three in a row), before the end
    probe = store.load(r["probe"].run_id())
    assert store.status(r["probe"].run_id()) == "paused" and probe.steps_done < r["probe"].steps
    rows = list(probe.metrics.itertuples(index=False, name=None))
    assert StageReached("event_a")(rows)
    assert not StageReached("event_a")([x for x in rows if x[0] < probe.steps_done])
    assert r["t_a"] is not None and r["freeze_epochs"] == freeze_epochs(r["t_a"], prot) and len(r["freeze_epochs"]) == 2

    # the baseline: the probe's config to the end, a checkpoint at each freeze point
    base = r["baseline"]
    steps = [int(f * spe) for f in r["freeze_epochs"]]
    assert store.status(base.run_id()) == "complete" and store.load(base.run_id()).steps_done == base.steps
    assert sorted(store.checkpoint_steps(base.run_id())) == steps
    assert replace(base, checkpoints=()) == replace(r["probe"], checkpoints=())

    # no later stage completes this early in the test-size baseline, so no branch is planned (their delays would
    # be censored whatever a branch does) and every window is inconclusive, censored at the protocol's end
    assert r["deadlines"] == {m: None for m in PAPER_STAGES} and r["branches"] == {}
    res = json.loads(next(results.glob("S6_paper_form_quick*.json")).read_text())
    have = {(d["component"], d["stage"], d["freeze_epoch"], d["seed"]) for d in res["delays"]}
    assert have == {(c, st, f, 0) for c in p["components"] for st in PAPER_STAGES for f in r["freeze_epochs"]}
    assert {d["kind"] for d in res["delays"]} == {"baseline censored"}
    assert res["verdict"].startswith("inconclusive (censored at epoch 9 of the protocol's 9")
    assert res["verdict"].endswith(f"({prot.label})")
    assert f"verdict: {res['verdict']}" in out and res["protocol"] == "quick"
    assert next(results.glob("S6_paper_form_quick*.png")).read_bytes()[:4] == b"\x89PNG"

    # rerun: nothing trains, nothing in the store changes
    before = _state(root)
    assert main(cmd) == 0
    assert _state(root) == before

    # the branches' path: every component frozen from each checkpoint, paused by the branch rule at the first
    # evaluation past a deadline 1 evaluation after the freeze (B given A never completes here)
    from critwin.empirical.metrics.stages import StagesDecided
    from critwin.paper_checks.s6_paper import branch_config
    from critwin.empirical.sweep import Pause
    branches = {(c, f): branch_config(base, c, f, spe) for c in p["components"] for f in r["freeze_epochs"]}
    for (c, f), cfg in branches.items():
        assert cfg.freeze == ((c, int(f * spe)),) and cfg.branch == f"{base.run_id()}@{int(f * spe)}"
        assert cfg.freeze_optimizer == "rebuild" and cfg.checkpoints == ()
        assert replace(cfg, freeze=(), branch=None, freeze_optimizer=base.freeze_optimizer) == replace(base, checkpoints=())
        deadline = {"p_b_given_a": int((f + 1) * spe), "p_c_given_ab": None}
        run_sweep([cfg], store, LocalExecutor(1), progress=False, pack=1, pause=Pause(when=StagesDecided(deadline)))
        t = read_timings(store, cfg, spe, prot.epochs)
        stop = min(int((f + 2) * spe), cfg.steps)       # the first evaluation past the deadline, or the end
        assert t["step"] == stop and store.status(cfg.run_id()) == ("paused" if stop < cfg.steps else "complete")
        assert settled(t, deadline) and t["p_b_given_a"]["censored"]
        assert not settled({**t, "status": "paused", "p_b_given_a": {**t["p_b_given_a"], "bound_step": (f + 1) * spe}},
                           deadline)
        # a branch's curve holds the baseline's up to its freeze step (it continues from the checkpoint)
        fm, bm = store.load(cfg.run_id()).metrics, store.load(base.run_id()).metrics
        pre = fm[fm.step <= int(f * spe)].reset_index(drop=True)
        assert len(pre) and pre.equals(bm[bm.step <= int(f * spe)].reset_index(drop=True)[pre.columns])

    # each branch replayed to the end with a checkpoint at its pause step (the same training: the same curves): the frozen
    # component's parameters there equal the baseline's checkpoint at the freeze step, the others moved
    for (c, f), cfg in branches.items():
        got = store.load(cfg.run_id())
        again = replace(cfg, checkpoints=(got.steps_done,))
        run_sweep([again], store, LocalExecutor(1), progress=False, pack=1)        # to the end, unpaused
        a = store.load(again.run_id()).metrics
        cols = ["step", "split", "metric", "value"]
        a = a[a.step <= got.steps_done]
        assert a[cols].reset_index(drop=True).equals(got.metrics[cols].reset_index(drop=True))
        w_f = store.checkpoint(base.run_id(), int(f * spe))["model"]
        w_end = store.checkpoint(again.run_id(), got.steps_done)["model"]
        names = _component_names(cfg, w_f)
        for comp in p["components"]:
            same = all(torch.equal(w_f[n], w_end[n]) for n in names[comp])
            assert same == (comp == c), (c, f, comp)


def _first_three_in_a_row(values, level):
    """Brute force: the index where `values` first starts 3 in a row at or above `level` (None: never)."""
    for i in range(len(values) - 2):
        if all(v >= level for v in values[i:i + 3]):
            return i
    return None


def test_stages_decided_and_the_bound_against_every_continuation():
    """A branch's pause rule and the censored stage's bound, checked by enumerating every continuation of random
    hand-built curves: the rule pauses only where no continuation can change whether the stage completes by the
    deadline, and at most one evaluation later than the enumeration allows."""
    import itertools

    from critwin.empirical.metrics.stages import StagesDecided
    rng = np.random.default_rng(0)
    lo, hi, cont = 0.3, 0.95, 6
    tails = list(itertools.product((lo, hi), repeat=cont))
    checked = lagged = 0
    for _ in range(300):
        n_ev = int(rng.integers(2, 9))
        vals = list(rng.choice([lo, hi], size=n_ev, p=[0.45, 0.55]))
        last = (n_ev - 1) * SPE
        deadline = int(rng.integers(0, n_ev + 3)) * SPE
        rows = [(i * SPE, "test", "p_b_given_a", v) for i, v in enumerate(vals)]
        outcomes, earliest = set(), math.inf
        for tail in tails:
            i = _first_three_in_a_row(vals + list(tail), 0.9)
            outcomes.add(i is not None and i * SPE <= deadline)
            if i is not None:
                earliest = min(earliest, i * SPE)
        brute_decided = len(outcomes) == 1
        rule = StagesDecided({"p_b_given_a": deadline})(rows)
        t = stage_timing([r[0] for r in rows], vals, "p_b_given_a", SPE, 60)
        if t["censored"]:
            streak = vals[-1] >= 0.9
            assert t["bound_step"] == (earliest if streak else last) and t["bound_step"] <= earliest
        else:
            assert t["bound_step"] == t["step"] == earliest
        assert not rule or brute_decided
        if brute_decided and not rule:       # the one evaluation of lag: below the level exactly at the deadline
            assert t["censored"] and vals[-1] < 0.9 and last == deadline
            lagged += 1
        checked += rule
    assert checked > 50 and lagged > 0
    assert StagesDecided({"p_b_given_a": None})([]) is True     # a stage not waited for is decided


def test_plan_skips_stages_the_baseline_never_completes_and_reads_a_paused_baseline(tmp_path):
    from dataclasses import replace

    from critwin.paper_checks.s6_paper import branch_deadlines, plan, planned_steps, result, settled
    prot = replace(PROTOCOLS["stone_cpu"], seeds=1)
    store = _FakeStore()
    p = plan(prot, store)
    spe, r = p["spe"], p["per_seed"][0]
    store.runs[r["probe"].run_id()] = (_frame(spe, 3, {"event_a": 1}), 3 * spe, prot.epochs * spe, "paused")
    r = plan(prot, store)["per_seed"][0]
    # a baseline paused once both later stages complete is settled: its times can no longer move
    base = {"event_a": 1, "p_b_given_a": 20, "p_c_given_ab": 8}
    store.runs[r["baseline"].run_id()] = (_frame(spe, 23, base), 23 * spe, 100 * spe, "paused")
    r = plan(prot, store)["per_seed"][0]
    assert settled(r["base_timings"]) and r["deadlines"] == {"p_b_given_a": 30 * spe, "p_c_given_ab": 18 * spe}
    assert sorted({f for _, f in r["branches"]}) == [1, 11]
    # paused too early (B given A not complete): not settled, every point planned until it is
    store.runs[r["baseline"].run_id()] = (_frame(spe, 15, base), 15 * spe, 100 * spe, "paused")
    r = plan(prot, store)["per_seed"][0]
    assert not settled(r["base_timings"]) and len({f for _, f in r["branches"]}) == 8
    # a baseline that never completes B given A: branches only where C given A,B is still to complete
    base = {"event_a": 1, "p_b_given_a": None, "p_c_given_ab": 8}
    store.runs[r["baseline"].run_id()] = (_frame(spe, 100, base), 100 * spe, 100 * spe, "complete")
    r = plan(prot, store)["per_seed"][0]
    assert r["deadlines"]["p_b_given_a"] is None and sorted({f for _, f in r["branches"]}) == [1]
    assert branch_deadlines(r["base_timings"], 10, spe) == r["deadlines"]
    # the dry run's bound on the branches' steps: 3 components from epoch 1 to 2 evaluations past 8 + 10
    assert planned_steps(prot, plan(prot, store)) == 3 * (20 - 1) * spe
    # its branches paused by the rule: one frozen layer misses C given A,B by more than 10 epochs, the others
    # complete it; the verdict reads them as settled (B given A: baseline censored, inconclusive)
    for (c, f), cfg in r["branches"].items():
        rise = {"embedding": 9, "layer0": None, "layer1": 12}[c]
        stop = 19 if rise is None else rise + 3
        store.runs[cfg.run_id()] = (_frame(spe, stop, {**base, "p_c_given_ab": rise}), stop * spe, 100 * spe, "paused")
    res = result(prot, store)
    assert "incomplete" not in res["verdict"]
    d = {(x["component"], x["stage"]): x for x in res["delays"] if x["freeze_epoch"] == 1}
    assert d[("layer0", "p_c_given_ab")]["status"] == "in" and d[("layer0", "p_c_given_ab")]["delay"] == 11
    assert d[("embedding", "p_c_given_ab")]["status"] == "closed" and d[("layer1", "p_c_given_ab")]["delay"] == 4
    assert d[("layer0", "p_b_given_a")]["kind"] == "baseline censored"
    # the figure's curves: the baseline whole, each branch from its freeze point on (what it trained itself)
    from critwin.figures import plot_s6_paper
    from critwin.paper_checks.s6_paper import curves
    cv = curves(prot, store)[0]
    assert cv["completes"] == {"p_b_given_a": None, "p_c_given_ab": 8.0}
    assert list(cv["baseline"]["p_c_given_ab"][0]) == list(range(101))
    for (c, f), br in cv["branches"].items():
        x, y = br["p_c_given_ab"]
        assert x.min() == f + 1 and x.max() == (19 if c == "layer0" else {"embedding": 12, "layer1": 15}[c])
    png = plot_s6_paper(curves(prot, store), 10, tmp_path / "s6.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # one evaluation short of the deadline the frozen layer is not settled: the check is incomplete
    cfg = r["branches"][("layer0", 1)]
    store.runs[cfg.run_id()] = (_frame(spe, 18, {**base, "p_c_given_ab": None}), 18 * spe, 100 * spe, "paused")
    assert "incomplete" in result(prot, store)["verdict"]
