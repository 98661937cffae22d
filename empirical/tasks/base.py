"""What every task hands the training loop: integer token splits with targets."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Split:
    """inputs (n, seq_len) int64, targets (n,) int64, predicted at the last position.

    `extra` holds per-example metadata (anchor pair, key, alternative targets) for metrics.
    """

    inputs: np.ndarray
    targets: np.ndarray
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.targets)

    def subset(self, idx) -> "Split":
        """The examples at `idx`, with every per-example entry of `extra` cut the same way."""
        n = len(self)
        return Split(self.inputs[idx], self.targets[idx],
                     {k: v[idx] if isinstance(v, np.ndarray) and len(v) == n else v for k, v in self.extra.items()})

    def sample(self, at_most: int | None, seed: int = 0) -> "Split":
        """At most `at_most` examples, a fixed seeded subset in their original order (all if None)."""
        if at_most is None or at_most >= len(self):
            return self
        return self.subset(np.sort(np.random.default_rng(seed).choice(len(self), at_most, replace=False)))


@dataclass(frozen=True)
class TaskData:
    name: str
    vocab_size: int
    seq_len: int
    splits: dict  # name -> Split; "train" is always present
    info: dict = field(default_factory=dict)
