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
