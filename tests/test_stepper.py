"""The stepper protocol is a base class: both steppers are Steppers, and one that leaves out a step
method cannot be built."""
import pytest

from critwin.empirical.engine import PackStepper
from critwin.empirical.stepper import Stepper
from critwin.empirical.train import ModelStepper


def test_both_steppers_write_every_method_of_the_protocol():
    for cls in (ModelStepper, PackStepper):
        assert issubclass(cls, Stepper) and not cls.__abstractmethods__
    assert Stepper.__abstractmethods__ == {"forward", "update", "evaluate", "state", "restore"}


def test_a_stepper_without_its_update_cannot_be_built():
    class Half(Stepper):
        def forward(self, batches):
            return [True]

        def evaluate(self, step):
            pass

        def state(self, step, wall=0.0, checkpoints=None):
            return b""

        def restore(self, state, resumed):
            pass

    with pytest.raises(TypeError, match="update"):
        Half()


def test_the_registry_sends_a_config_to_the_first_stepper_that_takes_it():
    """Packable configs go to the pack stepper unless packs are off (1); a branch, checkpoints or bf16
    train alone, whatever the pack size."""
    from dataclasses import replace

    from critwin.empirical import TrainConfig
    from critwin.empirical.steppers import STEPPERS, choose_stepper
    assert list(STEPPERS) == ["pack", "model"] and STEPPERS["model"] is ModelStepper
    plain = TrainConfig(steps=40, eval_every=20)
    assert [choose_stepper(plain, p) for p in (None, 8, 2, 1)] == ["pack", "pack", "pack", "model"]
    for alone in (replace(plain, checkpoints=(20,)), replace(plain, precision="bf16"), replace(plain, task="scan_length")):
        assert choose_stepper(alone, 8) == "model"
