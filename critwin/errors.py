"""The one exception the theory module raises for bad input."""


class ConfigError(ValueError):
    """Invalid input: the message names the field and the values it accepts."""

    def __init__(self, field: str, value, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"{field}={value!r} is invalid: {allowed}")
