"""Modular addition (a + b) mod p, the grokking control of the critical-window paper.

Tokens 0..p-1 are the numbers and p is '='; an input is (a, b, =) and the target a + b mod p.
All p^2 ordered pairs are split at random (by the seed) into a training fraction and the
held-out rest (split 'test').
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from critwin.empirical.tasks.base import Split, TaskData

from critwin.errors import ConfigError


@dataclass(frozen=True)
class ModularAdditionTask:
    p: int = 67
    train_frac: float = 0.4
    seed: int = 0

    name = "modarith"

    def __post_init__(self):
        if isinstance(self.p, bool) or not isinstance(self.p, (int, np.integer)) or self.p < 2:
            raise ConfigError("p", self.p, "an integer modulus >= 2")
        if not (0 < self.train_frac < 1):
            raise ConfigError("train_frac", self.train_frac, "a fraction of the pairs in (0, 1)")
        n_train = int(round(self.train_frac * self.p ** 2))
        if not (1 <= n_train < self.p ** 2):
            raise ConfigError("train_frac", self.train_frac, f"at least one pair in each split of the {self.p ** 2}")

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(train, test) rows (a, b), a seeded random split of all p^2 ordered pairs."""
        allp = np.array([(a, b) for a in range(self.p) for b in range(self.p)], dtype=np.int64)
        order = np.random.default_rng(np.random.SeedSequence([self.seed, 5])).permutation(len(allp))
        n = int(round(self.train_frac * len(allp)))
        return allp[np.sort(order[:n])], allp[np.sort(order[n:])]

    def _split(self, ab: np.ndarray) -> Split:
        eq = np.full((len(ab), 1), self.p, dtype=np.int64)
        return Split(np.concatenate([ab, eq], axis=1), (ab[:, 0] + ab[:, 1]) % self.p, {"pair": ab})

    def generate(self) -> TaskData:
        train, test = self.pairs()
        return TaskData(self.name, self.p + 1, 3, {"train": self._split(train), "test": self._split(test)},
                        {"chance": 1.0 / self.p, "n_classes": self.p, "p": self.p, "train_frac": self.train_frac})

    def kit_spec(self):
        """For `critwin.testing`: the pair (a, b) is the identity; targets are (a + b) mod p;
        the splits hold round(train_frac p^2) and the rest of the p^2 pairs."""
        from critwin.testing import KitSpec
        n = int(round(self.train_frac * self.p ** 2))
        return KitSpec(disjoint=(("train", "test", lambda s: s.inputs[:, :2]),),
                       oracle=lambda data, name, s: (s.inputs[:, 0] + s.inputs[:, 1]) % self.p,
                       counts=lambda data: {"train": n, "test": self.p ** 2 - n}, n_classes=lambda data: self.p)
