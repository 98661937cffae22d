"""The toolkit's own errors: bad input (ConfigError), a damaged run folder (CorruptRunError), a
trained run the store could not take (RunNotStoredError); how its warnings read (`one_line_warning`)."""


class ConfigError(ValueError):
    """Invalid input: the message names the field and the values it accepts."""

    def __init__(self, field: str, value, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"{field}={value!r} is invalid: {allowed}")

    def __reduce__(self):       # rebuilt from its fields when a worker process sends it back
        return type(self), (self.field, self.value, self.allowed)


class CorruptRunError(RuntimeError):
    """A run folder that is incomplete, unreadable or does not match its name."""

    def __init__(self, path, reason: str):
        from pathlib import Path
        self.path, self.reason = Path(path), reason
        super().__init__(f"corrupt run folder {path}: {reason}")

    def __reduce__(self):
        return type(self), (self.path, self.reason)


class RunNotStoredError(RuntimeError):
    """A run trained to its end that could not be written to the store (a full disk): what failed,
    and where its resume state is, if it has one."""

    def __init__(self, run_id: str, reason: str, resume: str):
        self.run_id, self.reason, self.resume = run_id, reason, resume
        super().__init__(f"run {run_id} was trained but not stored: {reason}; {resume}")

    def __reduce__(self):
        return type(self), (self.run_id, self.reason, self.resume)


def one_line_warning(message, category=None, filename=None, lineno=None, line=None) -> str:
    """A warning as a user reads it: one line, without our source file and line (a warnings.formatwarning)."""
    return f"critwin: warning: {message}\n"
