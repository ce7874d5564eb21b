"""The ``unsandboxed`` platform: for when an outer VM or container is the security boundary.

It runs the command as is — full environment (minus a parent agent's session variables), full
network, no filesystem or resource rules — and egg keeps everything else (sessions, PTY
persistence, audit). It enforces nothing, so it is never a fallback: egg chooses it only when the
policy requires no sandbox at all (every boundary wide open in egg.yaml: "outer boundary: declared
by config") or when the user names it with ``--platform unsandboxed`` / ``EGG_PLATFORM``
("outer boundary: declared by user"). The choice is shown by ``egg explain`` and recorded in the
session's metadata.
"""

from __future__ import annotations

from egg_core.api import Availability, Launch, Platform, Prepared, RegisterPlatform, hookimpl
from egg_core.api.platform import capabilities as caps


class Unsandboxed(Platform):
    name = "unsandboxed"
    description = "no OS sandbox: an outer VM or container is the boundary"
    capabilities = frozenset({caps.NET_FULL})
    outer_boundary = True

    def available(self) -> Availability:
        return Availability(True, "always available; enforces nothing")

    def command(self, launch: Launch) -> list[str]:
        return list(launch.argv)

    def prepare(self, launch: Launch) -> Prepared:
        prepared = Prepared(argv=list(launch.argv), env=dict(launch.env), cwd=launch.cwd)
        prepared.notes.append("outer boundary: no OS sandbox")
        return prepared

    def describe(self, launch: Launch) -> dict[str, str]:
        return {"boundary": "none from egg: the VM or container around egg is the boundary"}


@hookimpl
def egg_register_platforms(register: RegisterPlatform) -> None:
    register(Unsandboxed())
