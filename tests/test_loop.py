"""The training driver (empirical/loop.py) and the stacked decay it hands a pack's stepper."""
import io
from dataclasses import replace

import numpy as np
import pytest
import torch

from critwin.empirical import TrainConfig, train
from critwin.empirical.engine import train_pack
from critwin.empirical.interventions import add_l2_grad, apply_decay
from critwin.empirical.interventions.stacked_decay import (
    add_stacked_l2_grad,
    apply_stacked_decay,
    stacked_decay_masks,
)
from critwin.empirical.loop import BatchOrder, Member, drive
from critwin.empirical.models import ModelConfig, Transformer

BASE = TrainConfig(model=ModelConfig(d=16), steps=30, batch_size=32, eval_every=10)
SINGLE_STATE = {"format", "step", "wall", "checkpoints", "config", "model", "optimizer", "generator", "torch_rng",
                "perm", "ptr", "rows", "last"}
PACK_STATE = {"format", "step", "wall", "configs", "params", "optimizer", "members", "alive"}
PACK_MEMBER = {"generator", "perm", "ptr", "rows", "last", "status", "error", "own_step"}


class Recorder:
    """A stepper that trains nothing and records what the driver asks of it."""

    identity, label = None, "recorder"

    def __init__(self, members, diverge_at=None):
        self.members, self.diverge_at, self.calls = members, diverge_at or {}, []

    def forward(self, batches):
        self.calls.append(("forward", [b.tolist() for b in batches]))
        step = sum(c[0] == "forward" for c in self.calls) - 1
        return [self.diverge_at.get(e) != step for e in range(len(self.members))]

    def update(self, step, lrs, lams, evaluate):
        self.calls.append(("update", step, lrs, lams, evaluate))

    def evaluate(self, step):
        self.calls.append(("evaluate", step))
        for m in self.members:
            if m.alive:
                m.last = {"step": step}

    def state(self, step, wall=0.0, checkpoints=None):
        return b""

    def restore(self, state, resumed):
        raise AssertionError("no state to restore")


class FakeData:
    def __init__(self, n):
        self.splits = {"train": FakeSplit(n)}


class FakeSplit:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def sample(self, at_most):
        return self


def members(cfgs, n=100):
    return [Member.of(c, FakeData(n)) for c in cfgs]


def test_the_driver_evaluates_on_its_rhythm_and_passes_each_members_lr_and_decay():
    cfgs = [replace(BASE, steps=25, wd_windows=((5.0, 15.0, 0.5),), lr_schedule="cosine", lr_final=1e-4),
            replace(BASE, steps=25, seed=1, lr=1e-3)]
    ms = members(cfgs)
    rec = Recorder(ms)
    heard = []
    out = drive(rec, ms, progress=False, on_steps=heard.append)
    assert [c[1] for c in rec.calls if c[0] == "evaluate"] == [0, 10, 20, 25]    # every eval_every and the last
    updates = [c for c in rec.calls if c[0] == "update"]
    assert [u[1] for u in updates] == list(range(25))
    assert [u[4] for u in updates] == [s + 1 in (10, 20, 25) for s in range(25)]
    for _, step, lrs, lams, _ in updates:       # each member's own schedules, by hand
        cos = 1e-4 + (3e-3 - 1e-4) * 0.5 * (1 + np.cos(np.pi * step / 25))
        assert lrs == pytest.approx([cos, 1e-3], rel=1e-12)
        assert lams == [0.5 if 5 <= step < 15 else 0.0, 0.0]
    assert heard == [20, 20, 10] and out.first == 0 and not out.resumed


def test_the_driver_draws_each_members_batches_from_its_own_seeded_order():
    ms = members([replace(BASE, seed=3), replace(BASE, seed=4)], n=70)
    rec = Recorder(ms)
    drive(rec, ms, progress=False)
    drawn = [c[1] for c in rec.calls if c[0] == "forward"]
    for e, seed in enumerate((3, 4)):           # a fresh permutation whenever the next batch would run past 70
        gen = torch.Generator().manual_seed(seed)
        want, perm, ptr = [], torch.randperm(70, generator=gen), 0
        for _ in range(30):
            if ptr + 32 > 70:
                perm, ptr = torch.randperm(70, generator=gen), 0
            want.append(perm[ptr:ptr + 32].tolist())
            ptr += 32
        assert [d[e] for d in drawn] == want


def test_a_diverged_member_stops_being_logged_and_the_loop_stops_when_none_is_left():
    ms = members([BASE, replace(BASE, seed=1)])
    rec = Recorder(ms, diverge_at={0: 4, 1: 12})
    drive(rec, ms, progress=False)
    assert (ms[0].status, ms[0].error) == ("diverged", "non-finite training loss at step 4")
    assert (ms[1].status, ms[1].error) == ("diverged", "non-finite training loss at step 12")
    assert ms[0].last == {"step": 0} and ms[1].last == {"step": 10}
    assert [c[1] for c in rec.calls if c[0] == "update"] == list(range(12))      # no update at step 12


def test_batch_order_restores_exactly():
    a = BatchOrder(50, 16, seed=2)
    for _ in range(5):
        a.next()
    b = BatchOrder(50, 16, seed=9)
    b.restore(a.gen.get_state(), a.perm.clone(), a.ptr)
    assert all(torch.equal(a.next(), b.next()) for _ in range(10))


def test_resume_states_keep_their_keys(tmp_path):
    cfg = replace(BASE, checkpoints=(10,))
    run = train(cfg, progress=False)
    state = torch.load(io.BytesIO(run.checkpoints[10]), weights_only=False)
    assert set(state) == SINGLE_STATE and state["step"] == 10
    path = tmp_path / "pack.pt"

    class Stop(Exception):
        pass

    def stop(n):
        raise Stop
    with pytest.raises(Stop):
        train_pack([BASE, replace(BASE, seed=1)], progress=False, resume=path, save_every=0.0, on_steps=stop)
    assert not path.exists()        # the state is written after on_steps: one more evaluation
    seen = []

    def stop_second(n):
        seen.append(n)
        if len(seen) == 2:
            raise Stop
    with pytest.raises(Stop):
        train_pack([BASE, replace(BASE, seed=1)], progress=False, resume=path, save_every=0.0, on_steps=stop_second)
    state = torch.load(path, weights_only=False)
    assert set(state) == PACK_STATE and state["step"] == 10 and state["alive"] == [True, True]
    assert all(set(m) == PACK_MEMBER for m in state["members"])


@pytest.mark.parametrize("form", ["l2", "decoupled"])
def test_stacked_decay_equals_each_member_decayed_alone(form):
    torch.manual_seed(0)
    models = [Transformer(ModelConfig(d=8), 10, 4, 5) for _ in range(3)]
    sets = ["matrices", None, "non_embedding"]           # member 1 does not decay in this reading
    lam, lrs = np.array([0.3, 0.0, 0.7]), np.array([1e-2, 1e-2, 3e-2])
    for m in models:
        for p in m.parameters():
            p.grad = torch.randn_like(p)
    names = [n for n, _ in models[0].named_parameters()]
    stacked = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]).clone() for n in names}
    for n, t in stacked.items():
        t.grad = torch.stack([dict(m.named_parameters())[n].grad for m in models]).clone()
    masks = stacked_decay_masks(models[0], sets)
    if form == "l2":
        add_stacked_l2_grad(stacked, lam, masks)
    else:
        apply_stacked_decay(stacked, lrs, lam, masks)
    for e, m in enumerate(models):
        decayed = m.decayed_parameters(sets[e]) if sets[e] else []
        if form == "l2":
            add_l2_grad(decayed, float(lam[e]))
        else:
            apply_decay(decayed, float(lrs[e]), float(lam[e]))
        for n, p in m.named_parameters():
            got = stacked[n].grad[e] if form == "l2" else stacked[n][e]
            want = p.grad if form == "l2" else p.detach()
            assert torch.allclose(got, want, rtol=1e-6, atol=1e-6), (e, n)    # one rounding apart
