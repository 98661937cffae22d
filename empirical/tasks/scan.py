"""SCAN (Lake & Baroni 2018), generated from its grammar, with its meaning built from the parts.

    C -> S and S | S after S | S          S -> V twice | V thrice | V
    V -> D opposite Dir | D around Dir | D | U       D -> U Dir | turn Dir
    U -> walk | look | run | jump                   Dir -> left | right

walk/look/run/jump mean I_WALK/I_LOOK/I_RUN/I_JUMP; "x left" is I_TURN_LEFT then x;
"x opposite left" two turns then x; "x around left" (turn, x) four times; "turn left" one
turn, "turn opposite left" two, "turn around left" four; twice / thrice repeat; "A and B"
is A then B, "A after B" is B then A. 20,910 distinct commands. A line of the standard files
is `IN: <command> OUT: <actions>`.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from critwin.errors import ConfigError

PRIMITIVES = ("walk", "look", "run", "jump")
DIRECTIONS = ("left", "right")
SPLITS = ("simple", "add_prim_jump", "length")
LENGTH_CUT = 22               # the length split trains on action sequences of at most 22 actions (none has 23)
JUMP_REPEATS = 1467          # the add_prim_jump training file repeats `jump -> I_JUMP` this often


def _turn(d: str) -> list[str]:
    return [f"I_TURN_{d.upper()}"]


def _verb_phrases() -> list[tuple[str, list[str]]]:
    """Every V with its actions."""
    out = [(u, [f"I_{u.upper()}"]) for u in PRIMITIVES]
    for d in DIRECTIONS:
        t = _turn(d)
        for u, act in [(u, [f"I_{u.upper()}"]) for u in PRIMITIVES] + [("turn", [])]:
            out.append((f"{u} {d}", t + act))
            out.append((f"{u} opposite {d}", t + t + act))
            out.append((f"{u} around {d}", (t + act) * 4))
    return out


@lru_cache(maxsize=1)
def all_commands() -> tuple[tuple[str, str], ...]:
    """(command, actions) for every SCAN command, in grammar order."""
    s_phrases = []
    for v, act in _verb_phrases():
        s_phrases += [(v, act), (f"{v} twice", act * 2), (f"{v} thrice", act * 3)]
    out = [(s, a) for s, a in s_phrases]
    for s1, a1 in s_phrases:
        for s2, a2 in s_phrases:
            out.append((f"{s1} and {s2}", a1 + a2))
            out.append((f"{s1} after {s2}", a2 + a1))
    return tuple((c, " ".join(a)) for c, a in out)


def line(command: str, actions: str) -> str:
    return f"IN: {command} OUT: {actions}"


def split_pairs(split: str = "add_prim_jump") -> dict[str, list[tuple[str, str]]]:
    """{'train': [(command, actions)], 'test': [...]} of a standard split (add_prim_jump: every
    command without 'jump' plus the bare 'jump' repeated; test: every other command with 'jump';
    length: train on the commands of at most 22 actions, test on the longer ones)."""
    if split not in SPLITS:
        raise ConfigError("split", split, "one of " + ", ".join(SPLITS))
    cmds = list(all_commands())
    if split == "simple":
        return {"all": cmds}
    if split == "length":
        n = lambda a: len(a.split())   # noqa: E731
        return {"train": [(c, a) for c, a in cmds if n(a) <= LENGTH_CUT],
                "test": [(c, a) for c, a in cmds if n(a) > LENGTH_CUT]}
    has_jump = lambda c: "jump" in c.split()   # noqa: E731
    return {"train": [(c, a) for c, a in cmds if not has_jump(c)] + [("jump", "I_JUMP")] * JUMP_REPEATS,
            "test": [(c, a) for c, a in cmds if has_jump(c) and c != "jump"]}


def split_lines(split: str = "add_prim_jump") -> dict[str, list[str]]:
    """The standard files' lines of a split (`split_pairs` as `IN: ... OUT: ...`)."""
    return {name: [line(c, a) for c, a in pairs] for name, pairs in split_pairs(split).items()}


def export(split: str, out) -> dict:
    """Write train.txt / test.txt (and all.txt, every command once) into `out`; return counts."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {**split_lines(split), "all": [line(c, a) for c, a in all_commands()]}
    for name, lines in files.items():
        tmp = out / f".{name}.txt.tmp"
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(out / f"{name}.txt")
    return {name: len(lines) for name, lines in files.items()}


COMMAND_WORDS = ("walk", "look", "run", "jump", "turn", "left", "right", "opposite", "around", "twice", "thrice",
                 "and", "after")
ACTIONS = ("I_WALK", "I_LOOK", "I_RUN", "I_JUMP", "I_TURN_LEFT", "I_TURN_RIGHT")
PAD = "<pad>"
SCAN_VOCAB = (PAD,) + COMMAND_WORDS + ACTIONS          # one vocabulary: 0 pads commands and action sequences
SCAN_TOKEN = {t: i for i, t in enumerate(SCAN_VOCAB)}
SPLIT_SIZES = {"add_prim_jump": {"train": 14670, "test": 7706},    # the standard files' line counts
               "length": {"train": 16990, "test": 3920}}


class ScanTask:
    """A SCAN split as integer arrays: inputs = command tokens, targets = action tokens, both
    right-padded with 0 (`extra['lengths']`: command lengths, `extra['target_lengths']`). The
    seed shuffles the order of each split. Sequence targets: for the testing kit and the
    sequence model (the last-position training loop does not take them)."""

    name = "scan"

    def __init__(self, split: str = "add_prim_jump", seed: int = 0):
        if split not in SPLIT_SIZES:
            raise ConfigError("split", split, "one of " + ", ".join(SPLIT_SIZES))
        self.split, self.seed = split, int(seed)

    def generate(self):
        from critwin.empirical.tasks.base import Split, TaskData
        out = {}
        for k, (name, pairs) in enumerate(split_pairs(self.split).items()):
            order = np.random.default_rng(np.random.SeedSequence([self.seed, 7, k])).permutation(len(pairs))
            cmds = [pairs[i][0].split() for i in order]
            acts = [pairs[i][1].split() for i in order]
            X = np.zeros((len(cmds), max(map(len, cmds))), dtype=np.int64)
            Y = np.zeros((len(acts), max(map(len, acts))), dtype=np.int64)
            for r, (c, a) in enumerate(zip(cmds, acts)):
                X[r, :len(c)] = [SCAN_TOKEN[w] for w in c]
                Y[r, :len(a)] = [SCAN_TOKEN[w] for w in a]
            out[name] = Split(X, Y, {"lengths": np.array([len(c) for c in cmds]),
                                     "target_lengths": np.array([len(a) for a in acts])})
        return TaskData(self.name, len(SCAN_VOCAB), max(s.inputs.shape[1] for s in out.values()), out,
                        {"split": self.split})

    def kit_spec(self):
        """For `critwin.testing`: train and test share no command; every action sequence is the
        command's meaning computed by `interpret` (a top-down reading of the grammar, independent
        of the bottom-up generation above); the standard files' line counts."""
        from critwin.testing import KitSpec

        def oracle(data, name, split):
            Y = np.zeros_like(split.targets)
            for r, (row, n) in enumerate(zip(split.inputs.tolist(), split.extra["lengths"].tolist())):
                acts = interpret(" ".join(SCAN_VOCAB[t] for t in row[:n]))
                Y[r, :len(acts)] = [SCAN_TOKEN[a] for a in acts]
            return Y
        return KitSpec(disjoint=(("train", "test", lambda s: s.inputs),), oracle=oracle,
                       counts=lambda data: dict(SPLIT_SIZES[self.split]), n_classes=lambda data: len(SCAN_VOCAB))


def interpret(command: str) -> list[str]:
    """The actions of a SCAN command, read top-down from the grammar."""
    words = command.split()
    for conj in ("and", "after"):
        if conj in words:
            i = words.index(conj)
            a, b = interpret(" ".join(words[:i])), interpret(" ".join(words[i + 1:]))
            return a + b if conj == "and" else b + a
    times = {"twice": 2, "thrice": 3}.get(words[-1], 1)
    words = words[:-1] if times > 1 else words
    verb, rest = words[0], words[1:]
    act = [] if verb == "turn" else [f"I_{verb.upper()}"]
    if not rest:
        return act * times
    turn = [f"I_TURN_{rest[-1].upper()}"]
    if rest[0] == "opposite":
        one = turn + turn + act
    elif rest[0] == "around":
        one = (turn + act) * 4
    else:
        one = turn + act
    return one * times
