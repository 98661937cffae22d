"""Sequence-to-sequence tasks (SCAN) as a decoder-only language model's data.

A task whose targets are token sequences (2-d, right-padded with 0; `extra['lengths']` and
`extra['target_lengths']`) becomes, per example, one sequence

    command tokens, <sep>, action tokens, <eos>, <pad>...

trained with teacher forcing: the model predicts every next token from <sep> on (the
actions, then <eos>); every other position's target is IGNORE. Greedy decoding at
evaluation starts from "command, <sep>" (`extra['prompt_lengths']`) and compares the
generated actions with `extra['answers']` (actions then <eos>, padded with IGNORE).
"""
from __future__ import annotations

import numpy as np
from critwin.empirical.tasks.base import Split, TaskData

IGNORE = -100


def is_sequence_task(data: TaskData) -> bool:
    return data.splits["train"].targets.ndim == 2


def language_model_data(data: TaskData) -> TaskData:
    """The same splits in the language-model layout above; two tokens added to the vocabulary
    (<sep> = V, <eos> = V + 1)."""
    sep, eos = data.vocab_size, data.vocab_size + 1
    width = max(int((s.extra["lengths"] + s.extra["target_lengths"]).max()) + 2 for s in data.splits.values())
    answer_width = max(int(s.extra["target_lengths"].max()) + 1 for s in data.splits.values())
    splits = {}
    for name, s in data.splits.items():
        n = len(s)
        x = np.zeros((n, width), dtype=np.int64)
        y = np.full((n, width), IGNORE, dtype=np.int64)
        answers = np.full((n, answer_width), IGNORE, dtype=np.int64)
        for r, (lc, la) in enumerate(zip(s.extra["lengths"].tolist(), s.extra["target_lengths"].tolist())):
            seq = [*s.inputs[r, :lc], sep, *s.targets[r, :la], eos]
            x[r, :len(seq)] = seq
            y[r, lc:lc + la + 1] = seq[lc + 1:]          # from <sep>: the next token, up to <eos>
            answers[r, :la + 1] = seq[lc + 1:]
        splits[name] = Split(x, y, {"lengths": s.extra["lengths"] + s.extra["target_lengths"] + 2,
                                    "prompt_lengths": s.extra["lengths"] + 1, "answers": answers, "eos": eos})
    return TaskData(data.name, data.vocab_size + 2, width, splits,
                    {**data.info, "sequence": True, "sep": sep, "eos": eos})
