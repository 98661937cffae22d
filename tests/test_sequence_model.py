"""SCAN as a language model: the layout against the grammar's own reading, batched greedy
decoding against decoding one row at a time, and the training loop's sequence metrics."""
import numpy as np
import pytest
import torch

from critwin.empirical import TrainConfig, train
from critwin.empirical.metrics.decode import evaluate_sequences, greedy_decode
from critwin.empirical.models import ModelConfig, Transformer
from critwin.empirical.tasks import make_task
from critwin.empirical.tasks.scan import SCAN_VOCAB, interpret
from critwin.empirical.tasks.sequence import IGNORE, language_model_data


@pytest.fixture(scope="module")
def lm():
    return language_model_data(make_task("scan_add_prim_jump", 0).generate())


def test_layout_reads_back_as_the_grammar_says(lm):
    sep, eos = lm.info["sep"], lm.info["eos"]
    assert lm.vocab_size == len(SCAN_VOCAB) + 2 and len(lm.splits["test"]) == 7706
    s = lm.splits["test"]
    for r in range(0, len(s), 997):
        row = s.inputs[r].tolist()
        cut, end = row.index(sep), row.index(eos)
        command = " ".join(SCAN_VOCAB[t] for t in row[:cut])
        assert [SCAN_VOCAB[t] for t in row[cut + 1:end]] == interpret(command)
        assert s.extra["prompt_lengths"][r] == cut + 1 and s.extra["lengths"][r] == end + 1
        y = s.targets[r]
        assert (y[cut:end] == np.array(row[cut + 1:end + 1])).all()          # next tokens, <eos> last
        assert (y[:cut] == IGNORE).all() and (y[end:] == IGNORE).all()
        ans = s.extra["answers"][r]
        assert ans[:end - cut].tolist() == row[cut + 1:end + 1] and (ans[end - cut:] == IGNORE).all()


def test_batched_greedy_decoding_equals_one_row_at_a_time(lm):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(d=16), lm.vocab_size, lm.seq_len).eval()
    s = lm.splits["test"].sample(12, seed=3)
    x, plen = torch.as_tensor(s.inputs), torch.as_tensor(s.extra["prompt_lengths"])
    eos, max_new = lm.info["eos"], 10
    batched = greedy_decode(model, x[:, :int(plen.max())], plen, max_new, eos)
    for r in range(len(s)):
        seq = x[r, :plen[r]].tolist()
        want = []
        with torch.no_grad():
            for _ in range(max_new):
                nxt = int(model(torch.tensor([seq])).argmax(-1))
                want.append(nxt)
                seq.append(nxt)
                if nxt == eos:
                    break
        assert batched[r, :len(want)].tolist() == want and (batched[r, len(want):] == 0).all()


def test_sequence_scores_of_an_oracle():
    """A model that always emits the right next token scores 1 everywhere (scored on answers
    recomputed from the layout, not from the model)."""
    lm = language_model_data(make_task("scan_add_prim_jump", 0).generate())
    s = lm.splits["test"].sample(40, seed=1)
    V, sep = lm.vocab_size, lm.info["sep"]
    by_prompt = {tuple(f[:f.index(sep) + 1]): f for f in s.inputs.tolist()}    # commands are unique

    class Oracle(torch.nn.Module):
        def forward(self, idx, lengths=None, all_positions=False):
            nxt = torch.zeros(idx.shape[0], idx.shape[1], V)
            for r, row in enumerate(idx.tolist()):
                full = by_prompt[tuple(row[:row.index(sep) + 1])]
                for t in range(len(row)):
                    nxt[r, t, full[t + 1] if t + 1 < len(full) else 0] = 1.0
            if all_positions:
                return nxt
            last = idx.shape[1] - 1 if lengths is None else lengths - 1
            return nxt[torch.arange(len(idx)), last]
    out = evaluate_sequences(Oracle(), s, "cpu")
    assert out["seq_acc"] == 1.0 and out["token_acc"] == 1.0 and out["acc"] == 1.0


def test_training_logs_sequence_metrics():
    run = train(TrainConfig(task="scan_add_prim_jump", model=ModelConfig(d=16), steps=20, batch_size=32,
                            eval_every=10, eval_max=40), progress=False)
    f = run.summary["final"]
    assert {"test_seq_acc", "test_token_acc", "train_seq_acc"} <= set(f) and 0 <= f["test_seq_acc"] <= 1
    assert run.summary["status"] == "complete"


def test_train_scan_command(tmp_path, capsys):
    import json

    from critwin.cli.main import main
    code = main(["train", "scan", "--d", "16", "--steps", "10", "--eval-every", "5", "--eval-max", "20",
                 "--store", str(tmp_path), "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["status"] == "complete" and "test_seq_acc" in d["final"]
