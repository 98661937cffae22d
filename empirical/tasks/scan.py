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

from ...errors import ConfigError

PRIMITIVES = ("walk", "look", "run", "jump")
DIRECTIONS = ("left", "right")
SPLITS = ("simple", "add_prim_jump")
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


def split_lines(split: str = "add_prim_jump") -> dict[str, list[str]]:
    """{'train': [...], 'test': [...]} lines of a standard split (add_prim_jump: every command
    without 'jump' plus the bare 'jump' repeated; test: every other command with 'jump')."""
    if split not in SPLITS:
        raise ConfigError("split", split, "one of " + ", ".join(SPLITS))
    cmds = all_commands()
    if split == "simple":
        return {"all": [line(c, a) for c, a in cmds]}
    has_jump = lambda c: "jump" in c.split()   # noqa: E731
    train = [line(c, a) for c, a in cmds if not has_jump(c)] + [line("jump", "I_JUMP")] * JUMP_REPEATS
    test = [line(c, a) for c, a in cmds if has_jump(c) and c != "jump"]
    return {"train": train, "test": test}


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
