"""Alchemy latent-structure tasks (Staged Dynamics paper), one episode per chemistry.

Three variants, each from complete-graph chemistries (`alchemy_chemistry.py`):
- withheld: one potion pair is withheld (chosen per chemistry); the support is the 16
  transitions of the other two pairs, shuffled; the queries are the 8 of the withheld pair.
- composition: the support is all 24 one-hop transitions; the queries are h-hop
  self-avoiding potion sequences, 6 per start stone (48), balanced over end states.
- decomposition: the support is every self-avoiding h-hop path from every stone
  (48 / 96 / 144 / 240 for h = 2..5); the queries are the 24 one-hop transitions.

An example is the support followed by one query: each stone is 4 tokens (colour, size,
roundness, reward), an item is stone, potion token(s), <io>, stone, items are joined by
<item_sep>, and the query's stone and potions come last, closed by <io> (`query_end` io; the
authors' code ends the query at its potion: `query_end` potion). With `input_format`
stone_states (a variation the authors' code supports) each stone is one token, its reward bound
in (one of 108 stone tokens after the base vocabulary), so the reward needs no look-up. The target is the
output stone as one of 108 = 3 * 3 * 3 * 4 classes. Every query carries what the events
need: the chemistry's 8 stones (event A), the face the query potion moves stones onto
(withheld and decomposition) or the stones reachable from the start in h hops
(composition) (event B), and the answer (event C).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from critwin.empirical.tasks.alchemy_chemistry import (
    FEATURE_VALUES,
    HELD_OUT_RULES,
    PAIRS,
    POTIONS,
    REWARDS,
    Chemistry,
    corner,
    held_out_split,
)
from critwin.empirical.tasks.base import Split, TaskData

from critwin.errors import ConfigError

VARIANTS = ("withheld", "composition", "decomposition")
QUERY_ENDS = ("io", "potion")
INPUT_FORMATS = ("tokens", "stone_states")
QUERIES_PER_CHEMISTRY = {"withheld": 8, "composition": 48, "decomposition": 24}
HOPS = (2, 3, 4, 5)
SPECIALS = ("<pad>", "<sos>", "<eos>", "<io>", "<item_sep>", "<unk>")
# The paper's 25-token vocabulary, in its (alphabetical) id order, then the special tokens.
VOCAB = tuple(sorted({str(r) for r in REWARDS} | set(POTIONS) | {v for vals in FEATURE_VALUES for v in vals})) + SPECIALS
TOKEN = {t: i for i, t in enumerate(VOCAB)}
N_CLASSES = 3 * 3 * 3 * 4


def stone_class(chem: Chemistry, latent) -> int:
    """Output class of a stone as perceived in this chemistry: ((colour * 3 + size) * 3 + roundness) * 4 + reward."""
    c, s, r = (v + 1 for v in chem.perceived(latent))
    return ((c * 3 + s) * 3 + r) * 4 + REWARDS.index(int(sum(latent)))


STONE_TOKEN0 = len(VOCAB)                    # stone_states: stone class k is token STONE_TOKEN0 + k
HIDDEN_REWARD0 = STONE_TOKEN0 + N_CLASSES   # and with its reward hidden (ablation), HIDDEN_REWARD0 + k // 4


def stone_tokens(chem: Chemistry, latent, input_format: str = "tokens") -> list[int]:
    """A stone's tokens: colour, size, roundness, reward; or one stone token (stone_states)."""
    if input_format == "stone_states":
        return [STONE_TOKEN0 + stone_class(chem, latent)]
    p = chem.perceived(latent)
    return [TOKEN[FEATURE_VALUES[k][v + 1]] for k, v in enumerate(p)] + [TOKEN[str(int(sum(latent)))]]


def vocab_size(input_format: str) -> int:
    return len(VOCAB) + (N_CLASSES + N_CLASSES // 4 if input_format == "stone_states" else 0)


def self_avoiding_paths(chem: Chemistry, start, hops: int) -> list[tuple[tuple[str, ...], tuple]]:
    """Every potion sequence of `hops` moves from `start` that changes the stone at every step
    and never revisits a stone: (potions, end stone)."""
    out = []

    def walk(stone, potions, visited):
        if len(potions) == hops:
            out.append((tuple(potions), stone))
            return
        for p in POTIONS:
            nxt = chem.apply(stone, p)
            if nxt != stone and nxt not in visited:
                walk(nxt, potions + [p], visited | {nxt})
    walk(tuple(start), [], {tuple(start)})
    return out


@dataclass(frozen=True)
class Query:
    start: tuple
    potions: tuple
    end: tuple
    face: tuple = ()          # latent stones on the face the potion moves onto (one-hop queries)
    reachable: tuple = ()     # latent stones reachable from start in len(potions) hops (composition)


@dataclass(frozen=True)
class Episode:
    chemistry: Chemistry
    support: tuple            # ((start, potions, end), ...)
    queries: tuple            # (Query, ...)
    withheld: tuple = ()      # the withheld pair (withheld variant)


def _face(chem: Chemistry, potion: str) -> tuple:
    axis, direction = chem.latent_potion(potion)
    return tuple(corner(i) for i in range(8) if corner(i)[axis] == direction)


def make_episode(chem: Chemistry, variant: str, hops: int | None, rng: np.random.Generator) -> Episode:
    if variant == "withheld":
        pair = PAIRS[int(rng.integers(3))]
        tr = chem.transitions()
        support = [(s, (p,), e) for s, p, e in tr if p not in pair]
        order = rng.permutation(len(support))
        queries = [Query(s, (p,), e, face=_face(chem, p)) for s, p, e in tr if p in pair]
        return Episode(chem, tuple(support[i] for i in order), tuple(queries), pair)
    if variant == "composition":
        support = [(s, (p,), e) for s, p, e in chem.transitions()]
        queries = []
        for i in range(8):
            paths = self_avoiding_paths(chem, corner(i), hops)
            reachable = tuple(sorted({e for _, e in paths}))
            by_end = {e: [p for p, x in paths if x == e] for e in reachable}
            ends = [reachable[k] for k in rng.permutation(len(reachable))]
            picked, k = [], 0
            while len(picked) < 6:            # round-robin over end states: balanced
                e = ends[k % len(ends)]
                left = [p for p in by_end[e] if (p, e) not in picked]
                if left:
                    picked.append((left[int(rng.integers(len(left)))], e))
                k += 1
            queries += [Query(corner(i), p, e, reachable=reachable) for p, e in picked]
        order = rng.permutation(len(support))
        return Episode(chem, tuple(support[j] for j in order), tuple(queries))
    support = [(corner(i), p, e) for i in range(8) for p, e in self_avoiding_paths(chem, corner(i), hops)]
    order = rng.permutation(len(support))
    queries = [Query(s, (p,), e, face=_face(chem, p)) for s, p, e in chem.transitions()]
    return Episode(chem, tuple(support[j] for j in order), tuple(queries))


REWARD_TOKENS = tuple(TOKEN[str(r)] for r in REWARDS)


def ablated_splits(split: Split, input_format: str = "tokens") -> dict:
    """The split with reward tokens replaced by <unk>: the query stone's only, or all of them
    (stone_states: each stone token replaced by its reward-free token)."""
    if input_format == "stone_states":
        is_stone = (split.inputs >= STONE_TOKEN0) & (split.inputs < HIDDEN_REWARD0)
        hidden = np.where(is_stone, HIDDEN_REWARD0 + (split.inputs - STONE_TOKEN0) // 4, split.inputs)
        last = np.where(is_stone, np.arange(split.inputs.shape[1])[None, :], -1).max(axis=1)
        query = split.inputs.copy()
        query[np.arange(len(query)), last] = hidden[np.arange(len(query)), last]
        return {"test_ablate_query": Split(query, split.targets, split.extra),
                "test_ablate_rewards": Split(hidden, split.targets, split.extra)}
    is_reward = np.isin(split.inputs, REWARD_TOKENS)
    real = np.arange(split.inputs.shape[1])[None, :] < split.extra["lengths"][:, None]
    all_r = np.where(is_reward & real, TOKEN["<unk>"], split.inputs)
    last = np.where(is_reward & real, np.arange(split.inputs.shape[1])[None, :], -1).max(axis=1)   # the query's
    query = split.inputs.copy()
    query[np.arange(len(query)), last] = TOKEN["<unk>"]
    return {"test_ablate_query": Split(query, split.targets, split.extra),
            "test_ablate_rewards": Split(all_r, split.targets, split.extra)}


def encode_support(ep: Episode, input_format: str = "tokens") -> list[int]:
    """Token ids of the support items, each closed by <item_sep>."""
    stone = {corner(i): stone_tokens(ep.chemistry, corner(i), input_format) for i in range(8)}
    toks: list[int] = []
    for s, potions, e in ep.support:
        toks += stone[tuple(s)] + [TOKEN[p] for p in potions] + [TOKEN["<io>"]] + stone[tuple(e)] + [TOKEN["<item_sep>"]]
    return toks


def encode(ep: Episode, q: Query, support: list[int] | None = None, query_end: str = "io",
           input_format: str = "tokens") -> list[int]:
    """Token ids of the support followed by one query (closed by <io> unless query_end is potion)."""
    support = encode_support(ep, input_format) if support is None else support
    close = [TOKEN["<io>"]] if query_end == "io" else []
    return support + stone_tokens(ep.chemistry, q.start, input_format) + [TOKEN[p] for p in q.potions] + close


def support_and_query(split: Split):
    """Per row, (support tokens, query tokens): the query follows the last item separator and
    is a stone (4 tokens) and its potions (a closing <io>, never a stone or potion token, left out)."""
    sep, io = TOKEN["<item_sep>"], TOKEN["<io>"]
    for row, n in zip(split.inputs.tolist(), split.extra["lengths"].tolist()):
        cut = n - 1 - row[:n][::-1].index(sep)
        yield row[:cut], row[cut + 1:n - 1 if row[n - 1] == io else n]


def query_answers(data, name, split) -> list[int]:
    """Each row's answer recomputed from its tokens: the query stone (matched on its three
    perceived features, so reward ablation does not matter) moved by its potions, one by one,
    in the row's chemistry."""
    potion_of = {TOKEN[p]: p for p in POTIONS}
    out = []
    for (_, query), cid in zip(support_and_query(split), split.extra["chemistry"].tolist()):
        chem = Chemistry.from_id(cid)
        if query[0] >= STONE_TOKEN0:        # stone_states: one token, its reward possibly hidden
            k = query[0] - STONE_TOKEN0 if query[0] < HIDDEN_REWARD0 else 4 * (query[0] - HIDDEN_REWARD0)
            latent = next(corner(i) for i in range(8) if stone_class(chem, corner(i)) // 4 == k // 4)
            potions = query[1:]
        else:
            latent = next(corner(i) for i in range(8) if stone_tokens(chem, corner(i))[:3] == query[:3])
            potions = query[4:]
        for tok in potions:
            latent = chem.apply(latent, potion_of[tok])
        out.append(stone_class(chem, latent))
    return out


def query_potion_in_support(data, name, split) -> list[bool]:
    """Per row, whether a query potion also appears in the support (the withheld task forbids it)."""
    potions = {TOKEN[p] for p in POTIONS}
    return [bool(potions & set(query) & set(support)) for support, query in support_and_query(split)]


@dataclass(frozen=True)
class AlchemyTask:
    """One Alchemy variant; `hops` for composition and decomposition (2..5), none for withheld.

    Training and held-out chemistries are the seeded 1,371 / 165 split of the complete ones
    (`held_out` toolkit), or the authors' own rule (`held_out` authors, `authors_split`);
    `max_chemistries` caps each split (a CPU-scale option; None = all). With `ablation`, two
    more evaluation splits hold the held-out queries with the query stone's reward token, or
    every reward token, replaced by <unk> (`test_ablate_query`, `test_ablate_rewards`)."""

    variant: str = "withheld"
    hops: int | None = None
    seed: int = 0
    max_chemistries: int | None = None
    ablation: bool = False
    query_end: str = "io"
    input_format: str = "tokens"
    held_out: str = "toolkit"       # which chemistries are held out: ours, or the authors' rule

    def __post_init__(self):
        if self.held_out not in HELD_OUT_RULES:
            raise ConfigError("held_out", self.held_out, "one of " + ", ".join(HELD_OUT_RULES))
        if self.query_end not in QUERY_ENDS:
            raise ConfigError("query_end", self.query_end, "one of " + ", ".join(QUERY_ENDS))
        if self.input_format not in INPUT_FORMATS:
            raise ConfigError("input_format", self.input_format, "one of " + ", ".join(INPUT_FORMATS))
        if self.variant not in VARIANTS:
            raise ConfigError("task", self.variant, "one of " + ", ".join(VARIANTS))
        if self.variant == "withheld" and self.hops is not None:
            raise ConfigError("hops", self.hops, "no hops for the withheld task (its queries are one-hop)")
        if self.variant != "withheld" and self.hops not in HOPS:
            raise ConfigError("hops", self.hops, f"one of {', '.join(map(str, HOPS))} for {self.variant}")
        if self.max_chemistries is not None and (isinstance(self.max_chemistries, bool) or self.max_chemistries < 1):
            raise ConfigError("chemistries", self.max_chemistries, "a positive number of chemistries per split,"
                                                                  " or None for all")

    @property
    def name(self) -> str:
        return f"alchemy_{self.variant}" + (f"_h{self.hops}" if self.hops else "")

    def episodes(self) -> dict:
        """{'train': [Episode], 'test': [Episode]}, deterministic under the seed."""
        train, test = held_out_split(self.held_out, self.seed)
        out = {}
        for k, (name, chems) in enumerate((("train", train), ("test", test))):
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, 3, k]))
            if self.max_chemistries and self.max_chemistries < len(chems):
                keep = np.sort(rng.permutation(len(chems))[: self.max_chemistries])
                chems = [chems[i] for i in keep]
            out[name] = [make_episode(c, self.variant, self.hops, rng) for c in chems]
        return out

    def train_size(self) -> int:
        """Training queries, without generating them (chemistries in the split x queries each)."""
        n = len(held_out_split(self.held_out, self.seed)[0])
        return min(n, self.max_chemistries or n) * QUERIES_PER_CHEMISTRY[self.variant]

    def _split(self, eps: list[Episode]) -> Split:
        seqs, targets, stones, b_sets, chem_ids = [], [], [], [], []
        for ep in eps:
            eight = [stone_class(ep.chemistry, corner(i)) for i in range(8)]
            support = encode_support(ep, self.input_format)
            for q in ep.queries:
                seqs.append(encode(ep, q, support, self.query_end, self.input_format))
                targets.append(stone_class(ep.chemistry, q.end))
                stones.append(eight)
                b = q.reachable if self.variant == "composition" else q.face
                b_sets.append(sorted(stone_class(ep.chemistry, s) for s in b))
                chem_ids.append(ep.chemistry.id)
        width = max(len(s) for s in seqs)
        inputs = np.full((len(seqs), width), TOKEN["<pad>"], dtype=np.int64)
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        for i, s in enumerate(seqs):
            inputs[i, : len(s)] = s
        b_width = max(len(b) for b in b_sets)
        b_arr = np.full((len(b_sets), b_width), -1, dtype=np.int64)
        for i, b in enumerate(b_sets):
            b_arr[i, : len(b)] = b
        return Split(inputs, np.array(targets, dtype=np.int64),
                     {"lengths": lengths, "chemistry_stones": np.array(stones, dtype=np.int64),
                      "event_b": b_arr, "chemistry": np.array(chem_ids, dtype=np.int64)})

    def kit_spec(self):
        """For `critwin.testing`: training and held-out chemistries are disjoint (so are their
        queries); every answer is the query stone moved by its potions in its chemistry
        (`query_answers`); 8 / 48 / 24 queries per chemistry (withheld / composition /
        decomposition); the withheld task has no query potion in its support."""
        from critwin.testing import KitSpec
        chem = lambda s: s.extra["chemistry"]   # noqa: E731
        per = QUERIES_PER_CHEMISTRY[self.variant]
        counts = lambda data: {k: per * len(np.unique(v.extra["chemistry"])) for k, v in data.splits.items()}  # noqa: E731
        return KitSpec(disjoint=(("train", "test", chem),), counts=counts, oracle=query_answers,
                       leaks=query_potion_in_support if self.variant == "withheld" else None)

    def generate(self, episodes: dict | None = None) -> TaskData:
        """The task's splits; `episodes` (this task's own `episodes()`) skips drawing them again."""
        eps = self.episodes() if episodes is None else episodes
        splits = {name: self._split(e) for name, e in eps.items()}
        if self.ablation:
            splits.update(ablated_splits(splits["test"], self.input_format))
        return TaskData(self.name, vocab_size(self.input_format), max(s.inputs.shape[1] for s in splits.values()), splits,
                        {"chance": 1.0 / N_CLASSES, "n_classes": N_CLASSES, "variant": self.variant,
                         "hops": self.hops, "chemistries": {k: [ep.chemistry.id for ep in v] for k, v in eps.items()}})
