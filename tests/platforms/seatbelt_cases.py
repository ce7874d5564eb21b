"""Representative policies for the Seatbelt profile tests, independent of the machine running them.

Each case is resolved the way ``egg run`` resolves it (the built-in default config, an egg.yaml
text, an agent profile) with a fixed macOS-looking home and project. The few facts
:func:`~egg_core.resolution.resolve_policy` reads from the host (container-engine sockets, ssh-agent
sockets found by glob) and the platform-dependent default cache dir are filtered out here, so a
golden profile is the same on every machine; one case adds a fixed ssh-agent socket back in.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import attrs

from egg_core.config.model import default_config, merge_configs
from egg_core.config.parsing import load_config_string
from egg_core.git import guard as gitguard
from egg_core.policy import EffectivePolicy, FsEntry
from egg_core.protections import protected_paths
from egg_core.resolution import resolve_policy
from egg_plugins.platforms.seatbelt.profile import ProfileRequest, build_profile

HOME = Path("/Users/dev")
CWD = HOME / "proj"
EGG_HOME = HOME / ".egg"
SESSION = EGG_HOME / "sessions" / "20260101-abcdef"
LAUNCHER = ("/Users/dev/.local/bin/egg", "/Users/dev/.local/share/egg/venv")
PROXY_PORT = 49152
SSH_ROUTE = EGG_HOME / "cache" / "ssh-route" / "0123456789abcdef0123"
SSH_AGENT_SOCKET = EGG_HOME / "run" / "20260101-abcdef" / "agent.sock"
SSH_AGENT = "/private/tmp/com.apple.launchd.AbCdEf/Listeners"

#: paths the fake probe reports as files (everything else is a directory)
FILES = frozenset(
    {
        f"{HOME}/.netrc",
        *(
            f"{HOME}/{name}"
            for name in (
                ".bash_history",
                ".zsh_history",
                ".python_history",
                ".node_repl_history",
                ".psql_history",
                ".mysql_history",
                ".sqlite_history",
                ".local/share/fish/fish_history",
            )
        ),
        f"{CWD}/egg.yaml",
        f"{CWD}/.env",
        LAUNCHER[0],
        SSH_AGENT,
        f"{SESSION}/tool.sock",
    }
)

_HOST_DEPENDENT = ("egg: container-engine socket", "egg: live ssh-agent socket")


def fake_probe(path: str) -> str:
    return "file" if path in FILES else "dir"


@attrs.frozen
class Case:
    name: str
    agent: str
    yaml: str = ""
    extra_fs: tuple[FsEntry, ...] = ()
    environ: tuple[tuple[str, str], ...] = ()
    tool_socket: bool = True
    shared_dir: bool = True
    #: the ssh route a filtered launch gets, and the filtered agent (SSH_AUTH_SOCK in env:)
    ssh_route: bool = False
    ssh_agent: bool = False


CASES = (
    Case("shell-default", "shell"),
    Case("claude-filtered", "claude", "network: [github.com]\nresources: {max_fds: 1024}\n"),
    Case(
        "claude-ssh-agent",
        "claude",
        "network: [github.com, 'github.com:22']\nenv: [SSH_AUTH_SOCK]\n",
        ssh_route=True,
        ssh_agent=True,
    ),
    Case("ollama-local", "ollama"),
    Case("codex-full-network", "codex", 'network: "*"\n', tool_socket=False, shared_dir=False),
    Case(
        "observe-local-port",
        "shell",
        "network: {local_ports: [8080], mode: observe}\n",
    ),
    Case(
        "custom-rules",
        "claude",
        "fs:\n"
        "  - ro:./vendor\n"
        "  - deny:./.env\n"
        "  - deny-write:./.git/hooks\n"
        "  - rw:/tmp/build cache\n"
        '  - "rw:~/Projects/Ünïcode \\"quoted\\" (1)"\n'
        "  - deny:~/secrets\n"
        "  - ro:~/secrets/public\n"
        "network: {domains: [api.example.com], local_ports: [4000]}\n",
        extra_fs=(FsEntry("deny", SSH_AGENT, "egg: live ssh-agent socket (~/.ssh is denied)"),),
    ),
)


def case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def policy_for(case: Case) -> EffectivePolicy:
    profile = importlib.import_module(f"egg_plugins.agents.{case.agent}").PROFILE
    config = merge_configs(default_config(), load_config_string(case.yaml, "egg.yaml"), HOME)
    protected = protected_paths([CWD / "egg.yaml"], EGG_HOME, LAUNCHER, CWD)
    # what the git guard adds for a repository in the workspace (paths missing here: seeded)
    dotgit = str(CWD / ".git")
    layout = gitguard.Layout(dotgits=(dotgit,), gitdirs=(dotgit,), commons=(dotgit,))
    protected += gitguard.protections(layout, lambda path: True)
    policy = resolve_policy(
        config,
        profile,
        home=HOME,
        cwd=CWD,
        environ=dict(case.environ),
        protected=protected,
        platform_name="darwin",
    )
    fs = [e for e in policy.fs if _machine_independent(e)]
    return attrs.evolve(policy, fs=(*fs, *case.extra_fs))


def _machine_independent(entry: FsEntry) -> bool:
    if entry.source.startswith(_HOST_DEPENDENT):
        return False
    return entry.path != f"{HOME}/Library/Caches"  # in the default only when run on macOS


def request_for(case: Case, policy: EffectivePolicy) -> ProfileRequest:
    from egg_plugins.platforms.seatbelt.profile import uses_proxy

    return ProfileRequest(
        proxy_port=PROXY_PORT if uses_proxy(policy) else None,
        tool_socket=str(SESSION / "tools" / "tool.sock") if case.tool_socket else None,
        shared_dir=str(SESSION / "shared") if case.shared_dir else None,
        ssh_route=str(SSH_ROUTE) if case.ssh_route else None,
        ssh_agent=str(SSH_AGENT_SOCKET) if case.ssh_agent else None,
        probe=fake_probe,
    )


def profile_for(case: Case) -> str:
    policy = policy_for(case)
    return build_profile(policy, request_for(case, policy))
