"""Ollama (``ollama``): a client talking to a local model server.

Sources checked (stored copies, 2026): ollama/ollama envconfig/config.go — OLLAMA_HOST, default
``127.0.0.1:11434``; OLLAMA_NOHISTORY stops ``ollama run`` writing ~/.ollama/history. The sandboxed
client needs no domain at all, only the server's loopback port, forwarded into the network
namespace (a derived hole; OLLAMA_HOST pointing elsewhere replaces it).
"""

from __future__ import annotations

from egg_core.api import AgentProfile, EnvDefault, Grant, PortGrant, RegisterAgent, hookimpl

PROFILE = AgentProfile(
    name="ollama",
    description="Ollama, a client of the local model server",
    binary="ollama",
    env_vars=[Grant("OLLAMA_HOST", "the address of the Ollama server")],
    set_env=[EnvDefault("OLLAMA_NOHISTORY", "1", "~/.ollama is read-only inside the sandbox")],
    local_ports=[PortGrant(11434, "the Ollama server listens on 127.0.0.1:11434")],
    provider_url_vars=["OLLAMA_HOST"],
)


@hookimpl
def egg_register_agents(register: RegisterAgent) -> None:
    register(PROFILE)
