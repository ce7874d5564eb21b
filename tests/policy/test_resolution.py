"""Policy resolution: every automatic addition is attributed (drilled, derived, suppressed)."""

from __future__ import annotations

import pytest

from egg_core.policy import NEED_FILTERED, NEED_FULL, NEED_LOCAL, NEED_NONE, requires_sandbox
from egg_core.profiles import unknown_agent_profile
from tests.policy.conftest import CWD, HOME, config, profile, resolve

AGENTS = ["claude", "codex", "gemini", "opencode", "cursor", "ollama"]


def test_shell_drills_nothing():
    policy = resolve("shell")
    assert policy.drilled == () and policy.derived == () and policy.suppressed == ()
    assert policy.network_need == NEED_NONE


@pytest.mark.parametrize("agent", AGENTS)
def test_every_profile_hole_is_drilled_with_its_reason(agent, holes):
    prof = profile(agent)
    policy = resolve(agent)
    drilled = {(h.kind, h.value): h for h in policy.drilled}
    for grant in prof.domains:
        assert drilled[("domain", grant.value)].reason == grant.reason
    for grant in (*prof.write_dirs, *prof.write_prefix_dirs):
        if grant.value.startswith("$"):
            continue  # anchored at a variable this environment does not set
        assert drilled[("write_dir", str(HOME / grant.value))].reason == grant.reason
    for grant in prof.env_vars:
        assert drilled[("env", grant.value)].reason == grant.reason
    for default in prof.set_env:
        assert drilled[("env", f"{default.name}={default.value}")].reason == default.reason
    assert all(h.agent == agent for h in policy.drilled)


def test_claude_holes(holes):
    policy = resolve("claude")
    assert {("domain", "api.anthropic.com"), ("domain", "claude.ai")} <= holes(policy)
    assert ("write_dir", "/home/dev/.claude") in holes(policy)
    assert ("env", "ANTHROPIC_API_KEY") in holes(policy)
    prefix = [e for e in policy.fs if e.mode == "rw-prefix"]
    assert [(e.path, e.source) for e in prefix] == [("/home/dev/.claude", "agent:claude")]
    assert policy.network_need == NEED_FILTERED


def test_agent_domains_none_suppresses_vendor_domains(holes):
    policy = resolve("claude", "network:\n  domains: [github.com]\n  agent_domains: none\n")
    assert policy.domains == ("github.com",)
    suppressed = {h.value: h for h in policy.suppressed}
    assert set(suppressed) == {"api.anthropic.com", "claude.ai", "platform.claude.com"}
    assert all("agent_domains: none" in h.reason for h in suppressed.values())
    assert not any(kind == "domain" for kind, _ in holes(policy))


def test_agent_domains_none_with_no_domains_means_no_network():
    policy = resolve("codex", "network:\n  agent_domains: none\n")
    assert policy.network_need == NEED_NONE and policy.domains == ()


@pytest.mark.parametrize(
    ("agent", "variable", "vendor"),
    [
        ("claude", "ANTHROPIC_BASE_URL", "api.anthropic.com"),
        ("gemini", "GOOGLE_GEMINI_BASE_URL", "generativelanguage.googleapis.com"),
    ],
)
def test_https_provider_url_replaces_vendor_domains_with_its_exact_host(agent, variable, vendor):
    policy = resolve(agent, environ={variable: "https://llm-gw.corp.example:8443/v1"})
    assert policy.domains == ("llm-gw.corp.example",)
    derived = policy.derived[0]
    assert (derived.kind, derived.value, derived.agent) == ("domain", "llm-gw.corp.example", agent)
    assert variable in derived.reason
    assert vendor in {h.value for h in policy.suppressed}
    assert all("replaced by the provider URL" in h.reason for h in policy.suppressed)


@pytest.mark.parametrize(
    ("agent", "variable"),
    [("claude", "ANTHROPIC_BASE_URL"), ("gemini", "GOOGLE_GEMINI_BASE_URL")],
)
@pytest.mark.parametrize(
    "url", ["http://localhost:4000", "http://127.0.0.1:4000/v1", "http://[::1]:4000"]
)
def test_loopback_provider_url_becomes_a_forwarded_local_port(agent, variable, url):
    policy = resolve(agent, environ={variable: url})
    assert policy.local_ports == (4000,)
    assert policy.domains == ()
    assert policy.network_need == NEED_LOCAL
    assert [(h.kind, h.value) for h in policy.derived] == [("local_port", "4000")]


def test_openai_base_url_does_not_route_codex():
    """Codex 0.171 ignores the variable (its endpoint is in config.toml): egg keeps its domains
    rather than replace them with a host Codex never talks to."""
    policy = resolve("codex", environ={"OPENAI_BASE_URL": "https://llm-gw.corp.example/v1"})
    assert "api.openai.com" in policy.domains
    assert "llm-gw.corp.example" not in policy.domains


def test_ollama_port_is_derived():
    policy = resolve("ollama")
    assert policy.local_ports == (11434,)
    assert policy.network_need == NEED_LOCAL
    assert [(h.kind, h.value, h.agent) for h in policy.derived] == [
        ("local_port", "11434", "ollama")
    ]
    assert "11434" in policy.derived[0].reason


def test_ollama_host_overrides_the_default_port():
    policy = resolve("ollama", environ={"OLLAMA_HOST": "127.0.0.1:11500"})
    assert policy.local_ports == (11500,)
    assert ("local_port", "11434") in {(h.kind, h.value) for h in policy.suppressed}


def test_config_loopback_domain_literals_become_local_ports():
    policy = resolve("shell", "network: ['localhost:8080', '127.0.0.1:9090', github.com]")
    assert policy.local_ports == (8080, 9090)
    assert policy.domains == ("github.com",)


def test_config_local_ports_are_kept():
    policy = resolve("shell", "network:\n  local_ports: [5432]\n")
    assert policy.local_ports == (5432,) and policy.network_need == NEED_LOCAL


def test_star_network_is_full_and_drills_no_domains(holes):
    policy = resolve("claude", "network: '*'")
    assert policy.network_need == NEED_FULL and policy.domains == ("*",)
    assert not any(kind == "domain" for kind, _ in holes(policy))


def test_user_deny_wins_over_an_agent_write_dir():
    policy = resolve("claude", "fs: ['deny:~/.claude']")
    assert ("rw-prefix", "/home/dev/.claude") not in {(e.mode, e.path) for e in policy.fs}
    suppressed = [h for h in policy.suppressed if h.kind == "write_dir"]
    assert suppressed and "denied by deny:/home/dev/.claude" in suppressed[0].reason


def test_paths_are_absolute_and_relative_to_cwd():
    policy = resolve("shell", "fs: ['ro:./src', 'rw:~/out', 'deny:../secret']")
    paths = {(e.mode, e.path) for e in policy.fs}
    assert ("ro", str(CWD / "src")) in paths
    assert ("rw", "/home/dev/out") in paths
    assert ("deny", "/home/dev/secret") in paths


def test_nested_rules_come_after_their_parents():
    policy = resolve(
        "shell", "base: none\nfs: ['ro:/a/b/c', 'rw:/a', 'deny:/a/b', 'deny-write:/a']"
    )
    order = [(e.mode, e.path) for e in policy.fs]
    assert order.index(("rw", "/a")) < order.index(("deny-write", "/a"))
    assert order.index(("deny-write", "/a")) < order.index(("deny", "/a/b"))
    assert order.index(("deny", "/a/b")) < order.index(("ro", "/a/b/c"))


def test_resources_are_parsed():
    policy = resolve("shell", "resources: {cpu: 2m, memory: 1GB, max_fds: 64, max_pids: 32}")
    assert (policy.cpu_seconds, policy.memory_bytes, policy.max_fds, policy.max_pids) == (
        120,
        1 << 30,
        64,
        32,
    )


def test_the_sandboxs_cpu_budget_and_a_per_process_limit_are_different_capabilities():
    """A platform that can only limit each process is not taken to hold the sandbox's budget."""
    from egg_core import capabilities as caps

    budget = resolve("shell", "resources: {cpu: 2m}")
    per_process = resolve("shell", "resources: {cpu_per_process: 30s}")
    assert budget.required_capabilities()[caps.LIMIT_CPU] == "resources.cpu"
    assert caps.LIMIT_CPU_PER_PROCESS not in budget.required_capabilities()
    assert per_process.cpu_per_process_seconds == 30 and per_process.cpu_seconds is None
    assert caps.LIMIT_CPU not in per_process.required_capabilities()
    assert (
        per_process.required_capabilities()[caps.LIMIT_CPU_PER_PROCESS]
        == "resources.cpu_per_process"
    )


def test_skip_permissions_from_config_or_flag():
    assert resolve("claude", "dangerously_skip_permissions: true").skip_permissions
    assert resolve("claude", skip_permissions=True).skip_permissions
    assert not resolve("claude").skip_permissions


def test_skip_permissions_env_only_when_asked():
    names = {d.name for d in resolve("opencode", skip_permissions=True).set_env}
    assert "OPENCODE_PERMISSION" in names
    assert "OPENCODE_PERMISSION" not in {d.name for d in resolve("opencode").set_env}


def test_unknown_agent_gets_an_empty_profile():
    from egg_core.resolution import resolve_policy

    policy = resolve_policy(
        config(), unknown_agent_profile("mystery"), home=HOME, cwd=CWD, environ={}
    )
    assert policy.agent == "mystery" and policy.drilled == () and policy.network_need == NEED_NONE


def test_platform_env_only_on_its_platform():
    darwin = resolve("claude", platform_name="darwin")
    linux = resolve("claude", platform_name="linux")
    assert "XPC_SERVICE_NAME" in darwin.env_names
    assert "XPC_SERVICE_NAME" not in linux.env_names


def test_requires_sandbox_only_when_every_boundary_is_open():
    assert requires_sandbox(config())
    assert requires_sandbox(config("base: none\nnetwork: '*'", on_default=False))
    wide_open = config("base: none\nnetwork: '*'\nenv: '*'", on_default=False)
    assert not requires_sandbox(wide_open)
    assert requires_sandbox(
        config("base: none\nnetwork: '*'\nenv: '*'\nfs: ['rw:./']", on_default=False)
    )
    assert requires_sandbox(
        config("base: none\nnetwork: '*'\nenv: '*'\nresources: {cpu: 5m}", on_default=False)
    )


def test_a_wildcard_network_alone_keeps_filesystem_syscall_and_resource_isolation():
    policy = resolve("shell", "network: '*'\nresources: {max_fds: 100}")
    needed = policy.required_capabilities()
    assert policy.requires_sandbox
    assert {"fs.deny-read", "fs.restrict-write", "syscall.filter", "limit.fds", "net.full"} <= set(
        needed
    )


def test_unsandboxed_config_requires_only_full_network():
    from egg_core.config.model import unsandboxed_config
    from egg_core.resolution import resolve_policy

    policy = resolve_policy(unsandboxed_config(), profile("shell"), home=HOME, cwd=CWD, environ={})
    assert not policy.requires_sandbox
    assert set(policy.required_capabilities()) == {"net.full"}


@pytest.mark.parametrize(
    ("agent", "variable", "moved", "home_dir"),
    [
        ("codex", "CODEX_HOME", "/srv/codex-state", "/home/dev/.codex"),
        ("claude", "CLAUDE_CONFIG_DIR", "/srv/claude-state", "/home/dev/.claude"),
    ],
)
def test_a_relocating_variable_moves_the_writable_state_dir(agent, variable, moved, home_dir):
    """The directory the variable names is the writable one (and the home's is not)."""
    policy = resolve(agent, environ={variable: moved})

    writable = {e.path: e.mode for e in policy.fs if e.source == f"agent:{agent}"}
    assert writable.get(moved) == "rw"
    assert home_dir not in writable
    assert variable in policy.env_names


def test_claude_config_dir_moves_its_state_file_and_settings_too():
    from egg_core.persistence import settings_files

    policy = resolve("claude", environ={"CLAUDE_CONFIG_DIR": "~/alt"})
    files = settings_files(policy, profile("claude"), config(""))

    assert policy.home_files == ("/home/dev/alt/.claude.json",)
    assert "/home/dev/alt/settings.json" in files and "/home/dev/alt/.claude.json" in files
    assert "/home/dev/.claude/settings.json" not in files


def test_opencode_config_dir_is_writable_and_guarded_when_set():
    from egg_core.persistence import settings_files, settings_keys

    policy = resolve("opencode", environ={"OPENCODE_CONFIG_DIR": "/srv/oc"})
    files = settings_files(policy, profile("opencode"), config(""))

    assert ("rw", "/srv/oc") in {(e.mode, e.path) for e in policy.fs}
    assert ("cache", "/srv/oc/node_modules") in {(e.mode, e.path) for e in policy.fs}
    assert "/srv/oc/opencode.json" in files
    assert "plugin" in settings_keys(policy, profile("opencode"))["/srv/oc/opencode.json"]
    unset = resolve("opencode")
    assert not any(e.path.startswith(("$", "/srv/oc")) for e in unset.fs)


def test_resolution_is_pure_given_the_host_facts():
    """What it needs from the host comes in as HostFacts (observe_host gathers them): the same
    arguments give the same policy, whatever exists on this machine."""
    from egg_core.protections import HostFacts

    facts = HostFacts(
        ssh_agent_sockets=["/nonexistent/agent.sock"], control_sockets=["/nonexistent/docker.sock"]
    )
    policy = resolve("shell", "fs: ['deny:~/.ssh']\n", host=facts)
    again = resolve("shell", "fs: ['deny:~/.ssh']\n", host=facts)

    denied = {e.path for e in policy.fs if e.mode == "deny"}
    assert {"/nonexistent/agent.sock", "/nonexistent/docker.sock"} <= denied
    assert policy == again
