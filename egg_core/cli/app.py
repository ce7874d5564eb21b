"""The full ``egg`` command line: parse, dispatch, and turn user errors into one line.

Every error a user can cause is an :class:`~egg_core.errors.EggError`; it is printed as one line
on stderr and becomes the exit code. Anything else is a bug: it is reported in one line too, with
a pointer to ``--debug`` (or ``EGG_DEBUG=1``), which shows the traceback. Both go through
:func:`egg_core.sanitize.visible` here, the one place the CLI prints errors: a message quotes
paths and names a sandbox may have chosen.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Mapping, Sequence

from egg_core import __version__
from egg_core.cli.builtin import builtin_commands
from egg_core.cli.context import Context
from egg_core.commands import Command, CommandRegistry
from egg_core.errors import EggError, UsageError
from egg_core.sanitize import visible


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors stay one line."""

    usage_exit_code = 2
    #: the subcommand being parsed, when this is the top-level parser: argparse reports a
    #: subcommand's unknown options from here, and the hint should name that subcommand's help
    selected: _Parser | None = None

    def error(self, message: str) -> None:  # type: ignore[override]
        target = self.selected or self
        raise UsageError(
            f"{message} (see '{target.prog} --help')", exit_code=target.usage_exit_code
        )


def build_parser(registry: CommandRegistry, selected: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``selected``'s arguments are configured when it is known (each command's
    configure may import its module, which ``egg exec`` should not pay for every other command)."""
    parser = _Parser(
        prog="egg",
        description="Run AI coding agents inside an OS sandbox, in sessions you can reattach to.",
    )
    parser.add_argument("--version", action="version", version=f"egg {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in registry:
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        child.usage_exit_code = command.usage_exit_code
        if command.configure is not None and selected in (None, command.name):
            command.configure(child)
        if command.name == selected:
            parser.selected = child
        child.set_defaults(_command=command)
    return parser


def _wants_plugin_commands(argv: Sequence[str], registry: CommandRegistry) -> bool:
    """Plugin commands are only loaded for help or for a name egg does not define itself."""
    words = [a for a in argv if not a.startswith("-")]
    if not words:
        return "-h" in argv or "--help" in argv or not argv
    return words[0] not in registry


def run_cli(args_list: list[str], env: Mapping[str, str]) -> int:
    debug = "--debug" in args_list or env.get("EGG_DEBUG") == "1"
    ctx = Context(env, debug=debug, argv=args_list)
    _never_fail_to_print()
    try:
        registry = CommandRegistry()
        for command in builtin_commands():
            registry.register(command)
        if _check_egg_home(env, registry, args_list):
            _recover_crashed_sessions(env)
        if _wants_plugin_commands(args_list, registry):
            _add_plugin_commands(ctx, registry)
        words = [a for a in args_list if not a.startswith("-")]
        selected = words[0] if words and words[0] in registry else None
        parser = build_parser(registry, selected)
        if not args_list:
            parser.print_help()
            return 0
        ns = parser.parse_args(args_list)
        chosen: Command | None = getattr(ns, "_command", None)
        if chosen is None:
            parser.print_help()
            return 0
        return int(chosen.resolve_run()(ns, ctx) or 0)
    except EggError as exc:
        if debug:
            raise
        print(f"egg: error: {visible(exc.message)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 141
    except Exception as exc:
        if debug:
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(
            f"egg: internal error: {type(exc).__name__}: {visible(first)} "
            "(rerun with --debug for details)",
            file=sys.stderr,
        )
        return 70


def _only_help(args: Sequence[str]) -> bool:
    """``egg``, ``egg --help``, ``egg --version``, ``egg COMMAND --help``: nothing of
    ``$EGG_HOME`` is needed to answer them."""
    return (
        not args
        or args[0] in ("-h", "--help", "--version")
        or (len(args) == 2 and args[1] in ("-h", "--help"))
    )


def _check_egg_home(env: Mapping[str, str], registry: CommandRegistry, args: Sequence[str]) -> bool:
    """The one check of ``$EGG_HOME``, before any command reads or writes there (see
    :func:`egg_core.paths.egg_home_problem`), for every command that keeps anything there. Its
    exit code is the command's own for errors of egg's (125 for ``egg exec``, which keeps the
    others for the command it runs). True when it is usable; False when the command runs
    without it — help, ``egg doctor`` — and nothing is recovered there (it may be another
    user's)."""
    from egg_core.paths import egg_home, egg_home_problem

    problem = egg_home_problem(egg_home(env))
    if problem is None:
        return True
    words = [a for a in args if not a.startswith("-")]
    command = registry.get(words[0]) if words else None
    if _only_help(args) or (command is not None and not command.uses_egg_home):
        return False
    raise EggError(problem, exit_code=command.usage_exit_code if command else 2)


def _never_fail_to_print() -> None:
    """A character the terminal's encoding cannot hold (a readable name on a terminal in
    Latin-1) is written as a backslash escape, not an error: what egg prints has been through
    :func:`egg_core.sanitize.visible`, which keeps readable text as it is."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


class _ScopedRegistry:
    """The registry as one plugin sees it, so a clash names the plugin that caused it."""

    def __init__(self, registry: CommandRegistry, owner: str) -> None:
        self._registry = registry
        self._owner = owner

    def register(self, command: Command) -> None:
        self._registry.register(command, owner=self._owner)


def _add_plugin_commands(ctx: Context, registry: CommandRegistry) -> None:
    """Plugin commands; one plugin failing here is a warning, never a broken ``egg``."""
    from egg_core.registry import reject_wrapper

    for impl in ctx.pm.hook.egg_cli_commands.get_hookimpls():
        try:
            reject_wrapper(impl, "egg_cli_commands")
            scoped = _ScopedRegistry(registry, impl.plugin_name)
            offered = {"register": scoped.register, "cli": scoped}
            impl.function(**{name: offered[name] for name in impl.argnames if name in offered})
        except Exception as exc:
            message = exc.message if isinstance(exc, EggError) else f"{type(exc).__name__}: {exc}"
            print(f"egg: warning: plugin {impl.plugin_name!r}: {visible(message)}", file=sys.stderr)


def _recover_crashed_sessions(env: Mapping[str, str]) -> None:
    """Any egg command restores the settings of sessions whose daemon died, and of killed
    ``egg exec`` runs. What it did goes to the guard log (``egg doctor`` shows it), not into
    the output of whatever command the user ran (``egg ls`` lists, it does not report)."""
    from egg_core import rundirs
    from egg_core.paths import egg_home

    try:
        live = any((egg_home(env) / "sessions" / ".live").iterdir())
    except OSError:
        live = False
    if not live and not rundirs.orphans(str(egg_home(env))):
        return
    from egg_core import guardlog
    from egg_core.session.recovery import recover_crashed_sessions

    guardlog.record(egg_home(env), recover_crashed_sessions(egg_home(env)))
