"""Loss and accuracy of a model on a task split (and the shift task's symmetric rate)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

EVAL_ATTENTION_BUDGET = 2 ** 27   # sequences x length^2 per evaluation batch (~1 GB of attention scores per head)
PAST_BUDGET = 2 ** 24             # rows x prefix x d x layers of a shared prefix's keys and values held at once
SHARED_GAIN = 0.5                 # share a prefix only where it halves the tokens computed (gathers cost too)


@torch.no_grad()
def evaluate_split(model, split, device, batch: int = 4096, share_prefixes: bool = True) -> dict:
    """{'loss', 'acc'}; 'symmetric_rate' where the split has symmetric targets; the Alchemy
    events where it has their metadata (see `alchemy_events`). share_prefixes: a prefix that
    many rows share is computed once (`shared_prefix`); False computes every row whole."""
    if split.targets.ndim == 2:                   # a language-model task (tasks/sequence.py)
        from critwin.empirical.metrics.decode import evaluate_sequences
        return evaluate_sequences(model, split, device)
    x = torch.as_tensor(split.inputs, device=device)
    batch = max(1, min(batch, EVAL_ATTENTION_BUDGET // max(1, x.shape[1] ** 2)))   # long contexts: smaller batches
    y = torch.as_tensor(split.targets, device=device)
    lengths = split.extra.get("lengths")
    shared = shared_prefix(split.inputs, lengths) if share_prefixes and hasattr(model, "prefix_cache") else None
    lengths = None if lengths is None else torch.as_tensor(lengths, device=device)
    if shared is not None:
        logits = shared_prefix_logits(model, x, lengths, *shared, batch)
    else:
        logits = torch.cat([model(x[i:i + batch], None if lengths is None else lengths[i:i + batch]).float()
                            for i in range(0, len(x), batch)])       # float: scores in fp32 under bf16 autocast too
    return split_scores(logits, y, split, device)


def shared_prefix(inputs: np.ndarray, lengths=None):
    """(P, firsts, group): the prefix length P at which computing each distinct prefix once, then
    every row's rest after it, computes the fewest tokens (the rows of one Alchemy episode share
    its support: 165 prefixes for 1,320 held-out queries); firsts, a row holding each distinct
    prefix; group, each row's prefix. None where that saves less than half of the tokens.
    P stays below every row's length, so each row's last real token is in its rest."""
    n, T = inputs.shape
    limit = T - 1 if lengths is None else int(np.min(lengths)) - 1
    if n < 2 or limit < 1:
        return None
    order = np.lexsort(inputs.T[::-1])                 # rows in lexicographic order
    rows = inputs[order]
    differ = rows[1:] != rows[:-1]
    common = np.where(differ.any(1), differ.argmax(1), T)     # each neighbour pair's common prefix
    ks = np.arange(limit + 1)
    prefixes = 1 + np.searchsorted(np.sort(common), ks)      # distinct prefixes of length k
    cost = prefixes * ks + n * (T - ks)
    P = int(ks[cost.argmin()])
    if P == 0 or cost[P] > SHARED_GAIN * n * T:
        return None
    starts = np.concatenate([[True], common < P])          # the first sorted row of each prefix
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(starts) - 1
    return P, order[starts], group


def shared_prefix_logits(model, x, lengths, P: int, firsts, group, batch: int):
    """The model's logits of every row of x, each distinct prefix x[:, :P] computed once
    (`Transformer.prefix_cache`) and each row's rest read over its prefix's keys and values."""
    pre = x[torch.as_tensor(firsts, device=x.device), :P]
    per = max(1, EVAL_ATTENTION_BUDGET // P ** 2)
    chunks = [model.prefix_cache(pre[i:i + per]) for i in range(0, len(pre), per)]
    cache = [tuple(torch.cat([c[layer][j] for c in chunks]) for j in (0, 1)) for layer in range(len(chunks[0]))]
    group = torch.as_tensor(group, device=x.device)
    d = cache[0][0].shape[1] * cache[0][0].shape[3]
    rows = max(1, min(batch, PAST_BUDGET // (P * d * len(cache))))
    out = []
    for i in range(0, len(x), rows):
        g = group[i:i + rows]
        out.append(model(x[i:i + rows, P:], None if lengths is None else lengths[i:i + rows],
                         past=[(k[g], v[g]) for k, v in cache]).float())   # float: fp32 scores under bf16 too
    return torch.cat(out)


def split_metrics(split) -> tuple:
    """The names of the scores `evaluate_split` logs for `split`, without a model (kept in step with it)."""
    if split.targets.ndim == 2:
        return ("loss", "acc", "seq_acc", "token_acc")
    names = ["loss", "acc"]
    if "symmetric_target" in split.extra:
        names.append("symmetric_rate")
    if "chemistry_stones" in split.extra:
        names += ["event_a", "event_b", "event_c", "p_b_given_a", "p_c_given_ab"]
    return tuple(names)


@torch.no_grad()
def split_scores(logits, y, split, device) -> dict:
    """evaluate_split's numbers from the split's logits (N, classes) and targets y (N,)."""
    pred = logits.argmax(-1)
    out = {"loss": F.cross_entropy(logits, y).item(), "acc": (pred == y).float().mean().item()}
    if "symmetric_target" in split.extra:
        sym = torch.as_tensor(split.extra["symmetric_target"], device=device)
        out["symmetric_rate"] = (pred == sym).float().mean().item()
    if "chemistry_stones" in split.extra:
        out.update(alchemy_events(pred.cpu().numpy(), split))
    return out


def alchemy_events(pred, split) -> dict:
    """Events per query, P(C) = P(A) P(B|A) P(C|A and B): A the prediction is one of the
    chemistry's 8 stones, B it lies in the query's B set (the face the potion moves onto, or
    the stones reachable in h hops), C it is the answer. nan where a condition never holds."""
    import numpy as np
    a = (pred[:, None] == split.extra["chemistry_stones"]).any(1)
    b = (pred[:, None] == split.extra["event_b"]).any(1)
    c = pred == split.targets
    ab = a & b
    return {"event_a": float(a.mean()), "event_b": float(b.mean()), "event_c": float(c.mean()),
            "p_b_given_a": float(ab.sum() / a.sum()) if a.any() else float(np.nan),
            "p_c_given_ab": float((c & ab).sum() / ab.sum()) if ab.any() else float(np.nan)}
