"""The stage checks (S1-S5) over task instances and over a subset of their conditions: instance 0 keeps the
protocol's run ids, other instances change only the task seed (and so the held-out split), `--variant` trains only
the named conditions, and each per-h row says which run each value came from."""
import numpy as np
import pytest

from critwin.empirical import RunStore
from critwin.empirical.tasks.alchemy_chemistry import held_out_split
from critwin.errors import ConfigError
from critwin.paper_checks import CHECKS
from critwin.paper_checks import alchemy_checks
from critwin.paper_checks.base import write_result
from tests.test_alchemy_checks import rise, save

MIDDLE = "h=2: step P(C|A,B) completes (the middle stage; nan: never; reported)"


def test_instance_zero_keeps_the_protocols_runs_and_others_change_only_the_task_seed():
    s4 = CHECKS["S4"]
    plain = s4.configs("cpu", 3, "stone_states")
    more = s4.configs("cpu", 3, "stone_states", task_seeds=2)
    assert len(more) == 2 * len(plain)
    assert {k: c.run_id() for k, c in more.items() if k[1] == 0} == {k: c.run_id() for k, c in plain.items()}
    for (name, t, s), c in more.items():
        if t == 1:
            base = more[(name, 0, s)].resolved()
            assert c.task_seed == 1 and c.run_id() != more[(name, 0, s)].run_id()
            assert {k: v for k, v in c.resolved().items() if k != "task_seed"} == \
                   {k: v for k, v in base.items() if k != "task_seed"}
    # the two instances hold out different chemistries (the task's own split, computed from each task seed)
    held = [{str(ch) for ch in held_out_split("toolkit", t)[1]} for t in (0, 1)]
    assert len(held[0]) == len(held[1]) == 165 and held[0] != held[1]


def test_a_variant_trains_only_its_condition_and_rows_name_their_runs(tmp_path, monkeypatch):
    trained = []
    monkeypatch.setattr(alchemy_checks, "run_sweep", lambda cfgs, *a, **k: trained.extend(cfgs))
    store = RunStore(tmp_path)
    s4 = CHECKS["S4"]
    reach = {(0, 2): 900, (1, 0): 1500}                  # (task instance, seed) -> middle stage; others never
    for (name, t, s), cfg in s4.configs("cpu", 3, task_seeds=2, variants=["decomposition h2"]).items():
        save(store, cfg, {"event_a": rise(100, 0.2), "event_c": rise(None), "p_c_given_ab": rise(reach.get((t, s)), 0.3)})
    res = s4.run("cpu", store, train=True, seeds=3, task_seeds=2, variants=["decomposition h2"])
    assert sorted((c.hops, c.task_seed, c.seed) for c in trained) == [(2, t, s) for t in (0, 1) for s in range(3)]
    assert "2 task instances" in res["verdict"] and "incomplete: 6 of 24" in res["verdict"]
    row = next(r for r in res["rows"] if r["value"] == MIDDLE)
    got = {(t, s): v for t, s, v in zip(row["task_seed"], row["seed"], row["per_seed"])}
    assert len(got) == 6 and got[(0, 2)] == 900 and got[(1, 0)] == 1500
    assert all(np.isnan(v) for k, v in got.items() if k not in reach)
    assert row["training"] == [False] * 6                 # every stored run here is finished
    assert write_result(res, tmp_path / "out", "test").name == "S4_cpu_tasks2.json"


def test_unknown_conditions_and_task_instances_for_s6_are_refused(tmp_path, capsys):
    from critwin.cli.main import main
    with pytest.raises(ConfigError, match="decomposition h2"):
        CHECKS["S4"].configs("cpu", variants=["h2"])
    with pytest.raises(ConfigError, match="task_seeds"):
        CHECKS["S6"].run("cpu", RunStore(tmp_path), train=False, task_seeds=2)
    with pytest.raises(ConfigError, match="input_format"):
        CHECKS["S6"].run("authors", RunStore(tmp_path), train=False, input_format="stone_states")
    assert main(["check", "S6", "--variant", "x", "--no-train", "--store", str(tmp_path)]) == 2
    assert "conditions (S1-S5)" in capsys.readouterr().err


@pytest.mark.parametrize("argv,field", [(["S4", "--decay-form", "decoupled"], "decay_form"),
                                        (["S1", "--decay-set", "all"], "decay_set"),
                                        (["S6", "--input-format", "stone_states", "--size", "authors"],
                                         "input_format"),
                                        (["W3", "--input-format", "stone_states"], "input_format")])
def test_options_the_alchemy_checks_cannot_honour_are_refused_not_ignored(tmp_path, capsys, argv, field):
    from critwin.cli.main import main
    size = [] if "--size" in argv else ["--size", "cpu"]
    assert main(["check", *argv, *size, "--no-train", "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1
