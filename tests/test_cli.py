import json
import subprocess
import sys

import pytest

from critwin.cli.main import main

SMALL = ["--d", "8", "--keys", "4", "--anchors", "4", "--train-pairs", "10", "--embeddings", "unit"]


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_derive_json(capsys):
    code, d = run_json(capsys, "theory", "derive")
    assert code == 0
    assert {"mu_m", "mu_r", "gamma_exponent_m", "gamma_exponent_r"} <= set(d)
    assert (d["gamma_exponent_m"], d["gamma_exponent_r"]) == (0, 2)


@pytest.mark.parametrize("method", ["recipe", "reduced", "full"])
def test_predict_json(capsys, tmp_path, method):
    code, d = run_json(capsys, "theory", "predict", "--gamma", "0.5", "1.0", "--method", method,
                       "--steps", "400", "--width", "100", "--wd", "0.5", "--out", str(tmp_path), *SMALL)
    assert code == 0 and len(d["rows"]) == 2
    for row in d["rows"]:
        assert {"sigma_e", "c_r", "mu_m", "mu_r", "t1_steps", "t2_steps", "method"} <= set(row)
    assert (tmp_path / "predict_windows.png").stat().st_size > 1000


def test_predict_single_gamma_has_top_level_keys(capsys, tmp_path):
    code, d = run_json(capsys, "theory", "predict", "--gamma", "0.8", "--no-figure")
    assert code == 0 and d["method"] == "recipe" and round(d["t2_steps"]) == 23105


@pytest.mark.parametrize("engine", ["reduced", "full", "gd"])
def test_schedule_json_and_figure(capsys, tmp_path, engine):
    code, d = run_json(capsys, "theory", "schedule", "--gamma", "0.8", "--wd-window", "100:200",
                       "--wd", "1.0", "--steps", "300", "--engine", engine, "--out", str(tmp_path), *SMALL)
    assert code == 0 and {"x", "rho", "reasoning_fraction", "budget"} <= set(d)
    assert d["budget"] == pytest.approx(100.0)
    assert (tmp_path / "schedule.png").exists()


def test_basin_and_laws_and_budget_json(capsys):
    code, d = run_json(capsys, "theory", "basin", "--gamma", "0.5", "1.0", "--seeds", "2",
                       "--steps", "100", *SMALL)
    assert code == 0 and [r["gamma"] for r in d["rows"]] == [0.5, 1.0]
    assert {"fraction_reached", "paper_bound"} <= set(d["rows"][0])
    code, d = run_json(capsys, "theory", "laws", "--gamma", "0.1", "0.4", "1.0", "--horizon", "500", *SMALL)
    assert code == 0 and "better_law" in d
    code, d = run_json(capsys, "theory", "budget", "--budget", "2", "--width", "100", "--steps", "400", *SMALL)
    assert code == 0 and len(d["rows"]) == 5


@pytest.mark.parametrize("argv,field", [
    (["theory", "predict", "--gamma", "0"], "gamma"),
    (["theory", "predict", "--gamma", "0.8", "--delta", "0.9"], "delta"),
    (["theory", "predict", "--train-pairs", "70"], "train_pairs"),
    (["theory", "schedule", "--wd-window", "5000:4000"], "wd_window"),
    (["theory", "schedule", "--wd-window", "15000:25000"], "wd_window"),
    (["theory", "schedule", "--wd-window", "abc"], "wd_window"),
    (["theory", "schedule", "--wd-window", "0:10", "--wd-window", "20:30", "--wd", "1", "2", "3"], "wd"),
])
def test_bad_input_names_the_option(capsys, argv, field):
    code = main([*argv, "--json", "--no-figure"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["field"] == field and field in out["error"]


def test_console_script_help():
    res = subprocess.run([sys.executable, "-m", "critwin.cli", "theory", "predict", "--help"],
                         capture_output=True, text=True, check=True)
    assert "--gamma" in res.stdout and "--method" in res.stdout


def test_compare_json(capsys, tmp_path):
    code, d = run_json(capsys, "theory", "compare", "--gamma", "0.3", "--wd-window", "100:200",
                       "--wd", "2", "--steps", "300", "--out", str(tmp_path), *SMALL)
    assert code == 0 and {"x_maxdiff_early", "rho_maxdiff_late", "final_reasoning_fraction_full"} <= set(d)
    assert (tmp_path / "compare.png").exists()


TINY_TRAIN = ["--d", "16", "--steps", "20", "--batch-size", "32", "--eval-every", "10", "--no-progress"]


def test_train_anchor_json_and_cache(capsys, tmp_path):
    argv = ["train", "anchor", *TINY_TRAIN, "--wd-window", "5:10", "--wd", "0.5", "--store", str(tmp_path)]
    code, d = run_json(capsys, *argv)
    assert code == 0 and {"run_id", "path", "final"} <= set(d) and d["cached"] is False
    assert {"train_acc", "ood_acc"} <= set(d["final"])
    assert d["config"]["wd_windows"] == [[5.0, 10.0, 0.5]]
    code, again = run_json(capsys, *argv)
    assert again["cached"] is True and again["final"] == d["final"]


def test_train_shift_budget_and_freeze(capsys, tmp_path):
    code, d = run_json(capsys, "train", "anchor", "--variant", "shift", *TINY_TRAIN, "--budget-placement",
                       "middle", "--budget", "2", "--width", "10", "--freeze", "layer1@15", "--store", str(tmp_path))
    assert code == 0 and d["config"]["wd_windows"] == [[5.0, 15.0, 0.2]]
    assert d["config"]["freeze"] == [["layer1", 15]] and "ood_symmetric_rate" in d["final"]


@pytest.mark.parametrize("extra,field", [
    (["--wd-window", "10:40", "--wd", "1"], "wd_window"),
    (["--gamma", "-1"], "gamma"),
    (["--freeze", "layer9@5"], "freeze"),
    (["--freeze", "layer0"], "freeze"),
    (["--budget-placement", "early"], "budget"),
])
def test_train_bad_input(capsys, tmp_path, extra, field):
    code = main(["train", "anchor", *TINY_TRAIN, "--store", str(tmp_path), *extra, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["field"] == field
    assert not any(tmp_path.iterdir())   # nothing half-written


def test_sweep_and_runs_summary_cli(capsys, tmp_path):
    store = str(tmp_path / "s")
    sets = ["--set", "d=16", "--set", "steps=20", "--set", "batch_size=32", "--set", "eval_every=10",
            "--set", "seed=0,1", "--set", "wd=0,0.5"]
    code, d = run_json(capsys, "sweep", "run", *sets, "--workers", "1", "--store", store, "--no-progress")
    assert code == 0 and d["total"] == 4 and d["done"] == 4 and d["failed"] == 0
    code, d = run_json(capsys, "sweep", "run", *sets, "--workers", "1", "--store", store, "--no-progress")
    assert d["skipped"] == 4 and d["done"] == 0
    csv = tmp_path / "out.csv"
    code, d = run_json(capsys, "runs", "summary", "--store", store, "--group-by", "wd_window",
                       "--metric", "ood_acc", "--csv", str(csv))
    assert code == 0 and len(d["rows"]) == 2 and all(r["n"] == 2 for r in d["rows"])
    assert csv.read_text().startswith("wd_windows,n,ood_acc_mean")


def test_sweep_rejects_bad_grid_before_running(capsys, tmp_path):
    code = main(["sweep", "run", "--set", "steps=100", "--set", "wd=0.1", "--set", "wd_window=0:50,90:120",
                 "--store", str(tmp_path / "s"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["field"] == "wd_window" and not (tmp_path / "s").exists()
    code = main(["sweep", "run", "--executor", "dask", "--set", "seed=0", "--json"])
    assert code == 2 and json.loads(capsys.readouterr().out)["field"] == "scheduler"


def test_the_paper_reading_is_the_default_and_old_ids_stay():
    """`critwin train anchor` and the checks default to the paper's Eq. 4 (L2 on the non-embedding
    parameters); asking for the decoupled reading gives the config, and id, it always had."""
    from critwin.cli.main import build_parser
    from critwin.cli.train import config_from_args
    from critwin.empirical import TrainConfig
    from critwin.empirical.sweep import config_from_flat
    argv = ["train", "anchor", "--steps", "200", "--wd", "4e-3", "--wd-window", "0:100"]
    cfg = config_from_args(build_parser(argv).parse_args(argv), "anchor_permutation")
    assert (cfg.decay_form, cfg.decay_set) == ("l2", "non_embedding")
    argv += ["--decay-form", "decoupled", "--decay-set", "matrices"]
    old = config_from_args(build_parser(argv).parse_args(argv), "anchor_permutation")
    same = config_from_flat({"steps": 200, "wd": 4e-3, "wd_window": "0:100"})     # the library's defaults
    assert old.run_id() == same.run_id() and TrainConfig().decay_form == "decoupled"
