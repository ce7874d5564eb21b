"""An example third-party egg plugin: registers the ``example`` agent.

Copy this package to start your own agent plugin. The profile is data: the holes the agent needs,
each with a reason that ``egg explain`` shows to the person reviewing the sandbox.
"""

from egg_core.api import AgentProfile, Grant, RegisterAgent, hookimpl

PROFILE = AgentProfile(
    name="example",
    description="an example agent that talks to api.example.com",
    binary="example-agent",
    domains=[Grant("api.example.com", "the example agent's model API")],
    env_vars=[Grant("EXAMPLE_API_KEY", "the example agent authenticates with this key")],
    write_dirs=[Grant(".example-agent", "the example agent keeps its state here")],
    settings_files=[
        Grant(".example-agent/settings.json", "may define hooks that run outside a session")
    ],
    skip_permissions_flag="--yes",
    resume_flag="--resume",
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
