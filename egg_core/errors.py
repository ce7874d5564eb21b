"""The one exception family for errors a user can cause.

The CLI turns any :class:`EggError` into a single line on stderr and the error's exit code; every
other exception is a bug in egg or a plugin. Messages name the file, key, value or plugin involved,
because the user has to act on them without a traceback.
"""

from __future__ import annotations


class EggError(Exception):
    """Base of every error a user can cause; ``exit_code`` is what the CLI exits with."""

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class UsageError(EggError):
    """Bad command-line arguments."""

    exit_code = 2


class ConfigError(EggError):
    """An egg.yaml (or a base in its chain) that is unreadable or invalid."""

    exit_code = 2


class PluginError(EggError):
    """A plugin registered something invalid or conflicting (two agents with one name, say)."""

    exit_code = 3


class UnknownNameError(EggError):
    """A name given by the user (agent, platform, session) that nothing registered."""

    exit_code = 2


class EnforcementError(EggError):
    """The policy asks for something the chosen platform cannot enforce on this host.

    egg never falls back to a weaker boundary: it stops, lists each gap and how to close it, and
    starts nothing.
    """

    exit_code = 4

    def __init__(self, gaps: list[str] | str, *, platform: str | None = None) -> None:
        self.gaps = [gaps] if isinstance(gaps, str) else list(gaps)
        self.platform = platform
        where = f"platform {platform!r} " if platform else ""
        super().__init__(f"{where}cannot enforce this policy: " + "; ".join(self.gaps))
