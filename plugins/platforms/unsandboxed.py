"""The ``unsandboxed`` platform (skeleton; filled in by the platforms issue)."""

from __future__ import annotations

from egg_core.hookspecs import RegisterPlatform, hookimpl
from egg_core.sandbox import NET_FULL, Availability, Launch, Platform, Prepared


class Unsandboxed(Platform):
    name = "unsandboxed"
    description = "no OS sandbox: an outer VM or container is the boundary"
    capabilities = frozenset({NET_FULL})
    outer_boundary = True

    def available(self) -> Availability:
        return Availability(True, "always available; enforces nothing")

    def command(self, launch: Launch) -> list[str]:
        return list(launch.argv)

    def prepare(self, launch: Launch) -> Prepared:
        return Prepared(argv=list(launch.argv), env=dict(launch.env), cwd=launch.cwd)


@hookimpl
def egg_register_platforms(register: RegisterPlatform) -> None:
    register(Unsandboxed())
