"""README and CI agree: CI runs exactly the README's set-up-and-test command. The tour's bare
``egg`` works as written once its first line has put the venv on PATH (run for real, as root and
as uid 65534: tests/linux/test_readme_tour.py), the package install names this distribution and
its extra, and the tool file it shows loads with every key."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up on a fresh Debian/Ubuntu machine", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def test_readme_shows_exactly_two_setup_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands)


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == _readme_commands()[0]


def test_readme_run_command_runs_egg_in_the_sandbox(tmp_path):
    import os
    import subprocess

    command = _readme_commands()[1]
    assert command == ".venv/bin/egg exec -- echo hello"
    argv = command.split()
    argv[0] = str(ROOT / argv[0])
    result = subprocess.run(
        argv,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "EGG_HOME": str(tmp_path / "egg-home")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello\n"


def _readme_exit_codes() -> set[int]:
    text = (ROOT / "README.md").read_text()
    table = text.split("| code | `egg exec` | `egg run` |", 1)[1].split("\n\n", 1)[0]
    first = [row.split("|")[1].strip() for row in table.splitlines() if row.startswith("|")]
    return {int(cell) for cell in first if cell.isdigit()}


def _exit_codes_in_the_code() -> set[int]:
    """Every code ``egg run`` and ``egg exec`` can exit with by themselves: the error classes',
    the literals the commands and the session client raise with, and what the CLI returns."""
    from egg_core import errors, spawn
    from egg_core.cli import exec_cmd

    classes = [errors.EggError]
    codes = set()
    while classes:
        cls = classes.pop()
        codes.add(cls.exit_code)
        classes.extend(cls.__subclasses__())
    sources = [
        *(ROOT / "egg_core" / "cli").glob("*.py"),
        ROOT / "egg_core" / "session" / "client.py",
        ROOT / "egg_core" / "tools" / "server.py",
    ]
    for source in sources:
        codes.update(int(n) for n in re.findall(r"exit_code=(\d+)", source.read_text()))
    app = (ROOT / "egg_core" / "cli" / "app.py").read_text()
    codes.update(int(n) for n in re.findall(r"^\s+return (\d+)$", app, re.M))
    codes.update({spawn.SANDBOX_FAILED, exec_cmd.SETUP_FAILED})
    return codes


def test_the_readme_exit_code_table_and_the_code_agree():
    assert _readme_exit_codes() == _exit_codes_in_the_code()


def _section(heading: str) -> str:
    text = (ROOT / "README.md").read_text()
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def readme_tour() -> list[str]:
    """The tour's lines as written, each without its comment (comment-only lines dropped)."""
    (block,) = re.findall(r"```sh\n(.*?)```", _section("A short tour"), re.S)
    lines = [re.split(r"\s#\s", line, maxsplit=1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


#: tour commands that need a terminal, a session or an agent CLI: the session tiers run them
#: what serves or needs a terminal until stopped: left aside (egg web is tested in a browser)
INTERACTIVE = ("egg run", "egg attach", "egg replay", "egg mcp", "egg web")


def runnable_tour() -> tuple[list[str], list[str]]:
    """(the lines before the first egg command: what puts egg on PATH, the egg commands of the
    tour that run as written) — an optional ``[...]`` left out, ``a|b|c`` as each in turn, and
    the lines left aside that name a placeholder (ID, NAME) or need a terminal and a session."""
    lines = readme_tour()
    first = next(i for i, line in enumerate(lines) if line.startswith("egg "))
    commands = []
    for line in lines[first:]:
        bare = re.sub(r"\s*\[[^]]*\]\.*", "", line).strip()
        if line.startswith(INTERACTIVE) or re.search(r"\b[A-Z]{2,}\b", line):
            continue
        words = bare.split()
        choices = [w for w in words if "|" in w]
        if not choices:
            commands.append(bare)
            continue
        (word,) = choices
        commands += [
            " ".join(choice if w == word else w for w in words) for choice in word.split("|")
        ]
    return lines[:first], commands


def test_the_tour_first_puts_the_venv_on_path():
    """./scripts/setup installs egg into .venv only: the tour's bare egg needs it on PATH."""
    setup, commands = runnable_tour()
    assert setup == [". .venv/bin/activate"], setup
    assert (ROOT / ".venv" / "bin" / "activate").is_file()
    said = " ".join(_section("Set up on a fresh Debian/Ubuntu machine").split())
    assert "`. .venv/bin/activate`" in said and "PATH" in said
    # what the real run covers, so that a change of the tour cannot leave it with nothing
    assert {"egg explain claude", "egg exec -- make test", "egg config validate"} <= set(commands)


def test_the_package_install_is_this_distribution_with_its_mcp_extra():
    """A package install is shown as one, not in the clone's tour, and names what pyproject
    builds (the installed tier installs exactly it: tests/installed/conftest.py)."""
    import tomllib

    requirement = readme_package_requirement()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert requirement.name == project["name"] == "egg-sandbox"
    assert requirement.extras == {"mcp"} <= set(project["optional-dependencies"])
    assert not any("pip install" in line for line in readme_tour())


def readme_package_requirement():  # type: ignore[no-untyped-def]
    """The requirement of the README's package install (``pip install 'egg-sandbox[mcp]'``)."""
    import shlex

    from packaging.requirements import Requirement

    (block,) = re.findall(r"```sh\n(.*?)```", _section("Install as a package"), re.S)
    words = shlex.split(block.strip())
    assert words[:2] == ["pip", "install"] and len(words) == 3, words
    return Requirement(words[2])


def test_the_readme_tool_file_loads_and_shows_every_key(tmp_path):
    """The tool file the README shows is one egg loads, with every key a tool file and a param
    may have, and its required parameter is the one a call cannot leave out."""
    import yaml

    from egg_plugins.tools import yaml_tools

    text = (ROOT / "README.md").read_text()
    paragraph = text.split("\nHost tools: ", 1)[1].split("\n\n", 2)
    assert paragraph[1].startswith("```yaml\n"), "the tool file follows its paragraph's first lines"
    block = paragraph[1].removeprefix("```yaml\n").removesuffix("```")
    shown = yaml.safe_load(block)
    assert tuple(shown) == yaml_tools.TOOL_KEYS
    assert {key for param in shown["params"] for key in param} == set(yaml_tools.PARAM_KEYS)
    path = tmp_path / f"{shown['name']}.yaml"
    path.write_text(block)
    tool = yaml_tools.load_tool_file(path)
    required = [p.name for p in tool.params if p.required]
    assert required == ["title"] and tool.missing([]) is not None and tool.missing(["t"]) is None


def test_the_readme_lists_the_default_environment_the_code_passes():
    """The built-in default's env, as the README's paragraph on it spells it out."""
    from egg_core.config.model import DEFAULT_ENV

    text = (ROOT / "README.md").read_text()
    passage = re.search(r"shell histories denied; env (.*?); no network\.", text, re.S)
    assert passage, "the README's paragraph on the built-in default moved"
    names = {n for n in re.findall(r"\b[A-Z][A-Z_]*[A-Z]\b", passage.group(1))}
    assert names == set(DEFAULT_ENV)


def _architecture_block() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Architecture", 1)[1]
    return section.split("```", 2)[1]


def _module_files() -> list[Path]:
    return [*(ROOT / "egg_core").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]


def test_the_architecture_names_only_modules_that_exist():
    """README's architecture and the tree agree: each module, package or ``module.function`` the
    picture names is there (a move or a split that forgets the picture fails here)."""
    files = _module_files()
    relative = {str(f.relative_to(ROOT)) for f in files}
    names = {f.name for f in files}
    missing = []
    for token in re.findall(r"[\w/.]+", _architecture_block()):
        token = token.rstrip(".").replace("egg_plugins/", "plugins/")
        if token.endswith(".py") and "/" not in token:
            found = token in names
        elif "/" in token:
            stem = token.rstrip("/")
            found = any(
                candidate in relative or (ROOT / candidate).is_dir()
                for base in ("", "egg_core/", "plugins/platforms/")
                for candidate in (f"{base}{stem}", f"{base}{stem}.py")
            )
        elif re.fullmatch(r"[a-z_]+\.[a-z_]+", token) and not token.endswith((".log", ".yaml")):
            module, function = token.split(".")
            found = any(
                f.name == f"{module}.py" and re.search(rf"\bdef {function}\b", f.read_text())
                for f in files
            )
        else:
            continue
        if not found:
            missing.append(token)
    assert not missing, f"README's architecture names what the tree has not: {missing}"
