"""An example third-party egg plugin: registers the ``example`` agent and one host tool.

Copy this package to start your own agent plugin. The profile is data: the holes the agent needs,
each with a reason that ``egg explain`` shows to the person reviewing the sandbox. The tool is a
Python function the sandbox may call (``egg tool-call example-words a b``) once egg.yaml says
``tools: [example-words]``.
"""

from collections.abc import Mapping, Sequence

from egg_core.api import (
    AgentProfile,
    Grant,
    RegisterAgent,
    RegisterTool,
    Tool,
    ToolParam,
    ToolResult,
    hookimpl,
)

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


def count_words(args: Sequence[str], env: Mapping[str, str]) -> ToolResult:
    """How many words the arguments hold, and who asked (egg sets EGG_SESSION and EGG_TOOL)."""
    words = sum(len(arg.split()) for arg in args)
    return ToolResult(stdout=f"{words} words (asked by {env.get('EGG_SESSION', '?')})\n")


@hookimpl
def egg_register_tools(register: RegisterTool) -> None:
    register(
        Tool(
            name="example-words",
            description="count the words of its arguments, on the host",
            func=count_words,
            params=[ToolParam(name="text", description="words to count", required=True)],
        )
    )
