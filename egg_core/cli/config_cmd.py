"""``egg config show | validate | init``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from egg_core.cli.context import Context
from egg_core.errors import ConfigError
from egg_core.sanitize import visible

STARTER = """\
# egg.yaml: what an agent working in this directory may touch.
#
# `egg explain AGENT` shows the effective policy: this file, its base chain, and every hole the
# agent's plugin adds, each with its reason. `egg config validate` checks this file.

# The parent config. Omitted: the built-in default (read-only /, writable ./ and cache dirs,
# credentials and shell histories denied, no network). `none` starts from an empty slate, a name
# reads $EGG_HOME/bases/<name>.yaml, and ./x.yaml is relative to this file.
# base: none

# Filesystem rules, mode:path. Modes: rw, ro, deny, deny-write, cache (a sandbox-only cache at
# that path, never read by the host). ~ is your home directory.
fs:
  - rw:./
  # - deny:~/.config/gh

# Network: none, '*' (unrestricted), or a list of allowed domains ('*.example.com' matches
# subdomains). The agent's own API domains are added for it; `agent_domains: none` stops that.
network: none
# network:
#   domains: [github.com, '*.pypi.org']
#   local_ports: [11434]
#   mode: enforce   # or observe: allow everything, log what enforce would deny

# Host environment variables passed in ('*' for all). The agent's key variables are added.
env:
  - HOME
  - PATH
  - TERM
  - LANG
  - USER

# resources:          # cpu, memory, max_pids: the whole sandbox; max_fds: each process
#   cpu: 30m          # CPU time of every process together (cpu_per_process: each its own)
#   memory: 4GB
#   max_fds: 4096
#   max_pids: 512
"""


def _show(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.config.files import discover_config
    from egg_core.config.model import default_config
    from egg_core.config.parsing import dump_json, dump_yaml, load_config_file

    resolved = discover_config(Path.cwd(), ns.config, ctx.environ)
    if ns.resolved or resolved.path is None:
        config = resolved.config
    else:
        config = load_config_file(resolved.path)
    if resolved.path is None:
        config = default_config()
    if ns.json:
        print(dump_json(config))
    else:  # YAML keeps bidi controls raw (allow_unicode): shown escaped, like any text here
        print(visible(dump_yaml(config), multiline=True), end="")
    return 0


def _validate(ns: argparse.Namespace, ctx: Context) -> int:
    """The file and its base chain, and every name in ``tools:`` defined by a tool that loads:
    the check a launch makes (:meth:`egg_core.tools.model.ToolSet.enabled`), so that what validates
    also starts."""
    from egg_core.config.files import discover_config

    resolved = discover_config(Path.cwd(), ns.path, ctx.environ)
    if resolved.config.tools:
        from egg_core.paths import egg_home
        from egg_core.tools.model import collect

        found = collect(ctx.pm, resolved.config, egg_home(ctx.environ))
        _, problems = found.enabled(list(resolved.config.tools))
        if problems:
            where = resolved.path or "the built-in default"
            raise ConfigError(f"{where}: tools: {problems[0]}")
    print("ok")
    return 0


def _init(ns: argparse.Namespace, ctx: Context) -> int:
    from egg_core.config.parsing import load_config_string

    target = Path(ns.path)
    load_config_string(STARTER, "starter")  # the starter itself must always validate
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError as exc:
        raise ConfigError(f"{target}: already exists; not overwriting it") from exc
    except OSError as exc:
        raise ConfigError(f"{target}: cannot create: {exc.strerror}") from exc
    with os.fdopen(fd, "w") as handle:
        handle.write(STARTER)
    from egg_core import windows
    from egg_core.paths import egg_home

    windows.trust(str(target), str(egg_home(ctx.environ)))  # written by egg, for the user
    print(visible(f"wrote {target}"))
    return 0


def _trust(ns: argparse.Namespace, ctx: Context) -> int:
    """The user has read a config that a sandbox could have written, and accepts it as it is."""
    from egg_core import windows
    from egg_core.config.files import discover_config
    from egg_core.paths import egg_home

    target = Path(ns.path)
    if not target.is_file():
        raise ConfigError(f"{target}: no such config file")
    digest = windows.trust(str(target), str(egg_home(ctx.environ)))
    discover_config(Path.cwd(), str(target), ctx.environ)  # it must also be a valid config
    said = f"trusted {target} as it is now (sha256 {digest[:12]}…); a later change needs it again"
    print(visible(said))
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(
        dest="config_command", metavar="ACTION", required=True, parser_class=type(p)
    )
    show = sub.add_parser("show", help="print the config egg would use")
    show.add_argument("--config", metavar="PATH", help="use this file instead of discovering one")
    show.add_argument("--resolved", action="store_true", help="merge the whole base chain")
    show.add_argument("--json", action="store_true", help="print JSON (network always a mapping)")
    show.set_defaults(_action=_show)
    validate = sub.add_parser("validate", help="check a config and its base chain")
    validate.add_argument("path", nargs="?", metavar="PATH", help="default: the discovered config")
    validate.set_defaults(_action=_validate)
    init = sub.add_parser("init", help="write a commented starter egg.yaml")
    init.add_argument(
        "path", nargs="?", default="egg.yaml", metavar="PATH", help="where (default: ./egg.yaml)"
    )
    init.set_defaults(_action=_init)
    trust = sub.add_parser(
        "trust",
        help="accept a config a sandbox could have written, after reading it",
        description="egg refuses a config file that changed while a sandbox could write it "
        "(it may have been planted). Read the file, then trust it as it is now.",
    )
    trust.add_argument("path", metavar="PATH", help="the config file you have read")
    trust.set_defaults(_action=_trust)


def run(ns: argparse.Namespace, ctx: Context) -> int:
    return int(ns._action(ns, ctx))
