"""The Alchemy chemistry: counts by brute force, transitions recomputed, text format, split."""
import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.cli.main import main
from critwin.empirical.tasks.alchemy_chemistry import (
    N_GRAPHS, PAIRS, POTIONS, Chemistry, complete_chemistries, corner, export_text, inverse_potion,
    split_chemistries, valid_graphs)
from critwin.errors import ConfigError

chem_ids = st.integers(0, 48 * 8 * 109 * 4 - 1)
complete = st.builds(Chemistry, st.integers(0, 47), st.integers(0, 7), st.just(0), st.integers(0, 3))
CUBE_EDGES = [(i, j) for i in range(8) for j in range(i + 1, 8) if bin(i ^ j).count("1") == 1]


def _connected_and_covering(edges) -> bool:
    adj = {n: set() for n in range(8)}
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    if any(not v for v in adj.values()):
        return False
    seen, todo = {0}, [0]
    while todo:
        for m in adj[todo.pop()] - seen:
            seen.add(m)
            todo.append(m)
    return len(seen) == 8


def _axis_edge_set_is_a_constraint(edges_on_axis, axis) -> bool:
    """An axis's kept edges form a 'bottleneck': all 4, the 2 with one other coordinate fixed,
    or the 1 with both fixed (brute force over the 9 options, written independently)."""
    others = [k for k in range(3) if k != axis]
    base = [i for i in range(8) if not (i >> axis) & 1]
    options = set()
    for req in itertools.product((-1, 1, None), repeat=2):
        keep = frozenset((i, i | 1 << axis) for i in base
                         if all(r is None or corner(i)[k] == r for k, r in zip(others, req)))
        options.add(keep)
    return frozenset(edges_on_axis) in options


def test_graph_count_by_brute_force_over_edge_subsets():
    """Every subset of the 12 cube edges (4,096) whose per-axis edges are a bottleneck pattern
    and which is connected with an edge at every node: exactly the 109 valid graphs."""
    found = set()
    for mask in range(1 << 12):
        edges = [e for k, e in enumerate(CUBE_EDGES) if mask >> k & 1]
        by_axis = {a: [e for e in edges if e[0] ^ e[1] == 1 << a] for a in range(3)}
        if all(_axis_edge_set_is_a_constraint(by_axis[a], a) for a in range(3)) and _connected_and_covering(edges):
            found.add(frozenset(edges))
    assert len(found) == 109 == N_GRAPHS
    assert found == {e for _, e in valid_graphs()}
    assert len(valid_graphs()[0][1]) == 12 and sum(len(e) == 12 for _, e in valid_graphs()) == 1


def test_chemistry_counts():
    assert 48 * 8 * N_GRAPHS * 4 == 167_424
    chems = complete_chemistries()
    assert len(chems) == 1_536 == len({c.id for c in chems})
    assert Chemistry.from_id(167_423) == Chemistry(47, 7, 108, 3)
    with pytest.raises(ConfigError, match="chemistry"):
        Chemistry.from_id(167_424)
    with pytest.raises(ConfigError, match="graph"):
        Chemistry(0, 0, 109, 0)


@settings(max_examples=60, deadline=None)
@given(chem_ids)
def test_id_round_trips_and_transitions_follow_the_latent_rules(chem_id):
    c = Chemistry.from_id(chem_id)
    assert c.id == chem_id
    for s, p, e in c.transitions():
        changed = [k for k in range(3) if s[k] != e[k]]
        assert len(changed) == 1                                    # exactly one latent axis
        assert abs(sum(e) - sum(s)) == 2                            # reward = sum of latent coordinates
        i, j = sorted((sum(((v + 1) // 2) << k for k, v in enumerate(x)) for x in (s, e)))
        assert (i, j) in c.edges                                    # only along an edge of the graph
        assert c.apply(e, inverse_potion(p)) == s                   # the pair's other potion undoes it
    # every graph edge is used in both directions
    assert len(c.transitions()) == 2 * len(c.edges)


@settings(max_examples=60, deadline=None)
@given(complete)
def test_complete_chemistries_have_24_transitions_3_per_stone(c):
    tr = c.transitions()
    assert len(tr) == 24
    assert all(sum(1 for s, _, _ in tr if s == corner(i)) == 3 for i in range(8))
    assert {abs(sum(e) - sum(s)) for s, _, e in tr} == {2}


@settings(max_examples=60, deadline=None)
@given(chem_ids)
def test_perceived_features_and_rotations(chem_id):
    c = Chemistry.from_id(chem_id)
    seen = [c.perceived(corner(i)) for i in range(8)]
    assert len(set(seen)) == 8                                     # the 8 stones look different
    middles = [sum(v == 0 for v in p) for p in seen]
    assert middles == ([0] * 8 if c.rotation == 0 else [1] * 8)    # middle values only under rotation
    R = np.array([[1, 1, 0], [-1, 1, 0], [0, 0, 1]]) if c.rotation == 1 else None
    if R is not None:                                              # z: aligned = R @ perceived
        for i in range(8):
            aligned = np.array(corner(i)) * np.array(c.stone_signs)
            assert tuple(R @ np.array(c.perceived(corner(i)))) == tuple(aligned)


def test_potion_pairs_are_inverse_moves():
    assert {tuple(sorted(p)) for p in PAIRS} == {tuple(sorted((p, inverse_potion(p)))) for p in POTIONS}
    c = Chemistry(13, 6, 0, 2)
    for a, b in PAIRS:
        assert c.latent_potion(a)[0] == c.latent_potion(b)[0]
        assert c.latent_potion(a)[1] == -c.latent_potion(b)[1]


def test_text_format_and_export(tmp_path, capsys):
    c = Chemistry(7, 7, 0, 0)     # identity maps: perceived = latent, GREEN raises axis 0
    assert c.transition_text((-1, 1, 1), "GREEN", (1, 1, 1)) == (
        "{color: red, size: large, roundness: round, reward: 1} GREEN -> "
        "{color: blue, size: large, roundness: round, reward: 3}")
    line = re.compile(r"^\{color: (red|purple|blue), size: (small|medium|large), roundness: (pointy|medium_round|round),"
                      r" reward: (-3|-1|1|3)\} (RED|GREEN|ORANGE|YELLOW|PINK|CYAN) -> \{color: (red|purple|blue),"
                      r" size: (small|medium|large), roundness: (pointy|medium_round|round), reward: (-3|-1|1|3)\}$")
    text = export_text(complete_chemistries()[:5])
    blocks = text.rstrip("\n").split("\n\n")
    assert len(blocks) == 5 and all(len(b.split("\n")) == 24 for b in blocks)
    assert all(line.match(x) for b in blocks for x in b.split("\n"))
    out = tmp_path / "all.txt"
    assert main(["alchemy", "export", "--complete", "--out", str(out)]) == 0
    body = out.read_text()
    assert body.count("\n\n") == 1_535 and len(body.splitlines()) == 1_536 * 24 + 1_535
    capsys.readouterr()
    assert main(["alchemy", "export", "--chemistry", str(c.id)]) == 0
    assert capsys.readouterr().out.strip().splitlines() == export_text([c]).strip().splitlines()
    assert main(["alchemy", "export"]) == 2


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_split_is_disjoint_deterministic_and_sized(seed):
    train, test = split_chemistries(seed)
    assert (len(train), len(test)) == (1_371, 165)
    assert not {c.id for c in train} & {c.id for c in test}
    assert split_chemistries(seed) == (train, test)
