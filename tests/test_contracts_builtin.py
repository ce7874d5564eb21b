"""The built-in plugins pass the same contracts a third-party plugin runs."""

from __future__ import annotations

from pathlib import Path

from egg_core.testing import AgentProfileContract, HistoryContract, HistorySample, PlatformContract
from tests.history import samples


class TestClaude(AgentProfileContract):
    plugin = "claude"


class TestCodex(AgentProfileContract):
    plugin = "codex"


class TestGemini(AgentProfileContract):
    plugin = "gemini"


class TestOpencode(AgentProfileContract):
    plugin = "opencode"


class TestCursor(AgentProfileContract):
    plugin = "cursor"


class TestOllama(AgentProfileContract):
    plugin = "ollama"


class TestShell(AgentProfileContract):
    plugin = "shell"


class TestLinuxNamespaces(PlatformContract):
    plugin = "linux-ns"


class TestMacSeatbelt(PlatformContract):
    plugin = "macos-seatbelt"


class TestUnsandboxed(PlatformContract):
    plugin = "unsandboxed"


class TestClaudeHistory(HistoryContract):
    plugin = agent = "claude"

    def sample(self, cwd: Path, agent_session_id: str) -> HistorySample:
        return samples.claude(cwd, agent_session_id)


class TestCodexHistory(HistoryContract):
    plugin = agent = "codex"

    def sample(self, cwd: Path, agent_session_id: str) -> HistorySample:
        return samples.codex(cwd, agent_session_id)


class TestGeminiHistory(HistoryContract):
    plugin = agent = "gemini"

    def sample(self, cwd: Path, agent_session_id: str) -> HistorySample:
        return samples.gemini(cwd, agent_session_id)
