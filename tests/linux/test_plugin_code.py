"""Threat R: a third-party plugin's code is read-only in every sandbox, editable installs included.

A plugin installed editable (``pip install -e``, both setuptools modes: the editable finder and
a ``.pth`` path) from a directory the sandbox can write: the sandbox appends a line to its module,
and the next ``egg`` command on the host would run it. Each test uses an environment of its own
that sees egg's (a ``.pth`` adding the test venv's site directory), so the plugin it installs is
loaded by no other test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.linux.conftest import Box

PLUGIN_PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "egg-planted-example"
version = "0.1"

[project.entry-points.egg]
planted = "planted_plugin"
"""

PLUGIN_MODULE = '''\
"""A plugin that implements nothing: importing it is the whole point."""
'''


@pytest.fixture
def plugin_env(box: Box, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """(the egg launcher of a fresh environment with the plugin installed editable from the
    workspace, the plugin's module)."""
    mode = request.param
    venv = box.root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    ours = sysconfig.get_path("purelib")
    (site / "egg-test-env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    source = box.mkdir(box.workspace / "planted")
    box.write(source / "pyproject.toml", PLUGIN_PYPROJECT)
    module = box.write(source / "planted_plugin.py", PLUGIN_MODULE)
    options = ["--config-settings", "editable_mode=compat"] if mode == "pth" else []
    installed = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            *options,
            "-e",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    for made in source.rglob("*"):  # the build's leftovers stay the user's
        box.chown(made)
    launcher = box.write(
        venv / "bin" / "egg",
        f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom egg_core.cli import main\n"
        "sys.exit(main())\n",
        0o755,
    )
    yield str(launcher), module


def loaded(box: Box, egg: str) -> dict[str, object]:
    listed = box.run("plugins", "--json", egg=egg)
    assert listed.returncode == 0, listed.stderr
    return {p["name"]: p for p in json.loads(listed.stdout)}


@pytest.mark.parametrize("plugin_env", ["finder", "pth"], indirect=True)
def test_an_editable_plugins_module_cannot_be_changed_from_inside(
    box: Box, plugin_env: tuple[str, Path]
) -> None:
    egg, module = plugin_env
    assert loaded(box, egg)["planted"]["status"] == "loaded"
    payload = f"\\nopen({str(box.witness('PWNED'))!r}, 'w').close()\\n"
    attack = box.exec(
        "sh",
        "-c",
        f"printf '{payload}' >> {module}; echo code=$?",
        egg=egg,
    )

    assert "code=0" not in attack.stdout, attack.stdout + attack.stderr
    assert module.read_text() == PLUGIN_MODULE
    loaded(box, egg)  # the host imports every plugin again
    assert not box.witness("PWNED").exists(), "the host ran code the sandbox added to a plugin"


@pytest.mark.parametrize("identity", ["root"], indirect=True)
@pytest.mark.parametrize("plugin_env", ["finder"], indirect=True)
def test_explain_lists_each_plugins_code_under_its_protections(
    box: Box, plugin_env: tuple[str, Path]
) -> None:
    egg, module = plugin_env
    shown = box.run("explain", "--json", egg=egg)
    assert shown.returncode == 0, shown.stderr
    protected = json.loads(shown.stdout)["protected"]
    ours = [e for e in protected if "planted" in e["source"]]
    assert ours and all(e["mode"] == "deny-write" for e in ours)
    assert any(Path(e["path"]) in (module, module.parent) for e in ours), ours
    assert "code of the plugin planted (egg-planted-example)" in ours[0]["source"]
    table = box.run("explain", egg=egg).stdout
    assert "code of the plugin planted" in table


@pytest.mark.parametrize("plugin_env", ["pth"], indirect=True)
def test_a_new_plugin_cannot_be_planted_where_egg_imports_from(
    box: Box, plugin_env: tuple[str, Path]
) -> None:
    """A ``.pth`` puts the editable source on ``sys.path``, and entry points are found in every
    ``sys.path`` directory: a ``*.dist-info`` written there would be a plugin the host loads."""
    egg, module = plugin_env
    source = module.parent
    mark = box.witness("PWNED")
    attack = box.exec(
        "sh",
        "-c",
        f"cd {source} && mkdir evil-0.dist-info && "
        "printf 'Metadata-Version: 2.1\\nName: evil\\nVersion: 0\\n' > evil-0.dist-info/METADATA && "
        "printf '[egg]\\nevil = evilmod\\n' > evil-0.dist-info/entry_points.txt && "
        f"printf 'open(%s, \"w\").close()\\n' \"'{mark}'\" > evilmod.py; echo code=$?",
        egg=egg,
    )

    assert "code=0" not in attack.stdout, attack.stdout + attack.stderr
    assert "evil" not in loaded(box, egg)
    assert not mark.exists(), "the host loaded a plugin the sandbox planted"
