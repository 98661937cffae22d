"""Small user-style generators for the testing-kit tests (and the README example)."""
from dataclasses import dataclass

import numpy as np

from critwin.empirical.tasks import Split, TaskData
from critwin.testing import KitSpec


@dataclass(frozen=True)
class SumTask:
    """(a, b) -> a + b mod 10 over 10 x 10 pairs; seed picks the 30 held-out pairs. With
    leaky=True a bug puts the first held-out pair in training too once seed >= 7."""
    seed: int = 0
    leaky: bool = False

    def generate(self) -> TaskData:
        pairs = np.array([(a, b) for a in range(10) for b in range(10)])
        order = np.random.default_rng(self.seed).permutation(100)
        test, train = pairs[order[:30]], pairs[order[30:]]
        if self.leaky and self.seed >= 7:
            train = np.concatenate([train, test[:1]])
        split = lambda ab: Split(ab.astype(np.int64), ((ab[:, 0] + ab[:, 1]) % 10).astype(np.int64))  # noqa: E731
        return TaskData("sum", 10, 2, {"train": split(train), "test": split(test)})

    def kit_spec(self) -> KitSpec:
        return KitSpec(disjoint=(("train", "test", lambda s: s.inputs),),
                       oracle=lambda data, name, s: s.inputs.sum(axis=1) % 10,
                       counts=lambda data: {"train": 70, "test": 30})


def leaky_sum_task(seed: int = 0) -> SumTask:
    return SumTask(seed, leaky=True)
