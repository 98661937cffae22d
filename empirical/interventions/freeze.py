"""Layer freezing as a schedule: component X is frozen from step t to the end."""
from __future__ import annotations

from dataclasses import dataclass

from critwin.errors import ConfigError


@dataclass(frozen=True)
class Freeze:
    component: str   # a key of Transformer.components(): embedding, layer0, layer1.attn, ...
    step: int

    @classmethod
    def parse(cls, text: str) -> "Freeze":
        """'COMPONENT@STEP' -> Freeze."""
        try:
            comp, step = text.rsplit("@", 1)
            return cls(comp, int(step))
        except ValueError:
            raise ConfigError("freeze", text, "COMPONENT@STEP, e.g. layer0@5000") from None

    def validate(self, components, total_steps: int) -> None:
        if self.component not in components:
            raise ConfigError("freeze", self.component, "one of " + ", ".join(sorted(components)))
        if not (0 <= self.step <= total_steps):
            raise ConfigError("freeze", f"{self.component}@{self.step}",
                              f"a step in [0, {total_steps}]")


def frozen_parameters(freezes, components: dict, step: int) -> list:
    """Parameters frozen at `step` (a parameter may belong to several components)."""
    seen, out = set(), []
    for f in freezes:
        if step >= f.step:
            for p in components[f.component]:
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
    return out
