"""The toolkit's words, defined once: decay readings, optimizer names, the init-scale convention.

Decay reading: how the decay strength lambda acts (`decay_form`) and on which parameters
(`decay_set`), with or without a bias on the readout head. The paper's own reading (its Eq. 4) is an
L2 penalty lambda/2 |theta|^2 in the loss on every non-embedding parameter, passed through the
optimizer: `PAPER_READING`, the default of every command and check. `TrainConfig` keeps its original
field defaults (`STORED_READING`: decoupled, matrices) because its fields feed the run id, so the runs
stored before the paper's reading was found keep their ids; a command sets the reading explicitly.

Optimizer names: the runs train with `RUN_OPTIMIZERS` (torch AdamW, or SGD with an optional heavy-ball
momentum); the theory's discrete steps are `THEORY_OPTIMIZERS` (plain gradient descent, heavy-ball
momentum, Adam). `theory_optimizer` maps a run's optimizer to the theory's step.

Init scale gamma: every weight matrix's entries start ~ N(0, gamma^2 / d) with d its fan-in (the
paper's multiplier convention); larger gamma means a larger initial norm. `PAPER_GAMMAS` are the
three scales the paper's figures use, `DEFAULT_GAMMA` the one a command takes when given none.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from critwin.errors import ConfigError

# ----------------------------------------------------------------- decay readings
DECAY_FORMS = ("decoupled", "l2", "adam_scaled")   # shrink after the step; penalty in the loss; its gradient Adam-normalised
STYLISED_DECAY_FORMS = DECAY_FORMS[:2]             # the forms the theory's discrete steps know
DECAY_SETS = ("matrices", "non_embedding", "all")
PAPER_READING = {"decay_form": "l2", "decay_set": "non_embedding", "head_bias": False}        # the paper's Eq. 4
STORED_READING = {"decay_form": "decoupled", "decay_set": "matrices", "head_bias": False}     # TrainConfig's fields


def scale_text(scale: float) -> str:
    """A decay scale as text that reads back to the same float: '1000/3' for 1000/3,
    '333.3333333' for 333.3333333 (distinct scales, distinct runs, distinct labels)."""
    f = Fraction(scale).limit_denominator(1000)
    if f.denominator != 1 and float(f) == scale:
        return f"{f.numerator}/{f.denominator}"
    return f"{scale:.10g}"


def reading_label(decay_form: str, decay_set: str, head_bias: bool = False, wd_scale: float = 1.0) -> str:
    """'l2/non_embedding', 'decoupled/matrices/head bias', 'decoupled/matrices x1000/3': the decay
    reading in tables, figure titles and the run store's `reading` column."""
    return (f"{decay_form}/{decay_set}" + ("/head bias" if head_bias else "")
            + (f" x{scale_text(wd_scale)}" if wd_scale != 1.0 else ""))


def is_l2(label: str) -> bool:
    """Whether a reading label (`reading_label` or `Reading.label`) reads the decay as an L2 penalty."""
    return label.split("/", 1)[0] == "l2"


@dataclass(frozen=True)
class Reading:
    """One reading of the paper's decay, as a command names it: form, decayed set, scale of lambda,
    head bias; the paper's own reading by default."""

    decay_form: str = PAPER_READING["decay_form"]
    decay_set: str = PAPER_READING["decay_set"]
    wd_scale: float = 1.0
    head_bias: bool = False

    @classmethod
    def parse(cls, text: str) -> "Reading":
        """'FORM/SET[ xSCALE][/bias]', e.g. l2/non_embedding, decoupled/matrices x1000/3 (SCALE a
        number or a fraction A/B; the label of a reading parses back to it)."""
        head = text.strip()
        bias = head.endswith("/bias")
        head = head[: -len("/bias")] if bias else head
        scale = 1.0
        if " x" in head:
            head, s = head.rsplit(" x", 1)
            try:
                a, _, b = s.partition("/")
                scale = float(a) / float(b) if b else float(a)
            except (ValueError, ZeroDivisionError):
                raise ConfigError("reading", text, "FORM/SET[ xSCALE][/bias], e.g. 'l2/non_embedding'") from None
        parts = head.split("/")
        if len(parts) != 2:
            raise ConfigError("reading", text, "FORM/SET[ xSCALE][/bias], e.g. 'decoupled/matrices x333.3333333'")
        r = cls(parts[0], parts[1], scale, bias)
        r.options()      # validates form, set and scale
        return r

    def options(self) -> dict:
        """The config fields of the reading (its scale multiplies the runs' lambda, outside the config)."""
        if self.decay_form not in DECAY_FORMS:
            raise ConfigError("decay_form", self.decay_form, "one of " + ", ".join(DECAY_FORMS))
        if self.decay_set not in DECAY_SETS:
            raise ConfigError("decay_set", self.decay_set, "one of " + ", ".join(DECAY_SETS))
        if not isinstance(self.head_bias, bool):
            raise ConfigError("head_bias", self.head_bias, "True or False")
        if not (isinstance(self.wd_scale, (int, float)) and self.wd_scale == self.wd_scale
                and abs(self.wd_scale) != float("inf") and self.wd_scale > 0):
            raise ConfigError("wd_scale", self.wd_scale, "a decay scale > 0")
        return {"decay_form": self.decay_form, "decay_set": self.decay_set, "head_bias": self.head_bias}

    @property
    def label(self) -> str:
        """FORM/SET[ xSCALE][/bias]: what `parse` reads back."""
        self.options()
        return f"{self.decay_form}/{self.decay_set}" + (f" x{scale_text(self.wd_scale)}" if self.wd_scale != 1.0 else "") \
            + ("/bias" if self.head_bias else "")


# ----------------------------------------------------------------- optimizer names
RUN_OPTIMIZERS = ("adamw", "sgd")                  # what a run trains with (TrainConfig.optimizer)
THEORY_OPTIMIZERS = ("gd", "momentum", "adamw")    # the theory's discrete steps on the stylised models


def theory_optimizer(optimizer: str, momentum: float = 0.0) -> str:
    """The theory's step for a run's optimizer: adamw -> adamw; sgd -> gd, or momentum when it has one."""
    if optimizer not in RUN_OPTIMIZERS:
        raise ConfigError("optimizer", optimizer, "one of " + ", ".join(RUN_OPTIMIZERS))
    if optimizer == "adamw":
        return "adamw"
    return "momentum" if momentum else "gd"


# ----------------------------------------------------------------- init scale
PAPER_GAMMAS = (0.5, 0.8, 1.1)   # the paper's init scales: small (reasoning), middle, large (memorization)
DEFAULT_GAMMA = 0.8
GAMMA_HELP = "init scale gamma > 0: weight entries ~ N(0, gamma^2/d), d the fan-in"

__all__ = ["DECAY_FORMS", "DECAY_SETS", "DEFAULT_GAMMA", "GAMMA_HELP", "PAPER_GAMMAS", "PAPER_READING", "RUN_OPTIMIZERS",
           "Reading", "STORED_READING", "STYLISED_DECAY_FORMS", "THEORY_OPTIMIZERS", "is_l2", "reading_label", "scale_text",
           "theory_optimizer"]
