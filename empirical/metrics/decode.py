"""Sequence evaluation of a language-model task (tasks/sequence.py): teacher-forced loss and
next-token accuracy, and batched greedy decoding scored by exact sequence and token accuracy."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from critwin.empirical.tasks.sequence import IGNORE


@torch.no_grad()
def greedy_decode(model, prompts, prompt_lengths, max_new: int, eos: int, pad: int = 0):
    """Continue each right-padded prompt greedily, all rows at once, until <eos> or max_new
    tokens; (B, max_new) generated tokens, `pad` after a row's <eos>. One forward pass per
    new token over the rows still going (the causal mask keeps each row blind to its padding)."""
    B = len(prompts)
    buf = torch.full((B, int(prompt_lengths.max()) + max_new), pad, dtype=torch.long, device=prompts.device)
    buf[:, :prompts.shape[1]] = prompts
    buf[torch.arange(buf.shape[1], device=buf.device)[None, :] >= prompt_lengths[:, None]] = pad
    cur = prompt_lengths.clone()
    out = torch.full((B, max_new), pad, dtype=torch.long, device=prompts.device)
    live = torch.ones(B, dtype=torch.bool, device=prompts.device)
    for t in range(max_new):
        rows = live.nonzero().squeeze(1)
        if len(rows) == 0:
            break
        nxt = model(buf[rows, :int(cur[rows].max())], cur[rows]).argmax(-1)
        buf[rows, cur[rows]] = nxt
        out[rows, t] = nxt
        cur[rows] += 1
        live[rows] = nxt != eos
    return out


@torch.no_grad()
def evaluate_sequences(model, split, device, batch: int = 512) -> dict:
    """{'loss', 'acc' (teacher-forced next-token accuracy), 'seq_acc' (greedy output equals the
    answer, <eos> included), 'token_acc' (share of answer positions greedy gets right)}."""
    x = torch.as_tensor(split.inputs, device=device)
    y = torch.as_tensor(split.targets, device=device)
    answers = torch.as_tensor(split.extra["answers"], device=device)
    plen = torch.as_tensor(split.extra["prompt_lengths"], device=device)
    loss_sum, tf_right, n_tok, seq_right, tok_right, n_ans = 0.0, 0, 0, 0, 0, 0
    for i in range(0, len(x), batch):
        xb, yb, ab, pb = x[i:i + batch], y[i:i + batch], answers[i:i + batch], plen[i:i + batch]
        logits = model(xb, all_positions=True)
        keep = yb != IGNORE
        loss_sum += F.cross_entropy(logits[keep], yb[keep], reduction="sum").item()
        tf_right += int((logits.argmax(-1)[keep] == yb[keep]).sum())
        n_tok += int(keep.sum())
        gen = greedy_decode(model, xb[:, :int(pb.max())], pb, ab.shape[1], split.extra["eos"])
        real = ab != IGNORE
        hit = (gen == ab) | ~real
        seq_right += int(hit.all(1).sum())
        tok_right += int(((gen == ab) & real).sum())
        n_ans += int(real.sum())
    return {"loss": loss_sum / max(1, n_tok), "acc": tf_right / max(1, n_tok), "seq_acc": seq_right / len(x),
            "token_acc": tok_right / max(1, n_ans)}
