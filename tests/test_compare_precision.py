"""The registered bf16-against-fp32 rule (paper_checks/reports/alchemy_authors/compare_precision.py) on
hand-made curves: the rule's two parts are read as written, and each can fail on its own."""
import importlib.util
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _mod():
    spec = importlib.util.spec_from_file_location("cp", ROOT / "paper_checks/reports/alchemy_authors/compare_precision.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _state(path, a, loss):
    rows = []
    for e, (ae, le) in enumerate(zip(a, loss)):
        rows += [(e * 343, "test", "event_a", ae), (e * 343, "train", "loss", le), (e * 343, "test", "loss", 9.0)]
    torch.save({"rows": rows, "step": 343 * (len(a) - 1)}, path)
    return str(path)


def _verdict(capsys, tmp_path, f0, b0, b1):
    m = _mod()
    paths = [_state(tmp_path / f"{i}.pt", *c) for i, c in enumerate((f0, b0, b1))]
    assert m.main(*paths) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


PLATEAU = [4.8, 3.5, 3.4, 3.35, 3.2, 3.1]   # training loss below 3.30 first at epoch 4


def test_close_curves_with_the_same_escape_keep_bf16(tmp_path, capsys):
    f0 = ([0.05, 0.30, 0.35, 0.32, 0.50, 0.60], PLATEAU)
    b0 = ([0.05, 0.31, 0.34, 0.33, 0.49, 0.61], PLATEAU)
    b1 = ([0.05, 0.40, 0.28, 0.38, 0.42, 0.70], PLATEAU)
    assert _verdict(capsys, tmp_path, f0, b0, b1) == "verdict: bf16 kept"


def test_a_precision_gap_larger_than_the_seeds_fails(tmp_path, capsys):
    f0 = ([0.05, 0.30, 0.35, 0.32, 0.50, 0.60], PLATEAU)
    b0 = ([0.05, 0.40, 0.45, 0.42, 0.60, 0.70], PLATEAU)
    b1 = ([0.05, 0.41, 0.44, 0.43, 0.61, 0.69], PLATEAU)
    assert _verdict(capsys, tmp_path, f0, b0, b1) == "verdict: bf16 not kept"


def test_a_late_escape_fails_even_with_close_accuracy(tmp_path, capsys):
    f0 = ([0.05, 0.30, 0.35, 0.32, 0.50, 0.60, 0.6, 0.6, 0.6], [4.8, 3.2] + [3.1] * 7)       # escape at epoch 1
    b0 = ([0.05, 0.30, 0.35, 0.32, 0.50, 0.60, 0.6, 0.6, 0.6], [4.8] + [3.4] * 5 + [3.2] * 3)  # at epoch 6
    b1 = ([0.05, 0.50, 0.15, 0.52, 0.30, 0.80, 0.4, 0.8, 0.4], PLATEAU + [3.1] * 3)
    assert _verdict(capsys, tmp_path, f0, b0, b1) == "verdict: bf16 not kept"


def test_without_an_escape_in_bf16_it_is_undecided(tmp_path, capsys):
    f0 = ([0.05, 0.30, 0.35, 0.32, 0.50, 0.60], PLATEAU)
    flat = [4.8] + [3.4] * 5
    b0 = ([0.05, 0.31, 0.34, 0.33, 0.49, 0.61], flat)
    b1 = ([0.05, 0.40, 0.28, 0.38, 0.42, 0.70], flat)
    assert _verdict(capsys, tmp_path, f0, b0, b1) == "verdict: undecided"


def test_long_run_trends_recover_a_known_slope_and_a_flat_curve(tmp_path, monkeypatch):
    """long_run_trends.py on a resume state whose training P(B|A) climbs 0.01 an epoch from epoch 50 (with
    alternating noise of +-0.02) and whose held-out P(B|A) is flat: slopes 0.1 and 0 per 10 epochs, the
    intervals around them; epochs before the start are left out (a steep early rise would tilt the slope)."""
    monkeypatch.syspath_prepend(str(ROOT / "paper_checks/reports/alchemy_authors"))
    spec = importlib.util.spec_from_file_location("trends", ROOT / "paper_checks/reports/alchemy_authors/long_run_trends.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    rows = []
    for e in range(0, 121):
        noise = 0.02 if e % 2 else -0.02
        rows += [(e * 343, "train", "p_b_given_a", (0.0 if e < 50 else 0.5 + 0.01 * (e - 50)) + noise),
                 (e * 343, "test", "p_b_given_a", 0.48 + noise), (e * 343, "test", "loss", 9.0)]
    torch.save({"rows": rows, "step": 120 * 343}, tmp_path / "s.pt")
    t = m.trends(m.rows_of(str(tmp_path / "s.pt"))).set_index(["split", "curve"])
    up, flat = t.loc[("train", "p_b_given_a")], t.loc[("test", "p_b_given_a")]
    assert up.epochs == "50-120" and abs(up.slope_per_10 - 0.1) < 0.002 and up.ci_low < 0.1 < up.ci_high
    assert abs(flat.slope_per_10) < 0.002 and flat.ci_low < 0 < flat.ci_high
    assert set(t.index.get_level_values("curve")) == {"p_b_given_a"}
