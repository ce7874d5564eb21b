"""The CLI skeleton: version, help, one-line errors, exit codes, --debug."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from egg_core import __version__


def test_version(egg_cli):
    result = egg_cli.run_subprocess("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"egg {__version__}"


def test_help_lists_commands(egg_cli):
    result = egg_cli.run_subprocess("--help")
    assert result.exit_code == 0
    assert "plugins" in result.stdout


def test_no_arguments_prints_help(egg_cli):
    result = egg_cli.run("")
    assert result.exit_code != 0 or "usage" in result.stdout.lower()
    assert "usage" in egg_cli.run_subprocess().stdout.lower()


def test_unknown_command_is_one_line_and_exit_2(egg_cli):
    result = egg_cli.run_subprocess("frobnicate")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("egg: error:") and "frobnicate" in lines[0]


def test_unknown_option_is_one_line(egg_cli):
    result = egg_cli.run_subprocess("plugins", "--frob")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--frob" in result.stderr


def test_internal_errors_are_one_line_without_debug_and_a_traceback_with(egg_cli, plugin_dir):
    (plugin_dir / "crashy_cmd.py").write_text(
        "from egg_core.hookspecs import hookimpl\n"
        "from egg_core.commands import Command\n"
        "def boom(ns, ctx):\n"
        "    raise RuntimeError('kaboom')\n"
        "@hookimpl\n"
        "def egg_cli_commands(cli):\n"
        "    cli.register(Command(name='boom', help='explodes', run=boom))\n"
    )
    from tests.helpers import write_dist

    site = write_dist(plugin_dir.parent / "site", "egg-crashy", "1", {"crashy": "crashy_cmd"}, {})
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(plugin_dir)])}
    result = egg_cli.run_subprocess("boom", env=env)
    assert result.exit_code == 70
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "egg: internal error: RuntimeError: kaboom (rerun with --debug for details)"
    )
    debug = egg_cli.run_subprocess("--debug", "boom", env=env)
    assert "Traceback" in debug.stderr and "kaboom" in debug.stderr


def test_plugin_command_clashing_with_builtin_is_a_warning(egg_cli, plugin_dir):
    (plugin_dir / "clash_cmd.py").write_text(
        "from egg_core.hookspecs import hookimpl\n"
        "from egg_core.commands import Command\n"
        "@hookimpl\n"
        "def egg_cli_commands(register):\n"
        "    register(Command(name='plugins', help='mine', run=lambda ns, ctx: 0))\n"
    )
    from tests.helpers import write_dist

    site = write_dist(plugin_dir.parent / "site", "egg-clash", "1", {"clash": "clash_cmd"}, {})
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(plugin_dir)])}
    result = egg_cli.run_subprocess("--help", env=env)
    assert result.exit_code == 0
    assert "command 'plugins' is registered by two plugins: 'egg' and 'clash'" in result.stderr


def test_the_egg_command_is_installed_and_is_the_checkouts_launcher():
    """The venv's ``egg`` (what the linux tier runs) is launcher/egg as it is now: an install
    copies the file, so a launcher edited since scripts/setup ran would go untested."""
    script = os.path.join(os.path.dirname(sys.executable), "egg")
    out = subprocess.run([script, "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("egg ")
    launcher = Path(__file__).resolve().parent.parent / "launcher" / "egg"
    installed = Path(script).read_text().partition("\n")[2]
    assert installed == launcher.read_text().partition("\n")[2], "run ./scripts/setup again"
