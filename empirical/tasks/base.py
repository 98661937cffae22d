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


@dataclass(frozen=True)
class TaskData:
    name: str
    vocab_size: int
    seq_len: int
    splits: dict  # name -> Split; "train" is always present
    info: dict = field(default_factory=dict)
