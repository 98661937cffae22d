"""Bad input is refused before any work, in one line naming the field (exit 2): grids too large to
build, decay keys that would be ignored, plasticity metrics the task does not log, Dask addresses that
are not addresses, argparse mistakes. Each on a real `critwin` process."""
import os
import subprocess
import sys
import time

import pytest

from critwin.empirical.sweep import SweepSpec
from critwin.errors import ConfigError

CRITWIN = [sys.executable, "-m", "critwin.cli"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TEN = ",".join(map(str, range(1, 11)))


def one_line_error(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def run(args, tmp_path, timeout=60):
    try:
        return subprocess.run(CRITWIN + args, env=ENV, capture_output=True, text=True, timeout=timeout,
                              cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"critwin {' '.join(args)} neither refused nor finished within {timeout} s")


def test_a_million_point_grid_is_refused_at_once_with_its_count_and_the_flag(tmp_path):
    t0 = time.time()
    grid = [x for k in ("seed", "task_seed", "batch_size", "eval_every", "steps") for x in ("--set", f"{k}={TEN}")]
    grid += ["--set", "gamma=" + ",".join(f"0.{k}" for k in range(1, 11))]      # every point valid: 10^6 of them
    r = run(["sweep", "run", *grid, "--store", "s", "--no-progress"], tmp_path, timeout=30)
    one_line_error(r, "1,000,000", "--max-runs", "10,000")
    assert time.time() - t0 < 30 and not (tmp_path / "s").exists()


def test_max_runs_sets_the_limit(tmp_path):
    r = run(["sweep", "run", "--set", "seed=0,1,2,3", "--set", "steps=10", "--max-runs", "3", "--store", "s",
             "--no-progress"], tmp_path)
    one_line_error(r, "4 runs", "--max-runs 3")
    spec = SweepSpec().with_sets(["seed=0,1,2,3", "d=16,32"])
    assert spec.size() == 8 and len(spec.expand(max_runs=8)) == 8
    with pytest.raises(ConfigError, match="8 runs"):
        spec.expand(max_runs=7)


def test_a_plasticity_grid_is_counted_before_it_is_built(tmp_path):
    r = run(["plasticity", "--every", "1", "--stop", "10000000", "--store", "s", "--no-progress"], tmp_path, timeout=30)
    one_line_error(r, "20,000,004 runs", "--max-runs")


# Every command that builds a grid of runs, given one far past --max-runs: its arguments, and the count it refuses.
STORE = ["--store", "s", "--no-progress"]
HUGE_GRIDS = {
    "phase": (["phase", "--size", "paper", "--task-seeds", "1000000", "--out", "o", *STORE], "75,000,000 runs"),
    "readings": (["readings", "--train", "--task-seeds", "1000000", "--out", "o", *STORE], "25,000,000 runs"),
    "check": (["check", "W1", "--size", "paper", "--seeds", "10000000", "--results", "", *STORE], "60,000,000 runs"),
    "check all": (["check", "all", "--size", "paper", "--task-seeds", "1000000", "--results", "", *STORE],
                  "1,000,000 task instances"),
    "check S6": (["check", "S6", "--freeze-points", "100000000", "--results", "", *STORE], "300,000,003 runs"),
    "check S6 paper form": (["check", "S6", "--paper-form", "quick", "--seeds", "10000000", "--results", "", *STORE],
                            "80,000,000 runs"),
    "demo": (["demo", "--task-seeds", "100000", "--seeds", "10000", "--out", "o", "--store", "s"],
             "5,000,000,000 runs"),
    "sweep edge": (["sweep", "edge", "--set", "steps=10", "--seeds", "10000000", *STORE], "80,000,000 runs"),
    "bridge left-edge": (["bridge", "left-edge", "--task-seeds", "10000000", *STORE], "30,000,000 runs"),
    "bridge survival": (["bridge", "survival", "--task-seeds", "10000000", "--out", "o", "--no-progress"],
                        "120,000,000 runs"),
}


@pytest.mark.parametrize("name", HUGE_GRIDS)
def test_every_command_that_builds_a_grid_refuses_a_huge_one_at_once(tmp_path, name):
    args, count = HUGE_GRIDS[name]
    t0 = time.time()
    r = run(args, tmp_path, timeout=30)
    one_line_error(r, "grid='", count, "is invalid: at most --max-runs 10,000 runs (this grid: ", "--max-runs")
    assert time.time() - t0 < 30 and not any(tmp_path.iterdir())     # no store, no figure, nothing trained


@pytest.mark.parametrize("name", ["phase", "readings", "demo", "bridge left-edge"])
def test_max_runs_sets_the_limit_of_every_grid(tmp_path, name):
    r = run(HUGE_GRIDS[name][0] + ["--max-runs", "2"], tmp_path, timeout=30)
    one_line_error(r, "at most --max-runs 2 runs")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("extra,field", [(["--budget", "nan"], "budget_placement"),
                                         (["--budget", "20"], "budget_placement"),
                                         (["--width", "10"], "budget_placement"),
                                         (["--budget-placement", "early", "--budget", "nan", "--width", "10"], "budget"),
                                         (["--budget-placement", "early", "--budget", "0", "--width", "10"], "budget"),
                                         (["--budget-placement", "early", "--budget", "20", "--width", "10", "--wd",
                                           "1e-3"], "wd")])
def test_a_decay_budget_that_would_be_ignored_or_is_not_a_number_is_refused(tmp_path, extra, field):
    r = run(["train", "anchor", "--d", "16", "--steps", "10", "--batch-size", "32", "--store", "s", "--no-progress",
             *extra], tmp_path)
    assert one_line_error(r, "critwin: error:").split(": error: ")[1].startswith(f"{field}=")
    assert not (tmp_path / "s").exists()                 # refused before the store is made, nothing trained


def test_a_sweep_refuses_a_budget_without_its_placement(tmp_path):
    r = run(["sweep", "run", "--set", "budget=5", "--set", "steps=10", "--set", "d=16", "--store", "s",
             "--no-progress"], tmp_path)
    one_line_error(r, "budget_placement", "early, middle, late")
    assert not (tmp_path / "s").exists()


PLASTICITY = ["plasticity", "--set", "d=16", "--set", "steps=40", "--set", "batch_size=32", "--set", "eval_every=20",
              "--stop", "20", "--every", "10", "--seeds", "1", "--store", "s", "--no-progress", "--no-figure"]


@pytest.mark.parametrize("extra,field", [(["--metric", "train_acc"], "metric"), (["--split", "test"], "split"),
                                         (["--metric", "acc,event_c"], "metric")])
def test_plasticity_refuses_a_curve_the_task_does_not_log_before_training(tmp_path, extra, field):
    line = one_line_error(run(PLASTICITY + extra, tmp_path), f"{field}=", "anchor_permutation")
    assert "acc" in line or "ood" in line                   # names what the task does log
    assert not (tmp_path / "s").exists()                    # nothing trained, nothing stored


def test_plasticity_defaults_to_the_tasks_own_curve(tmp_path):
    r = run(PLASTICITY + ["--json", "--out", "o", "--start", "10"], tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    import json
    table = json.loads(r.stdout)["table"]
    assert table and {row["metric"] for row in table} == {"acc"}


@pytest.mark.parametrize("address", ["http://127.0.0.1:1", "nonsense::", "tcp://127.0.0.1"])
def test_a_malformed_dask_scheduler_address_is_one_line_naming_the_field(tmp_path, address):
    r = run(["sweep", "run", "--set", "steps=10", "--store", "s", "--executor", "dask", "--scheduler", address,
             "--no-progress"], tmp_path)
    one_line_error(r, f"scheduler={address!r}", "tcp://127.0.0.1:8786")


@pytest.mark.parametrize("args,bad", [(["train", "anchor", "--d", "abc"], "argument --d: invalid int value: 'abc'"),
                                      (["train", "anchor", "--device", "tpu"], "argument --device: invalid choice"),
                                      (["sweep"], "required: COMMAND")])
def test_an_argparse_mistake_is_one_line_with_a_help_hint(tmp_path, args, bad):
    line = one_line_error(run(args, tmp_path), bad)
    assert line.endswith(f"(see critwin {' '.join(a for a in args[:2] if not a.startswith('-'))} --help)"), line
    assert "usage:" not in line


def test_json_into_a_closed_pipe_ends_quietly(tmp_path):
    """`critwin ... --json | head -1` where head has gone before the JSON is written."""
    (tmp_path / "s").mkdir()
    proc = subprocess.Popen(CRITWIN + ["runs", "progress", "--store", "s", "--json"], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()                         # the reader is gone: every write meets a broken pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


@pytest.mark.parametrize("args", [["--help"], ["sweep", "--help"], ["sweep", "run", "--help"]])
def test_help_into_a_closed_pipe_ends_quietly(tmp_path, args):
    """`critwin --help | true`: the reader is gone before the help is written. argparse exits from inside
    parse_args, and stdout (block-buffered into a pipe, as from a shell) was flushed only at interpreter exit,
    where the broken pipe came out as 'Exception ignored ... BrokenPipeError' and exit code 120."""
    env = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(CRITWIN + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", (proc.returncode, err)


def test_a_long_output_into_head_ends_quietly(tmp_path):
    """`critwin alchemy export --complete | head -c1`: one byte read, then the reader is gone mid-output."""
    env = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(CRITWIN + ["alchemy", "export", "--complete"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    first = proc.stdout.read(1)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert first and proc.wait(timeout=120) == 141 and err == "", (proc.returncode, err)


def test_each_grid_is_counted_as_the_runs_it_builds(tmp_path):
    """The counts the guards refuse by are the configs the commands go on to build."""
    from critwin.bridge.plasticity import plasticity_configs
    from critwin.empirical import RunStore
    from critwin.paper_checks import CHECKS, s6_paper
    from critwin.paper_checks.phase import PhaseGrid
    from critwin.paper_checks.readings import DEFAULT_READINGS, plan, plan_size, select_rows
    for grid in (PhaseGrid(), PhaseGrid(size="quick", onsets=(1, 2, 3, 100), task_seeds=4),
                 PhaseGrid(gammas=(0.5, 0.5, 1.1), lambdas=(1e-3, 1e-3), onsets=(0, 5, 7500), task_seeds=2, seeds=2)):
        assert grid.grid_size()[0] == len(grid.configs())
    for readings, rows in ((DEFAULT_READINGS, select_rows("rank")),
                           (DEFAULT_READINGS[:2] + DEFAULT_READINGS[:1], select_rows("all", ("W1", "W1", "W4")))):
        assert plan_size(readings, rows, 2, 1)[0] == len(plan(readings, rows, 2, 1))
    for cid in ("W1", "W6", "W12", "S3", "S6"):
        chk = CHECKS[cid]
        for size, seeds in (("quick", None), ("paper", 2)):
            if cid == "S6":
                flat, grid, comps, seed_range, _ = chk.plan(size, seeds, 3)
                built = sum(len(plasticity_configs(flat, c, grid, seed_range)) for c in comps)
                assert chk.grid_size(size, seeds=seeds, points=3)[0] == built
            elif cid.startswith("S"):
                assert chk.grid_size(size, seeds=seeds, task_seeds=2)[0] == len(chk.configs(size, seeds, None, 2))
            else:
                assert chk.grid_size(size, seeds=seeds, task_seeds=2)[0] == len(chk.configs(size, seeds=seeds,
                                                                                             task_seeds=2))
    for protocol in s6_paper.PROTOCOLS.values():
        planned = s6_paper.count_runs(protocol, s6_paper.plan(protocol, RunStore(tmp_path / "s"), 2))
        most = planned["probes"] + planned["baselines"] + planned["branches_at_most"]
        assert s6_paper.grid_size(protocol, 2)[0] == most
