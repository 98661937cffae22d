"""SCAN from its grammar: counts, meaning checked by an independent interpreter, the split files."""
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.cli.main import main
from critwin.empirical.tasks.scan import all_commands, split_lines


def interpret(command: str) -> list[str]:
    """A small parser of SCAN commands, written apart from the generator."""
    for conj, swap in ((" and ", False), (" after ", True)):
        if conj in command:
            a, b = command.split(conj)
            return interpret(b) + interpret(a) if swap else interpret(a) + interpret(b)
    words = command.split()
    if words[-1] in ("twice", "thrice"):
        return interpret(" ".join(words[:-1])) * (2 if words[-1] == "twice" else 3)
    act = [] if words[0] == "turn" else ["I_" + words[0].upper()]
    if len(words) == 1:
        return act
    turn = ["I_TURN_" + words[-1].upper()]
    if words[1] == "opposite":
        return turn * 2 + act
    if words[1] == "around":
        return (turn + act) * 4
    return turn + act


COMMANDS = all_commands()


def test_counts_and_uniqueness():
    assert len(COMMANDS) == 20_910 == len({c for c, _ in COMMANDS})
    s = split_lines("add_prim_jump")
    assert len(s["train"]) == 14_670 and len(s["test"]) == 7_706
    assert sum(line == "IN: jump OUT: I_JUMP" for line in s["train"]) == 1_467
    assert not set(s["train"]) & set(s["test"])                              # no test command in train
    assert all("jump" not in line.split(" OUT: ")[0].split() for line in s["train"] if line != "IN: jump OUT: I_JUMP")
    assert all("jump" in line.split(" OUT: ")[0].split() for line in s["test"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(COMMANDS))
def test_meaning_is_built_from_the_parts(pair):
    command, actions = pair
    assert actions.split() == interpret(command)


def test_known_lines_and_export(tmp_path):
    d = dict(COMMANDS)
    assert d["turn around left"] == " ".join(["I_TURN_LEFT"] * 4)
    assert d["walk twice after jump left"] == "I_TURN_LEFT I_JUMP I_WALK I_WALK"
    assert main(["scan", "export", "--split", "add_prim_jump", "--out", str(tmp_path)]) == 0
    train = (tmp_path / "train.txt").read_text().splitlines()
    assert len(train) == 14_670 and len((tmp_path / "test.txt").read_text().splitlines()) == 7_706
    assert len((tmp_path / "all.txt").read_text().splitlines()) == 20_910
    assert all(line.startswith("IN: ") and " OUT: " in line for line in train)


def test_length_split_cuts_at_22_actions(tmp_path):
    """The standard length split: 16,990 training commands of at most 22 actions, 3,920 test
    commands of 24 to 48 (no command has 23); counted here from the interpreter's meanings."""
    s = split_lines("length")
    n = lambda lines: [len(interpret(line.split(" OUT: ")[0][4:])) for line in lines]   # noqa: E731
    assert len(s["train"]) == 16_990 and len(s["test"]) == 3_920
    assert max(n(s["train"])) == 22 and (min(n(s["test"])), max(n(s["test"]))) == (24, 48)
    assert not set(s["train"]) & set(s["test"]) and len(s["train"]) + len(s["test"]) == len(COMMANDS)
    assert main(["scan", "export", "--split", "length", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "test.txt").read_text().splitlines() == s["test"]
    from critwin.empirical.tasks.scan import ScanTask
    data = ScanTask("length", seed=3).generate()
    assert data.splits["test"].extra["target_lengths"].min() == 24
