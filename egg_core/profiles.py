"""What an agent needs from the host, declared as data by the agent's plugin.

The sandbox is the user's egg.yaml *plus* the holes an agent needs to run at all (its API domains,
its config directory, its key variable). A profile lists those holes, each with the reason a
reviewer reads in ``egg explain``: an addition nobody can see is an addition nobody can review.
Profiles are plain frozen data so policy resolution stays a pure function; the only behaviour is
:meth:`AgentProfile.build_argv`, which an agent with an unusual command line may override by
passing ``argv_builder``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from egg_core.converters import to_tuple


@attrs.frozen
class Grant:
    """One hole an agent needs: a domain, a variable name, a directory, a port — and why."""

    value: str
    reason: str


@attrs.frozen
class EnvDefault:
    """A variable the agent should see set to ``value`` unless the host or config sets it."""

    name: str
    value: str
    reason: str


@attrs.frozen
class PlatformGrant:
    """A variable name only needed on one OS (``sys.platform`` value, e.g. ``darwin``)."""

    platform: str
    name: str
    reason: str


@attrs.frozen
class PortGrant:
    """A host loopback port the agent talks to (a local model server, for instance)."""

    port: int
    reason: str


@attrs.frozen
class Relocation:
    """A variable that moves part of the agent's home state: with ``variable`` set on the host,
    the home-relative path ``prefix`` (and everything under it) lives at ``$variable/inside``
    instead, and that is what the sandbox may write (``CODEX_HOME`` moves ``.codex``)."""

    prefix: str
    variable: str
    inside: str = ""


@attrs.frozen(kw_only=True)
class ArgvRequest:
    """What the caller wants from the agent's command line."""

    args: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    skip_permissions: bool = False
    resume_id: str | None = None
    session_id: str | None = None


def _key_table(table: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    return {str(file): tuple(keys) for file, keys in dict(table).items()}


ArgvBuilder = Callable[["AgentProfile", ArgvRequest], list[str]]


@attrs.frozen(kw_only=True)
class AgentProfile:
    """Everything egg must know to run one agent, and nothing it must guess.

    Paths in ``write_dirs``, ``write_prefix_dirs``, ``settings_files`` and ``session_dir`` are
    relative to ``$HOME``; one that starts with ``$VARIABLE/`` is relative to the directory
    that variable names, and applies only when it is set (``$OPENCODE_CONFIG_DIR/opencode.json``).
    A *prefix* dir also covers its siblings that share the prefix: ``.claude`` makes
    ``~/.claude/`` and ``~/.claude.json`` writable.
    """

    name: str
    description: str
    binary: str | None = None
    domains: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    env_vars: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    set_env: tuple[EnvDefault, ...] = attrs.field(default=(), converter=to_tuple)
    platform_env: tuple[PlatformGrant, ...] = attrs.field(default=(), converter=to_tuple)
    write_dirs: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    write_prefix_dirs: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    settings_files: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    #: files directly in $HOME that the agent replaces atomically (a temporary file beside it,
    #: renamed over it), such as ``~/.claude.json``: the home stays read-only, so the sandbox
    #: gets a copy in a per-run layer where it can do that, and egg writes the result back after
    #: the run (see egg_core.homefiles). Only these names travel back; nothing else created in
    #: the top of $HOME does.
    home_files: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    #: hook-bearing files in the *workspace* (relative to it), snapshotted like settings_files:
    #: the workspace is writable, and these run outside the sandbox later
    project_settings_files: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    #: directories (relative to $HOME) the agent fills with code it downloads and that code on
    #: the host may load: the sandbox gets its own copy there (a ``cache:`` rule), never the
    #: host's, so nothing it installs runs outside later
    cache_dirs: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    #: variables that move the agent's state elsewhere (see :class:`Relocation`); egg then
    #: writes, snapshots and guards the place they name instead of the home path
    relocations: tuple[Relocation, ...] = attrs.field(default=(), converter=to_tuple)
    #: per settings file (the relative path as in ``settings_files`` or
    #: ``project_settings_files``, JSON or TOML): the dotted key paths that make the agent run
    #: a command on the host (hooks, MCP servers, notify programs), or that loosen its own
    #: permission system there — what it may run without asking, which account and endpoint
    #: get the user's prompts, whose instructions it follows (``*`` matches any key at its
    #: level; ``*!cwd`` any but the run's working directory, so an answer such as trust is kept
    #: for the workspace and put back for every other path, and ``=[values]`` after it limits
    #: what the workspace's may become). After a run only these are put back; the agent's other
    #: changes stay. A dotenv file's keys are its variables. A settings file not named here is
    #: restored whole. See egg_core.settings_keys.
    command_keys: dict[str, tuple[str, ...]] = attrs.field(factory=dict, converter=_key_table)
    #: directories (relative to $HOME) the agent loads code, commands, skills, subagents,
    #: command rules or policies from by itself — plugins, extensions, ``commands/``,
    #: ``skills/``, ``rules/``: read-only in every sandbox, and one that cannot be held is
    #: moved to the quarantine if the sandbox makes it (see egg_core.settings_code)
    code_dirs: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    #: the same in the workspace (relative to it)
    project_code_dirs: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    #: files (relative to $HOME) put back byte for byte, mode kept, after every run, and never
    #: read for the paths they name (as settings are): the agent's credentials — a sign-in the
    #: sandbox swapped sends the user's later prompts to another account, whose managed
    #: settings the agent then applies — and the instructions every later session of it
    #: follows in every project. A change made inside (a token refresh too) cannot be told from
    #: a swap offline, so none is kept; the grant's reason is said when one is put back.
    restored_files: tuple[Grant, ...] = attrs.field(default=(), converter=to_tuple)
    local_ports: tuple[PortGrant, ...] = attrs.field(default=(), converter=to_tuple)
    provider_url_vars: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    #: set only when the user asks to skip the agent's permission prompts (an agent whose
    #: interactive mode has no flag for it, like opencode's TUI, takes an environment variable)
    skip_permissions_env: tuple[EnvDefault, ...] = attrs.field(default=(), converter=to_tuple)
    session_dir: str | None = None
    #: why egg keeps no history of this agent's conversations (its format could not be pinned
    #: down, or it cannot be copied safely); None when its plugin captures them
    history_declined: str | None = None
    resume_flag: str | None = None
    session_id_flag: str | None = None
    #: the exit code with which the agent asks whoever started it to start it again (Gemini's
    #: RELAUNCH_EXIT_CODE after "Trust folder" or a setting that needs a restart: its own
    #: launcher does that only outside a sandbox, and the sandbox's launcher is egg). An egg
    #: session then starts the same command again in a fresh sandbox of the same session, its
    #: conversation resumed once the agent has written it under egg's id (see
    #: egg_core.session.startup); None: the code is the agent's exit code like any other
    relaunch_exit_code: int | None = None
    skip_permissions_flag: str | None = None
    argv_builder: ArgvBuilder | None = attrs.field(default=None, eq=False)

    def build_argv(
        self,
        args: Sequence[str] = (),
        *,
        skip_permissions: bool = False,
        resume_id: str | None = None,
        session_id: str | None = None,
    ) -> list[str]:
        """The agent's command line: binary, then egg-controlled flags, then the user's args."""
        request = ArgvRequest(
            args=tuple(args),
            skip_permissions=skip_permissions,
            resume_id=resume_id,
            session_id=session_id,
        )
        if self.argv_builder is not None:
            return list(self.argv_builder(self, request))
        return default_argv(self, request)


def default_argv(profile: AgentProfile, request: ArgvRequest) -> list[str]:
    """``binary [skip-flag] [resume-flag ID | session-id-flag ID] args…``."""
    if not profile.binary:
        return list(request.args)
    argv = [profile.binary]
    if request.skip_permissions and profile.skip_permissions_flag:
        argv.append(profile.skip_permissions_flag)
    if request.resume_id and profile.resume_flag:
        argv += [profile.resume_flag, request.resume_id]
    elif request.session_id and profile.session_id_flag:
        argv += [profile.session_id_flag, request.session_id]
    argv += request.args
    return argv


def unknown_agent_profile(name: str) -> AgentProfile:
    """The restrictive profile for an agent no plugin knows: run ``name``, drill nothing."""
    return AgentProfile(
        name=name,
        description=f"unknown agent {name!r}: no plugin registers it, so no holes are drilled",
        binary=name,
    )
