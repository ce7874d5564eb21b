"""The ``shell`` agent: a plain shell or any command, with no holes drilled at all.

``egg run shell`` starts the configured shell (egg.yaml ``shell:``, else ``$SHELL``, else
``/bin/sh``); ``egg exec -- CMD`` and ``egg run -- CMD`` run CMD under this profile. Nothing is
added to the user's egg.yaml: what the config says is exactly what the command gets.
"""

from __future__ import annotations

from egg_core.api import AgentProfile, RegisterAgent, hookimpl

PROFILE = AgentProfile(
    name="shell",
    description="a plain shell or command: exactly the egg.yaml policy, no agent holes",
    binary=None,
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
