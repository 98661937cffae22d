"""Anchor-function composition, permutation variant (Critical Windows paper).

Tokens 0..K-1 are keys, K..K+M-1 anchors; anchor a_i is a permutation pi_i of the keys.
Input (k, a_i, a_j) -> target pi_j(pi_i(k)). Of the M^2 ordered pairs, `train_pairs` are
trained (every anchor appears in one) and the rest are held out (OOD).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from critwin.empirical.tasks.base import Split, TaskData

from critwin.errors import ConfigError


@dataclass(frozen=True)
class PermutationAnchorTask:
    keys: int = 16
    anchors: int = 8
    train_pairs: int = 45
    seed: int = 0

    name = "anchor_permutation"

    def __post_init__(self):
        for f in ("keys", "anchors"):
            if not isinstance(getattr(self, f), (int, np.integer)) or getattr(self, f) < 2:
                raise ConfigError(f, getattr(self, f), "an integer >= 2")
        lo = -(-self.anchors // 2)
        if not (lo <= self.train_pairs <= self.anchors**2 - 1):
            raise ConfigError("train_pairs", self.train_pairs,
                              f"an integer in [{lo}, {self.anchors ** 2 - 1}] (cover every anchor, hold one out)")
        if self.seed < 0:
            raise ConfigError("task_seed", self.seed, "an integer >= 0")

    def _rngs(self):
        return [np.random.default_rng(c) for c in np.random.SeedSequence([self.seed, 1]).spawn(2)]

    def permutations(self) -> np.ndarray:
        """(M, K): row i is pi_i."""
        rng = self._rngs()[0]
        return np.stack([rng.permutation(self.keys) for _ in range(self.anchors)])

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(train, ood) ordered pairs: a random cover of the anchors, then random fill."""
        rng = self._rngs()[1]
        order = rng.permutation(self.anchors)
        cover = {(int(order[k]), int(order[(k + 1) % self.anchors]))
                 for k in range(0, self.anchors, 2)}
        rest = [(i, j) for i in range(self.anchors) for j in range(self.anchors) if (i, j) not in cover]
        pick = rng.permutation(len(rest))[: self.train_pairs - len(cover)]
        train = sorted(cover | {rest[k] for k in pick})
        ood = sorted(set(rest) - set(train))
        return np.array(train), np.array(ood)

    def _split(self, pairs: np.ndarray, perms: np.ndarray) -> Split:
        k = np.tile(np.arange(self.keys), len(pairs))
        i, j = np.repeat(pairs[:, 0], self.keys), np.repeat(pairs[:, 1], self.keys)
        inputs = np.stack([k, self.keys + i, self.keys + j], axis=1)
        return Split(inputs.astype(np.int64), perms[j, perms[i, k]].astype(np.int64),
                     {"pair": np.stack([i, j], axis=1), "key": k})

    def generate(self) -> TaskData:
        perms = self.permutations()
        train, ood = self.pairs()
        return TaskData(self.name, self.keys + self.anchors, 3,
                        {"train": self._split(train, perms), "ood": self._split(ood, perms)},
                        {"permutations": perms.tolist(), "train_pairs": train.tolist(),
                         "ood_pairs": ood.tolist(), "chance": 1.0 / self.keys})

    def kit_spec(self):
        """For `critwin.testing`: train and OOD are disjoint by anchor pair; each target is
        pi_j(pi_i(k)) read from the inputs; every pair appears once per key."""
        from critwin.testing import KitSpec

        def oracle(data, name, split):
            perms = data.info["permutations"]
            return [perms[j - self.keys][perms[i - self.keys][k]] for k, i, j in split.inputs.tolist()]
        return KitSpec(disjoint=(("train", "ood", lambda s: s.inputs[:, 1:]),), oracle=oracle,
                       counts=lambda data: {"train": self.train_pairs * self.keys,
                                            "ood": (self.anchors ** 2 - self.train_pairs) * self.keys},
                       n_classes=lambda data: self.keys)
