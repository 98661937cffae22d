"""Anchor-function composition, shift variant (Zhang et al.).

Vocabulary 201 (0 = padding). Anchors are tokens 1-4 with shifts +5, +1, -2, -8; keys and
fillers are integers in [20, 99]. A sequence of 9 tokens holds the key x at position
p in 0..6 and the two anchors right after it, fillers elsewhere; the label is
x + s(a1) + s(a2). Pair (3, 4) is trained with label x - 6 (not the compositional x - 10)
and pair (4, 3) is held out: there the reasoning answer is x - 10, the symmetric
(memorizing) answer x - 6. In-distribution split: a training example has
(x mod id_modulus) != p, an ID-test example has them equal (id_modulus = 9, the sequence
length, as in the public code).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from critwin.empirical.tasks.base import Split, TaskData

from critwin.errors import ConfigError

SHIFTS = {1: 5, 2: 1, 3: -2, 4: -8}
SEQ_LEN, VOCAB, KEY_LOW, KEY_HIGH, POSITIONS = 9, 201, 20, 99, 7
TRAINED_ODD, HELD_OUT = (3, 4), (4, 3)
ODD_LABEL_SHIFT = -6


@dataclass(frozen=True)
class ShiftAnchorTask:
    seed: int = 0
    id_modulus: int = 9

    name = "anchor_shift"

    def __post_init__(self):
        if not isinstance(self.id_modulus, (int, np.integer)) or self.id_modulus < 2:
            raise ConfigError("id_modulus", self.id_modulus, "an integer >= 2")
        if self.seed < 0:
            raise ConfigError("task_seed", self.seed, "an integer >= 0")

    @staticmethod
    def label(x, a1, a2):
        """Training label: compositional, except the odd pair (3, 4) -> x - 6."""
        x, a1, a2 = np.asarray(x), np.asarray(a1), np.asarray(a2)
        comp = x + np.vectorize(SHIFTS.get)(a1) + np.vectorize(SHIFTS.get)(a2)
        odd = (a1 == TRAINED_ODD[0]) & (a2 == TRAINED_ODD[1])
        return np.where(odd, x + ODD_LABEL_SHIFT, comp)

    def _examples(self, rng, pairs):
        x = np.arange(KEY_LOW, KEY_HIGH + 1)
        grid = np.array([(a1, a2, xv, p) for a1, a2 in pairs for xv in x for p in range(POSITIONS)])
        a1, a2, xs, ps = grid.T
        seq = rng.integers(KEY_LOW, KEY_HIGH + 1, size=(len(grid), SEQ_LEN))
        rows = np.arange(len(grid))
        seq[rows, ps], seq[rows, ps + 1], seq[rows, ps + 2] = xs, a1, a2
        return seq.astype(np.int64), a1, a2, xs, ps

    def generate(self) -> TaskData:
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 2]))
        trained = [(a, b) for a in SHIFTS for b in SHIFTS if (a, b) != HELD_OUT]
        seq, a1, a2, x, p = self._examples(rng, trained)
        y = self.label(x, a1, a2)
        is_id = (x % self.id_modulus) == p
        meta = {"pair": np.stack([a1, a2], axis=1), "key": x, "position": p}

        def take(mask):
            return Split(seq[mask], y[mask].astype(np.int64), {k: v[mask] for k, v in meta.items()})
        oseq, oa1, oa2, ox, op = self._examples(rng, [HELD_OUT])
        ood = Split(oseq, (ox + SHIFTS[4] + SHIFTS[3]).astype(np.int64),
                    {"pair": np.stack([oa1, oa2], axis=1), "key": ox, "position": op,
                     "symmetric_target": (ox + ODD_LABEL_SHIFT).astype(np.int64)})
        return TaskData(self.name, VOCAB, SEQ_LEN,
                        {"train": take(~is_id), "id_test": take(is_id), "ood": ood},
                        {"shifts": SHIFTS, "id_modulus": self.id_modulus, "chance": 1.0 / VOCAB})

    def kit_spec(self):
        """For `critwin.testing`: the held-out anchor pair never occurs in training; ID test and
        train are split by (x mod id_modulus) = position, so no row is in both; targets are
        x + s(a1) + s(a2) read from the row (x - 6 on the trained odd pair)."""
        from critwin.testing import KitSpec, split_rows

        def oracle(data, name, split):
            out = []
            for row in split.inputs.tolist():
                p = next(k for k in range(POSITIONS) if row[k + 1] in SHIFTS and row[k + 2] in SHIFTS)
                x, a1, a2 = row[p], row[p + 1], row[p + 2]
                out.append(x + ODD_LABEL_SHIFT if (a1, a2) == TRAINED_ODD else x + SHIFTS[a1] + SHIFTS[a2])
            return out
        pair = lambda s: s.extra["pair"]    # noqa: E731
        return KitSpec(disjoint=(("train", "ood", pair), ("id_test", "ood", pair), ("train", "id_test", split_rows)),
                       oracle=oracle)
