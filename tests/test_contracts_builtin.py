"""The built-in plugins pass the same contracts a third-party plugin runs."""

from __future__ import annotations

from egg_core.testing import AgentProfileContract, PlatformContract


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
