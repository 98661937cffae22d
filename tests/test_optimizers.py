import numpy as np
import pytest

from critwin.theory import ConfigError, Schedule, init_params, run_discrete
from critwin.theory.setting import build_problem


def test_momentum_zero_equals_gd(small_problem, small):
    q = init_params(small_problem, small.gamma, [0])
    s = Schedule.window(20, 40, 0.5, 60)
    a = run_discrete(small_problem, q, s, small.eta, "gd", eval_every=30)[1]
    b = run_discrete(small_problem, q, s, small.eta, "momentum", momentum=0.0, eval_every=30)[1]
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-12)


def test_adam_step_size_does_not_scale_with_gradient(small):
    """Scaling the loss by 720 (sum vs mean normalisation) leaves AdamW's path unchanged."""
    outs = []
    for norm in ("sum", "mean"):
        p = build_problem(small.with_(loss_norm=norm))
        q = init_params(p, small.gamma, [0])
        outs.append(run_discrete(p, q, Schedule.none(50), small.eta, "adamw", eps=1e-12,
                                 eval_every=50)[1])
    np.testing.assert_allclose(outs[0]["x"], outs[1]["x"], rtol=1e-6)
    gd = [run_discrete(build_problem(small.with_(loss_norm=n)), init_params(build_problem(small), 0.8, [0]),
                       Schedule.none(50), small.eta, "gd", eval_every=50)[1]["x"][-1] for n in ("sum", "mean")]
    assert abs(gd[0] - gd[1]) > 1e-3


def test_decoupled_decay_shrinks_by_eta_lambda(small_problem, small):
    q = init_params(small_problem, small.gamma, [0])
    lam, eta = 3.0, small.eta
    # with momentum's buffer zeroed by momentum=0 and lr small, compare one step with/without decay
    _, _, a = run_discrete(small_problem, q, Schedule.none(1), eta, "adamw", eval_every=1)
    _, _, b = run_discrete(small_problem, q, Schedule.constant(lam, 1), eta, "adamw", eval_every=1)
    np.testing.assert_allclose(b.W1, a.W1 * (1 - eta * lam), rtol=1e-12)


def test_sgd_minibatches_are_seeded(small_problem, small):
    q = init_params(small_problem, small.gamma, [0])
    runs = [run_discrete(small_problem, q, Schedule.none(30), small.eta, "momentum", batch_size=8,
                         seed=s, eval_every=30)[1]["x"][-1, 0] for s in (1, 1, 2)]
    assert runs[0] == runs[1] != runs[2]


def test_bad_optimizer_and_batch(small_problem, small):
    q = init_params(small_problem, small.gamma, [0])
    with pytest.raises(ConfigError, match="optimizer"):
        run_discrete(small_problem, q, Schedule.none(2), 0.1, "lion")
    with pytest.raises(ConfigError, match="batch_size"):
        run_discrete(small_problem, q, Schedule.none(2), 0.1, "gd", batch_size=10_000)


def test_l2_through_adam_moves_each_entry_by_eta_when_the_penalty_dominates(small_problem, small):
    """A huge L2 penalty swamps the loss gradient: Adam's first step is eta * sign(theta) per
    entry (normalised), while the decoupled form shrinks by the factor 1 - eta * lambda."""
    q = init_params(small_problem, small.gamma, [0])
    eta, lam = 1e-3, 1e6
    _, _, a = run_discrete(small_problem, q, Schedule.constant(lam, 1), eta, "adamw", eval_every=1, decay_form="l2")
    np.testing.assert_allclose(q.W1 - a.W1, eta * np.sign(q.W1), rtol=1e-3)


def test_l2_through_gd_is_the_decoupled_shrink_to_first_order(small_problem, small):
    q = init_params(small_problem, small.gamma, [0])
    s = Schedule.window(0, 40, 0.5, 40)
    a = run_discrete(small_problem, q, s, small.eta, "gd", eval_every=40, decay_form="l2")[2]
    b = run_discrete(small_problem, q, s, small.eta, "gd", eval_every=40)[2]
    n = run_discrete(small_problem, q, Schedule.none(40), small.eta, "gd", eval_every=40)[2]
    diff, effect = np.abs(a.W1 - b.W1).max(), np.abs(n.W1 - b.W1).max()
    assert diff < 0.05 * effect


def test_per_member_schedules_equal_separate_runs(small_problem, small):
    q = init_params(small_problem, small.gamma, [0, 0])
    scheds = [Schedule.window(0, 20, 2.0, 40), Schedule.window(20, 40, 2.0, 40)]
    both = run_discrete(small_problem, q, scheds, small.eta, "adamw", eval_every=40, decay_form="l2")[1]
    for k, sc in enumerate(scheds):
        one = run_discrete(small_problem, init_params(small_problem, small.gamma, [0]), sc, small.eta, "adamw",
                           eval_every=40, decay_form="l2")[1]
        np.testing.assert_allclose(both["rho"][:, k], one["rho"][:, 0], rtol=1e-10)
    with pytest.raises(ConfigError, match="decay_form"):
        run_discrete(small_problem, q, scheds, small.eta, "adamw", decay_form="l1")


def test_adamw_onset_window_prediction_runs(small):
    from critwin.theory import predict
    (row,) = predict(small, 0.8, "adamw", width=20, wd=2.0, total=60, onsets=[0, 20, 40], decay_form="l2")
    assert row["method"] == "adamw" and len(row["fractions"]) == 3 and row["window"] in ("onset", "none")


def test_gd_time_scale_matches_the_flow_and_adamw_is_faster():
    """GD's memorization time equals the full flow's (an ODE solve) to within the evaluation
    grid; AdamW on the same model memorizes in fewer steps."""
    from critwin.theory import StylisedSetting, compute_rates, integrate_flow
    from critwin.theory.optimizers import crossing_step, optimizer_time_scale
    s = StylisedSetting(d=16, keys=6, anchors=5, train_pairs=15, eta=1e-2, targets="permutation")
    p = build_problem(s)
    r = compute_rates(s, [0.8], problem=p)
    o = optimizer_time_scale(p, [0.8], s.eta, s.delta, r.capacity, "adamw", horizon=400, eval_every=2)
    steps, traj, _ = integrate_flow(p, init_params(p, [0.8], [0]), [Schedule.none(400)], s.eta, np.arange(0, 401, 2))
    assert abs(o["t1_gd"][0] - crossing_step(steps, traj["x"][:, 0], 1 - s.delta)) <= 4
    assert o["t1_ratio"][0] > 1


def test_adam_gain_after_one_step_is_eta_theta_over_the_first_gradient():
    """After one Adam step v_hat is the first gradient squared, so the logged gain is
    eta |theta_1| / |(|g_0| + eps) theta_1|, computed here from the gradient at init."""
    from critwin.theory import StylisedSetting
    from critwin.theory.stylised import loss_and_grads
    s = StylisedSetting(d=8, keys=4, anchors=3, train_pairs=5)
    p = build_problem(s)
    q0 = init_params(p, [0.5, 1.1], [0, 1])
    _, g0 = loss_and_grads(p, q0)
    steps, traj, q1 = run_discrete(p, q0, Schedule.none(1), s.eta, "adamw", eval_every=1)
    assert np.isnan(traj["adam_gain"][0]).all()
    for e in range(2):
        num = sum((a[e] ** 2).sum() for a in q1.arrays())
        den = sum((((np.abs(g[e]) + 1e-8) * a[e]) ** 2).sum() for a, g in zip(q1.arrays(), g0.arrays()))
        assert traj["adam_gain"][1, e] == pytest.approx(s.eta * np.sqrt(num / den), rel=1e-9)
    _, traj_gd, _ = run_discrete(p, q0, Schedule.none(1), s.eta, "gd", eval_every=1)
    assert "adam_gain" not in traj_gd


def plain_adamw(p, q, schedule, eta, decay_form, betas=(0.9, 0.98), eps=1e-8):
    """One run, step by step, as the optimizer is written down: fresh arrays every step, no
    sharing between runs, nothing in place but the moments."""
    from critwin.theory.adam import adam_step
    from critwin.theory.stylised import loss_and_grads
    q = q.copy()
    m = [np.zeros_like(a) for a in q.arrays()]
    v = [np.zeros_like(a) for a in q.arrays()]
    for t in range(schedule.total):
        lam = float(schedule.value(t))
        _, g = loss_and_grads(p, q)
        for a, ga, mk, vk in zip(q.arrays(), g.arrays(), m, v):
            if decay_form == "l2":
                ga = ga + lam * a
            a -= adam_step(mk, vk, ga, t + 1, eta, betas, eps)
            if decay_form == "decoupled":
                a *= 1 - eta * lam
    return q


@pytest.mark.parametrize("decay_form", ["l2", "decoupled"])
def test_shared_prefix_runs_equal_plain_single_runs(small_problem, small, decay_form):
    """run_discrete steps the members that start alike once until their decay parts them (an onset
    sweep: one no-decay trunk, each onset branching off it, two inits); every member still ends
    exactly where its own plain run ends, and so does its reported reasoning fraction."""
    from critwin.theory.stylised import order_parameters, reasoning_fraction
    total = 45
    scheds = [Schedule.none(total)] + [Schedule.window(o, o + 15, 2.0, total) for o in (0, 10, 20, 30)]
    scheds += [Schedule.window(10, 25, 2.0, total), Schedule.constant(0.5, total)]      # a duplicate onset
    seeds = [0] * len(scheds) + [1] * 3
    scheds += scheds[:3]
    q = init_params(small_problem, small.gamma, seeds)
    steps, traj, final = run_discrete(small_problem, q, scheds, small.eta, "adamw", eval_every=total,
                                      decay_form=decay_form)
    for k, (sc, seed) in enumerate(zip(scheds, seeds)):
        one = plain_adamw(small_problem, init_params(small_problem, small.gamma, [seed]), sc, small.eta, decay_form)
        for a, b in zip(final.arrays(), one.arrays()):
            np.testing.assert_array_equal(a[k], b[0])
        obs = order_parameters(small_problem, one)
        assert traj["reasoning_fraction"][-1, k] == reasoning_fraction(obs["x"], obs["rho"])[0]
    assert len(set(traj["reasoning_fraction"][-1].tolist())) == len(scheds) - 1     # only the repeat ends alike


def test_adam_update_in_place_is_adam_step_bitwise():
    """The in-place step the runs take equals adam_step float for float, early (bias corrections
    below 1) and late (corrections exactly 1, whose divisions it skips)."""
    from critwin.theory.adam import adam_step, adam_update
    rng = np.random.default_rng(0)
    w, m, v = rng.normal(size=(3, 5, 4)), rng.normal(size=(5, 4)) * 0.1, rng.random((5, 4)) * 0.1
    w2, m2, v2 = w.copy(), m.copy(), v.copy()
    scratch = (np.empty_like(w[0]), np.empty_like(w[0]))
    for k, t in enumerate((1, 2, 3, 300, 400, 1800, 1900, 5000)):
        g = rng.normal(size=w.shape[1:])
        lr = 3e-3 if k % 2 else rng.random((5, 1))
        w[0] -= adam_step(m, v, g, t, lr, (0.9, 0.98), 1e-8)
        adam_update(w2[0], m2, v2, g, t, lr, (0.9, 0.98), 1e-8, scratch)
        for a, b in ((w, w2), (m, m2), (v, v2)):
            np.testing.assert_array_equal(a, b)
