"""The Alchemy symbolic chemistry (after DeepMind's dm_alchemy, Wang et al. 2021), re-implemented.

A stone has latent coordinates L in {-1, +1}^3 (the 8 cube corners); its reward is
sum(L) in {-3, -1, 1, 3}. Potions and the graph act on L. What a learner sees goes through
three maps, each a part of the chemistry:

    latent L --stone map (a sign per axis)--> aligned A = L * s
             --rotation R (perceived -> aligned, A = R P)--> perceived P = R^-1 A in {-1, 0, 1}^3
    perceived potion (axis a, direction d) --potion map--> latent potion (dim_map[a], dir_map[dim_map[a]] * d)

P's coordinates are the features colour, size and roundness; a middle value (0) appears only
under a rotation (every stone then has exactly one). A potion moves a stone one step along
its latent axis in its direction when that cube edge is in the chemistry's graph, and
leaves it unchanged otherwise. A graph keeps, for each latent axis, the edges whose other
two coordinates satisfy that axis's constraint row (-1, +1 or any): 109 of the 729
constraint sets give a connected graph with an edge at every node; one is the whole cube.

Index conventions (as in dm_alchemy): a corner (c0, c1, c2) has index sum((c_i + 1) / 2 * 2^i);
a potion map's index is 8 * (rank of dim_map among the permutations of (0, 1, 2) in
lexicographic order) + corner index of dir_map; a stone map's index is the corner index of
its signs; rotations are identity, -45 degrees about z, y, x. The flat chemistry id is
((potion_map * 8 + stone_map) * 109 + graph) * 4 + rotation, with graph 0 the complete cube
(a choice of this toolkit: the reference keeps the four parts apart).

Feature names follow the paper's vocabulary: colour red / purple / blue, size small /
medium / large, roundness pointy / medium_round / round for P = -1 / 0 / +1 (dm_alchemy calls
the colours purple / blurple / blue; the paper's middle colour is purple, and +1 is blue in
both). The text form of a transition is the paper's:
`{color: red, size: large, roundness: round, reward: 1} GREEN -> {color: ..., reward: 3}`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from critwin.errors import ConfigError

POTIONS = ("RED", "GREEN", "ORANGE", "YELLOW", "PINK", "CYAN")   # index = 2 * axis + (direction + 1) / 2
PAIRS = (("RED", "GREEN"), ("ORANGE", "YELLOW"), ("PINK", "CYAN"))
FEATURES = ("color", "size", "roundness")
FEATURE_VALUES = (("red", "purple", "blue"), ("small", "medium", "large"), ("pointy", "medium_round", "round"))
REWARDS = (-3, -1, 1, 3)
N_POTION_MAPS, N_STONE_MAPS, N_ROTATIONS = 48, 8, 4
ROTATION_NAMES = ("identity", "z -45", "y -45", "x -45")
# R maps perceived to aligned coordinates (A = R P); the rotated plane's rows are sums and differences.
ROTATIONS = (np.eye(3, dtype=int),
             np.array([[1, 1, 0], [-1, 1, 0], [0, 0, 1]]),
             np.array([[1, 0, -1], [0, 1, 0], [1, 0, 1]]),
             np.array([[1, 0, 0], [0, 1, 1], [0, -1, 1]]))
PERMUTATIONS = tuple(itertools.permutations(range(3)))


def corner(index: int) -> tuple[int, int, int]:
    """Corner coordinates of an index (axis 0 is the least significant bit)."""
    return tuple(1 if (index >> i) & 1 else -1 for i in range(3))


def corner_index(c) -> int:
    return int(sum(((int(v) + 1) // 2) << i for i, v in enumerate(c)))


def potion_axis_direction(potion: str) -> tuple[int, int]:
    """(perceived axis, perceived direction) of a potion colour."""
    if potion not in POTIONS:
        raise ConfigError("potion", potion, "one of " + ", ".join(POTIONS))
    k = POTIONS.index(potion)
    return k // 2, 1 if k % 2 else -1


def inverse_potion(potion: str) -> str:
    """The other potion of the pair: it moves a stone back along the same axis."""
    a, d = potion_axis_direction(potion)
    return POTIONS[2 * a + (1 if d < 0 else 0)]


# ----------------------------------------------------------------------------- graphs
def _row_options():
    return list(itertools.product((-1, 1, None), repeat=2))


def graph_edges(constraint) -> frozenset:
    """Undirected cube edges (i, j), i < j, kept by a constraint: ((o, o), (o, o), (o, o)), one
    row per latent axis giving the required value (or None: any) of the two other coordinates."""
    edges = set()
    for axis, row in enumerate(constraint):
        others = [k for k in range(3) if k != axis]
        for idx in range(8):
            c = corner(idx)
            if c[axis] != -1:
                continue
            if all(req is None or c[k] == req for k, req in zip(others, row)):
                j = idx | (1 << axis)
                edges.add((idx, j))
    return frozenset(edges)


def _valid(edges) -> bool:
    nodes = {n for e in edges for n in e}
    if len(nodes) < 8:
        return False
    seen, todo = {0}, [0]
    while todo:
        n = todo.pop()
        for a, b in edges:
            for x, y in ((a, b), (b, a)):
                if x == n and y not in seen:
                    seen.add(y)
                    todo.append(y)
    return len(seen) == 8


@lru_cache(maxsize=1)
def valid_graphs() -> tuple:
    """The 109 valid constraint sets as (constraint, edges), the complete cube first, then by
    number of fixed entries and edge set."""
    out = []
    for rows in itertools.product(_row_options(), repeat=3):
        e = graph_edges(rows)
        if _valid(e):
            out.append((rows, e))
    n_fixed = lambda rows: sum(v is not None for r in rows for v in r)   # noqa: E731
    return tuple(sorted(out, key=lambda ce: (n_fixed(ce[0]), -len(ce[1]), sorted(ce[1]))))


N_GRAPHS = 109
COMPLETE_GRAPH = 0


# ----------------------------------------------------------------------------- chemistry
@lru_cache(maxsize=None)
def _perceived(stone_map: int, rotation: int, latent: tuple) -> tuple[int, int, int]:
    """Chemistry.perceived, once per (stone map, rotation, stone): 256 values in all."""
    aligned = np.asarray(latent) * np.asarray(corner(stone_map))
    p = np.linalg.solve(ROTATIONS[rotation], aligned)
    r = np.rint(p)
    assert np.allclose(p, r, atol=1e-9)
    return tuple(int(v) for v in r)


@dataclass(frozen=True)
class Chemistry:
    """One chemistry: indices of its potion map, stone map, graph and rotation."""

    potion_map: int = 0
    stone_map: int = 0
    graph: int = COMPLETE_GRAPH
    rotation: int = 0

    def __post_init__(self):
        for f, n in (("potion_map", N_POTION_MAPS), ("stone_map", N_STONE_MAPS), ("graph", N_GRAPHS),
                     ("rotation", N_ROTATIONS)):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not (0 <= v < n):
                raise ConfigError(f, v, f"an index in [0, {n - 1}]")

    # identity ----------------------------------------------------------------
    @property
    def id(self) -> int:
        return ((self.potion_map * N_STONE_MAPS + self.stone_map) * N_GRAPHS + self.graph) * N_ROTATIONS + self.rotation

    @classmethod
    def from_id(cls, chem_id: int) -> "Chemistry":
        total = N_POTION_MAPS * N_STONE_MAPS * N_GRAPHS * N_ROTATIONS
        if isinstance(chem_id, bool) or not isinstance(chem_id, (int, np.integer)) or not (0 <= chem_id < total):
            raise ConfigError("chemistry", chem_id, f"a chemistry id in [0, {total - 1}]")
        rest, rot = divmod(int(chem_id), N_ROTATIONS)
        rest, graph = divmod(rest, N_GRAPHS)
        pm, sm = divmod(rest, N_STONE_MAPS)
        return cls(pm, sm, graph, rot)

    # the maps ----------------------------------------------------------------
    @property
    def dim_map(self) -> tuple:
        """dim_map[perceived axis] = latent axis."""
        return PERMUTATIONS[self.potion_map // 8]

    @property
    def dir_map(self) -> tuple:
        """dir_map[latent axis]: +1 when the pair's positive colour (GREEN, YELLOW, CYAN) raises the reward."""
        return corner(self.potion_map % 8)

    @property
    def stone_signs(self) -> tuple:
        return corner(self.stone_map)

    @property
    def edges(self) -> frozenset:
        return valid_graphs()[self.graph][1]

    def latent_potion(self, potion: str) -> tuple[int, int]:
        """(latent axis, latent direction) a potion colour acts along."""
        a, d = potion_axis_direction(potion)
        axis = self.dim_map[a]
        return axis, self.dir_map[axis] * d

    def perceived(self, latent) -> tuple[int, int, int]:
        """Perceived feature coordinates of a latent stone (each in -1, 0, 1)."""
        return _perceived(self.stone_map, self.rotation, tuple(int(v) for v in latent))

    def apply(self, latent, potion: str) -> tuple[int, int, int]:
        """The latent stone after the potion (unchanged when the edge is absent or the stone is
        already at that end of the axis)."""
        axis, direction = self.latent_potion(potion)
        c = tuple(int(v) for v in latent)
        if c[axis] == direction:
            return c
        i = corner_index(c)
        j = i ^ (1 << axis)
        if (min(i, j), max(i, j)) not in self.edges:
            return c
        return tuple(direction if k == axis else v for k, v in enumerate(c))

    def transitions(self) -> list[tuple[tuple, str, tuple]]:
        """Every one-hop transition that changes the stone: (start, potion, end), latent
        coordinates, by start stone index then potion order."""
        out = []
        for i in range(8):
            s = corner(i)
            for p in POTIONS:
                e = self.apply(s, p)
                if e != s:
                    out.append((s, p, e))
        return out

    # text ----------------------------------------------------------------------
    def stone_text(self, latent) -> str:
        p = self.perceived(latent)
        feats = ", ".join(f"{name}: {FEATURE_VALUES[k][v + 1]}" for k, (name, v) in enumerate(zip(FEATURES, p)))
        return "{" + feats + f", reward: {int(sum(latent))}" + "}"

    def transition_text(self, start, potions, end) -> str:
        potions = [potions] if isinstance(potions, str) else list(potions)
        return f"{self.stone_text(start)} {' '.join(potions)} -> {self.stone_text(end)}"

    def describe(self) -> str:
        """A readable account: the maps, the graph, the 8 stones."""
        pm = ", ".join(f"{p} -> latent axis {self.latent_potion(p)[0]} {'+' if self.latent_potion(p)[1] > 0 else '-'}"
                       for p in POTIONS)
        lines = [f"chemistry {self.id}: potion map {self.potion_map}, stone map {self.stone_map},"
                 f" graph {self.graph} ({len(self.edges)} of 12 cube edges), rotation {ROTATION_NAMES[self.rotation]}",
                 f"potions: {pm}",
                 f"stone map signs (latent -> aligned): {self.stone_signs}",
                 f"graph constraint (per latent axis: required other coordinates, None = any): {valid_graphs()[self.graph][0]}",
                 "stones (latent -> perceived):"]
        lines += [f"  {corner(i)} -> {self.stone_text(corner(i))}" for i in range(8)]
        return "\n".join(lines)


def complete_chemistries() -> list[Chemistry]:
    """The 1,536 chemistries with the complete graph, in id order."""
    return [Chemistry(pm, sm, COMPLETE_GRAPH, rot) for pm in range(N_POTION_MAPS) for sm in range(N_STONE_MAPS)
            for rot in range(N_ROTATIONS)]


def split_chemistries(seed: int = 0, n_test: int = 165) -> tuple[list[Chemistry], list[Chemistry]]:
    """(training, held-out) complete chemistries, disjoint, by a seeded permutation
    (the paper: 1,371 / 165)."""
    chems = complete_chemistries()
    if isinstance(n_test, bool) or not isinstance(n_test, int) or not (1 <= n_test < len(chems)):
        raise ConfigError("n_test", n_test, f"a number of held-out chemistries in [1, {len(chems) - 1}]")
    order = np.random.default_rng(np.random.SeedSequence([seed, 2])).permutation(len(chems))
    test = sorted(int(i) for i in order[:n_test])
    train = sorted(int(i) for i in order[n_test:])
    return [chems[i] for i in train], [chems[i] for i in test]


HELD_OUT_RULES = ("toolkit", "authors")


def authors_split(seed: int = 0) -> tuple[list[Chemistry], list[Chemistry]]:
    """(training, held-out) complete chemistries as the authors' released code splits them (the
    code that made their published data): Python's `random.seed(seed)`, one shuffle of their
    chemistry ids '0'..'167423' plus a trailing metadata key, the first 10% held out, then only the
    complete graphs kept (1,371 / 165 at seed 0). Their ids nest potion map, stone map, graph,
    rotation as ours do, but their potion map's direction index runs the axes the other way round
    and their colour names are the opposite of ours; each of their chemistries is mapped to the
    one of ours whose 24 transitions read the same, word for word."""
    import random
    rng = random.Random(seed)
    n = N_POTION_MAPS * N_STONE_MAPS * N_GRAPHS * N_ROTATIONS
    ids = [str(i) for i in range(n)] + ["_metadata"]
    rng.shuffle(ids)
    held = {int(i) for i in ids[:int(len(ids) * 0.1)] if i != "_metadata"}
    train, test = [], []
    for their in range(n):
        rest, rot = divmod(their, N_ROTATIONS)
        rest, graph = divmod(rest, N_GRAPHS)
        if graph != COMPLETE_GRAPH:
            continue
        (test if their in held else train).append(_from_authors(*divmod(rest, N_STONE_MAPS), rot))
    return sorted(train, key=lambda c: c.id), sorted(test, key=lambda c: c.id)


def _from_authors(potion_map: int, stone_map: int, rotation: int) -> Chemistry:
    """Our chemistry with the transitions text of the authors' (potion map, stone map, rotation):
    their direction tuple enumerates the axes last-fastest, and their colour -1 is our +1, so a
    relabelling of the latent axes that the rotation leaves alone carries theirs onto ours."""
    dims = PERMUTATIONS[potion_map // 8]
    dirs = tuple(itertools.product((-1, 1), repeat=3))[potion_map % 8]
    s = corner(stone_map)
    if rotation == 1:
        relabel, signs = (1, 0, 2), (s[1], s[0], s[2])
    elif rotation == 2:
        relabel, signs = (2, 1, 0), (-s[2], s[1], -s[0])
    else:
        relabel, signs = (0, 1, 2), (-s[0], s[1], s[2])
    new_dims = tuple(relabel[a] for a in dims)
    new_dirs = [0, 0, 0]
    for a in range(3):
        new_dirs[relabel[a]] = dirs[a]
    return Chemistry(8 * PERMUTATIONS.index(new_dims) + corner_index(new_dirs), corner_index(signs), COMPLETE_GRAPH,
                     rotation)


def held_out_split(rule: str = "toolkit", seed: int = 0) -> tuple[list[Chemistry], list[Chemistry]]:
    """(training, held-out) complete chemistries under a named rule: ours (`split_chemistries`) or the authors'."""
    if rule not in HELD_OUT_RULES:
        raise ConfigError("held_out", rule, "one of " + ", ".join(HELD_OUT_RULES))
    return split_chemistries(seed) if rule == "toolkit" else authors_split(seed)


def export_text(chemistries) -> str:
    """Each chemistry's one-hop transitions, one per line, blocks separated by one blank line."""
    return "\n\n".join("\n".join(c.transition_text(s, p, e) for s, p, e in c.transitions()) for c in chemistries) + "\n"
