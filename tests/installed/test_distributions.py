"""What the built distributions hold: every file below ``egg_core/`` and ``plugins/`` (which ships
as ``egg_plugins``) and nothing else beside them but the ``egg`` command (``launcher/egg``, a
script of the wheel's), the same wheel whether pip builds it from the sdist or from the
checkout, and an sdist that holds what builds it."""

from __future__ import annotations

import tarfile
from pathlib import Path

from .conftest import Installed, wheel_files

#: the source directories that ship, and the package each one is in an installation
SHIPPED = {"egg_core": "egg_core", "plugins": "egg_plugins"}
#: besides the packages, what the sdist needs to build the wheel (README.md: its description)
BUILD_INPUTS = {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "launcher/egg"}


def source_files(source: Path) -> dict[str, Path]:
    """Every file below the shipped directories, by its path in the source tree."""
    return {
        path.relative_to(source).as_posix(): path
        for directory in SHIPPED
        for path in sorted((source / directory).rglob("*"))
        if path.is_file()
    }


def in_wheel(name: str) -> str:
    top, _, rest = name.partition("/")
    return f"{SHIPPED[top]}/{rest}"


def test_the_wheel_holds_every_file_below_egg_core_and_plugins_and_nothing_else(
    installed: Installed,
) -> None:
    expected = {
        in_wheel(name): path.read_bytes() for name, path in source_files(installed.source).items()
    }
    shipped = {
        name: data
        for name, data in wheel_files(installed.wheel).items()
        if not name.split("/", 1)[0].endswith((".dist-info", ".data"))
    }

    missing, extra = sorted(expected.keys() - shipped), sorted(shipped.keys() - expected)
    assert not missing and not extra, f"missing from the wheel: {missing}; not in the tree: {extra}"
    assert [name for name in expected if shipped[name] != expected[name]] == []


def test_the_wheels_one_script_is_the_egg_launcher_and_no_entry_point_writes_another(
    installed: Installed,
) -> None:
    """``bin/egg`` is ``launcher/egg`` whatever installs the wheel: a script of its own (``#!python``,
    the one line an installer rewrites), and no console-script entry point beside it, whose wrapper
    the installer would write (an older pip's imports ``re``: see the launcher)."""
    files = wheel_files(installed.wheel)
    data = {name.split("/", 1)[1] for name in files if name.split("/", 1)[0].endswith(".data")}
    (script,) = [name for name in files if name.endswith(".data/scripts/egg")]
    first, _, rest = files[script].decode().partition("\n")
    (entry_points,) = [name for name in files if name.endswith(".dist-info/entry_points.txt")]

    assert data == {"scripts/egg"}
    assert first == "#!python"
    assert rest == launcher_body(installed.source)
    assert "[console_scripts]" not in files[entry_points].decode()


def launcher_body(source: Path) -> str:
    """``launcher/egg`` without its first line (the one an installer rewrites)."""
    return (source / "launcher" / "egg").read_text().partition("\n")[2]


def test_the_wheel_built_from_the_sdist_is_the_one_built_from_the_checkout(
    installed: Installed,
) -> None:
    from_sdist, from_tree = wheel_files(installed.wheel), wheel_files(installed.tree_wheel)

    assert sorted(from_sdist) == sorted(from_tree)
    assert [name for name in from_sdist if from_sdist[name] != from_tree[name]] == []


def test_the_sdist_holds_what_builds_the_wheel_and_no_tests(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as archive:
        members = {
            member.name.split("/", 1)[1]
            for member in archive.getmembers()
            if member.isfile() and "/" in member.name
        }

    assert set(source_files(installed.source)) - members == set()
    assert BUILD_INPUTS - members == set()
    assert sorted(name for name in members if name.startswith("tests/")) == []


def test_the_readmes_package_install_names_the_wheel_and_an_extra_it_provides(
    installed: Installed,
) -> None:
    """``pip install 'egg-sandbox[mcp]'`` (README, "Install as a package") asks for what the
    wheel is, and the extra the installed venv was given (``[mcp]``: ``egg mcp`` works there)."""
    from email.parser import Parser

    from packaging.utils import canonicalize_name

    from tests.test_readme import readme_package_requirement

    requirement = readme_package_requirement()
    (metadata,) = [
        data for name, data in wheel_files(installed.wheel).items() if name.endswith("/METADATA")
    ]
    fields = Parser().parsestr(metadata.decode())
    assert canonicalize_name(fields["Name"]) == canonicalize_name(requirement.name)
    assert requirement.extras <= set(fields.get_all("Provides-Extra") or [])
    assert requirement.extras == {"mcp"}
