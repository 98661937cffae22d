"""The theory's time a step for each optimizer, against torch's own optimizers on a slow linear mode."""
import math

import pytest
import torch

from critwin.bridge.compare import config_setting, flow_eta
from critwin.empirical.sweep import config_from_flat


def steps_to_decay(opt_name: str, lr: float, sigma: float, momentum: float = 0.0) -> int:
    """Steps torch's optimizer takes to shrink x under f = sigma x^2 / 2 by a factor e."""
    x = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    opt = torch.optim.SGD([x], lr=lr, momentum=momentum)
    for step in range(1, 10**6):
        opt.zero_grad()
        (0.5 * sigma * x ** 2).sum().backward()
        opt.step()
        if float(x) <= math.exp(-1):
            return step
    raise AssertionError("no decay")


@pytest.mark.parametrize("momentum", [0.0, 0.5, 0.9])
def test_a_step_of_sgd_with_momentum_is_lr_over_one_minus_momentum_of_flow_time(momentum):
    lr, sigma = 1e-3, 0.5                  # a slow mode: lr * sigma / (1 - momentum) << 1
    eta = flow_eta({"lr": lr, "optimizer": "sgd", "momentum": momentum})
    flow_steps = 1.0 / (sigma * eta)       # the flow x' = -sigma x reaches 1/e at t = 1/sigma
    assert steps_to_decay("sgd", lr, sigma, momentum) == pytest.approx(flow_steps, rel=0.02)


def test_the_run_configs_map_to_their_flow_time():
    sgd = config_from_flat({"optimizer": "sgd", "lr": 0.1, "momentum": 0.9})
    adamw = config_from_flat({})
    assert config_setting(sgd).eta == pytest.approx(1.0)
    assert config_setting(adamw).eta == pytest.approx(adamw.lr)
