"""The ``macos-seatbelt`` platform (skeleton; filled in by the platforms issue)."""

from __future__ import annotations

import sys

from egg_core.errors import EnforcementError
from egg_core.hookspecs import RegisterPlatform, hookimpl
from egg_core.sandbox import Availability, Launch, Platform, Prepared


def _host() -> str:
    return sys.platform


class MacSeatbelt(Platform):
    name = "macos-seatbelt"
    description = "macOS Seatbelt (sandbox-exec) with a generated SBPL profile"
    capabilities = frozenset()

    def available(self) -> Availability:
        if _host() != "darwin":
            return Availability(False, f"needs macOS (this is {sys.platform})")
        return Availability(True, "sandbox-exec")

    def command(self, launch: Launch) -> list[str]:
        return ["sandbox-exec", "-p", "PROFILE", *launch.argv]

    def prepare(self, launch: Launch) -> Prepared:
        raise EnforcementError("macos-seatbelt is not implemented yet", platform=self.name)


@hookimpl
def egg_register_platforms(register: RegisterPlatform) -> None:
    register(MacSeatbelt())
