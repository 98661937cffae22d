"""The vocabulary (critwin/vocabulary.py) is the one home of the decay readings, the optimizer names and the
init-scale convention: a scan of the package's syntax trees finds no second definition; the commands default
to the paper's reading while stored run ids stay what they were."""
import ast
from pathlib import Path

import pytest

from critwin import vocabulary as voc
from critwin.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("critwin", "theory", "empirical", "bridge", "paper_checks")
HOME = ROOT / "critwin" / "vocabulary.py"
# every spelling the vocabulary owns, including the old theory spelling ("adam" for Adam on a penalised loss)
WORD_SETS = [set(voc.RUN_OPTIMIZERS), set(voc.THEORY_OPTIMIZERS), {"gd", "momentum", "adam"}, set(voc.DECAY_FORMS),
             set(voc.STYLISED_DECAY_FORMS), set(voc.DECAY_SETS)]
OWNED_NAMES = {"reading_label", "parse_reading", "Reading", "scale_text", "is_l2", "theory_optimizer"}


def second_definitions(source: str) -> list[str]:
    """What in one module's source defines a word of the vocabulary again: a tuple, list or set literal of
    exactly one of its name sets, a function or class of one of its names, a test of a reading label by
    prefix (`.startswith("l2")`), or a label built by hand (an f-string 'FORM/SET' of decay_form, decay_set)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and \
                all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            words = {e.value for e in node.elts}
            if len(words) == len(node.elts) and words in WORD_SETS:
                out.append(f"line {node.lineno}: names {sorted(words)}")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in OWNED_NAMES:
            out.append(f"line {node.lineno}: defines {node.name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith" \
                and any(isinstance(a, ast.Constant) and a.value in voc.DECAY_FORMS for a in node.args):
            out.append(f"line {node.lineno}: reads a reading label by prefix")
        elif isinstance(node, ast.JoinedStr):
            names = [ast.unparse(v.value) for v in node.values if isinstance(v, ast.FormattedValue)]
            if any(n.endswith("decay_form") for n in names) and any(n.endswith("decay_set") for n in names):
                out.append(f"line {node.lineno}: builds a reading label")
    return out


def package_files():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "reports" not in path.parts and path != HOME:
                yield path


def test_the_scan_finds_each_kind_of_second_definition():
    planted = '''
OPTIMIZERS = ("sgd", "adamw")
FORMS = ["decoupled", "l2"]
def reading_label(a, b):
    return f"{a.decay_form}/{a.decay_set}"
ok = reading.startswith("l2")
'''
    found = second_definitions(planted)
    assert sorted(f.split(":")[0] for f in found) == ["line 2", "line 3", "line 4", "line 5", "line 6"]
    assert second_definitions('CHOICES = ("flow", "gd", "momentum", "adamw")\nx = ("adamw",)\n') == []
    assert second_definitions(HOME.read_text()) != []      # the home itself is what the scan recognises


def test_no_module_defines_the_vocabulary_a_second_time():
    found = {str(p.relative_to(ROOT)): hits for p in package_files() if (hits := second_definitions(p.read_text()))}
    assert found == {}


def test_reading_labels_by_hand():
    assert voc.reading_label("l2", "non_embedding") == "l2/non_embedding"
    assert voc.reading_label("decoupled", "matrices", True) == "decoupled/matrices/head bias"
    assert voc.reading_label("decoupled", "matrices", False, 1000 / 3) == "decoupled/matrices x1000/3"
    assert voc.is_l2("l2/non_embedding") and voc.is_l2("l2/matrices x2") and not voc.is_l2("decoupled/all")
    assert not voc.is_l2("l2x/all")


@pytest.mark.parametrize("text,fields", [
    ("l2/non_embedding", ("l2", "non_embedding", 1.0, False)),
    ("decoupled/matrices x1000/3", ("decoupled", "matrices", 1000 / 3, False)),
    ("decoupled/all x5/2/bias", ("decoupled", "all", 2.5, True)),
])
def test_a_reading_parses_and_its_label_reads_back(text, fields):
    r = voc.Reading.parse(text)
    assert (r.decay_form, r.decay_set, r.wd_scale, r.head_bias) == fields
    assert r.label == text and voc.Reading.parse(r.label) == r


@pytest.mark.parametrize("bad", ["l2", "l3/non_embedding", "l2/weights", "l2/all x0", "l2/all xa/b"])
def test_a_bad_reading_names_what_is_allowed(bad):
    with pytest.raises(ConfigError):
        voc.Reading.parse(bad)


def test_the_paper_reading_is_eq4_and_the_default_reading():
    assert voc.PAPER_READING == {"decay_form": "l2", "decay_set": "non_embedding", "head_bias": False}
    assert voc.Reading().options() == voc.PAPER_READING


def test_theory_names_of_the_runs_optimizers():
    assert [voc.theory_optimizer(o, m) for o, m in [("adamw", 0.0), ("adamw", 0.9), ("sgd", 0.0), ("sgd", 0.9)]] == \
        ["adamw", "adamw", "gd", "momentum"]
    assert set(voc.theory_optimizer(o) for o in voc.RUN_OPTIMIZERS) <= set(voc.THEORY_OPTIMIZERS)
    with pytest.raises(ConfigError, match="optimizer"):
        voc.theory_optimizer("adam")


def _defaults(argv):
    from critwin.cli.main import build_parser
    return build_parser(argv).parse_args(argv)


@pytest.mark.parametrize("argv", [["train", "anchor"], ["check", "W1"], ["theory", "predict"], ["theory", "schedule"]])
def test_commands_default_to_the_paper_reading(argv):
    args = _defaults(argv)
    assert args.decay_form == voc.PAPER_READING["decay_form"]
    if hasattr(args, "decay_set"):
        assert args.decay_set == voc.PAPER_READING["decay_set"] and args.head_bias is False


@pytest.mark.parametrize("argv,gamma", [(["train", "anchor"], 0.8), (["theory", "predict"], [0.8]),
                                        (["theory", "schedule"], 0.8), (["bridge", "survival"], [0.5, 0.8, 1.1]),
                                        (["bridge", "left-edge"], [0.5, 0.8, 1.1]), (["bridge", "compare"], None),
                                        (["bridge", "mechanism"], None)])
def test_gamma_defaults_of_the_commands(argv, gamma):
    assert _defaults(argv).gamma == gamma


def test_stored_field_defaults_and_run_ids_stay():
    """TrainConfig's reading fields keep their first defaults, and these ids (computed before the vocabulary
    existed) stay: a run stored under them is found again."""
    from critwin.empirical import TrainConfig
    from critwin.empirical.config import ADDED_DEFAULTS
    c = TrainConfig()
    assert (c.decay_form, c.decay_set) == ("decoupled", "matrices")
    assert {k: ADDED_DEFAULTS[k] for k in ("decay_form", "decay_set")} == {"decay_form": "decoupled", "decay_set": "matrices"}
    assert c.run_id() == "ac06e1ded019efb2"
    assert TrainConfig(wd_windows=((400.0, 5400.0, 4e-3),), decay_form="l2", decay_set="non_embedding") \
        .with_model(gamma=0.5).run_id() == "bf3ddd5f617d62f4"
    assert TrainConfig(optimizer="sgd", lr=0.1, momentum=0.9, decay_form="l2", decay_set="non_embedding",
                       wd_windows=((0.0, 3000.0, 0.5),), steps=6000).with_model(gamma=0.5).run_id() == "3333b93a86e35072"
    assert TrainConfig(task="alchemy_composition", hops=2, steps=1000, seed=1).run_id() == "90ee6b343e548977"
