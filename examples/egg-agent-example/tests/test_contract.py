"""The example plugin passes egg's agent contract: one line names the plugin."""

from egg_core.testing import AgentProfileContract


class TestExampleAgent(AgentProfileContract):
    plugin = "example"
