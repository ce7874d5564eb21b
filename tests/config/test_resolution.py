"""Base chains, section masks, cycles, depth, and discovery order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from egg_core.config.files import discover_config, resolve_config_file
from egg_core.config.model import DEFAULT_ENV
from egg_core.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def env(egg_home: Path, egg_user_home: Path) -> dict[str, str]:
    return {"EGG_HOME": str(egg_home), "HOME": str(egg_user_home)}


def rules(config) -> list[str]:
    return [str(r) for r in config.fs]


def test_omitted_base_merges_on_the_builtin_default(tmp_path, env):
    config, files = resolve_config_file(write(tmp_path / "egg.yaml", "fs: [ro:/opt]\n"), env)
    assert "deny:~/.ssh" in rules(config) and rules(config)[-1] == "ro:/opt"
    assert files == (tmp_path / "egg.yaml",)


def test_base_none_is_an_empty_slate(tmp_path, env):
    config, _ = resolve_config_file(write(tmp_path / "egg.yaml", "base: none\nfs: [ro:/x]\n"), env)
    assert rules(config) == ["ro:/x"]
    assert config.env.names == ()


def test_base_name_reads_egg_home_bases(tmp_path, env, egg_home):
    write(egg_home / "bases" / "strict.yaml", "base: none\nfs: [deny:/secret]\nenv: [A]\n")
    config, files = resolve_config_file(
        write(tmp_path / "egg.yaml", "base: strict\nfs: [rw:./]\nenv: [B]\n"), env
    )
    assert rules(config) == ["deny:/secret", "rw:./"]
    assert config.env.names == ("A", "B")
    assert files == (tmp_path / "egg.yaml", egg_home / "bases" / "strict.yaml")


def test_relative_and_absolute_bases_are_relative_to_the_naming_file(tmp_path, env):
    write(tmp_path / "shared" / "root.yaml", "base: none\nfs: [ro:/root-rule]\n")
    write(tmp_path / "shared" / "team.yaml", "base: ./root.yaml\nfs: [ro:/team-rule]\n")
    write(tmp_path / "proj" / "sub" / "egg.yaml", "base: ../../shared/team.yaml\nfs: [rw:./]\n")
    config, files = resolve_config_file(tmp_path / "proj" / "sub" / "egg.yaml", env)
    assert rules(config) == ["ro:/root-rule", "ro:/team-rule", "rw:./"]
    absolute = write(tmp_path / "abs.yaml", f"base: {tmp_path / 'shared' / 'root.yaml'}\n")
    config, _ = resolve_config_file(absolute, env)
    assert rules(config) == ["ro:/root-rule"]


def test_missing_base_names_the_referring_file(tmp_path, env):
    path = write(tmp_path / "egg.yaml", "base: nosuch\n")
    with pytest.raises(
        ConfigError, match=r"egg.yaml: base: 'nosuch' not found \(looked for .*bases/nosuch.yaml\)"
    ):
        resolve_config_file(path, env)


def test_invalid_base_file_error_names_that_file(tmp_path, env, egg_home):
    write(egg_home / "bases" / "broken.yaml", "fs: [dny:/x]\n")
    with pytest.raises(ConfigError, match=r"bases/broken.yaml:1: fs\[0\]: unknown mode 'dny'"):
        resolve_config_file(write(tmp_path / "egg.yaml", "base: broken\n"), env)


def test_mask_none_drops_a_parent_section(tmp_path, env, egg_home):
    write(
        egg_home / "bases" / "team.yaml", "base: none\nfs: [deny:/t]\nnetwork: [t.com]\nenv: [T]\n"
    )
    config, _ = resolve_config_file(
        write(tmp_path / "egg.yaml", "base: {name: team, network: none}\nnetwork: [mine.com]\n"),
        env,
    )
    assert config.network.domains == ("mine.com",)
    assert rules(config) == ["deny:/t"] and config.env.names == ("T",)


def test_mask_name_takes_the_section_from_another_resolved_chain(tmp_path, env, egg_home):
    write(egg_home / "bases" / "team.yaml", "base: none\nfs: [deny:/t]\nenv: [T]\n")
    write(egg_home / "bases" / "netroot.yaml", "base: none\nnetwork: [root.net]\n")
    write(
        egg_home / "bases" / "net.yaml", "base: netroot\nnetwork: [leaf.net]\nfs: [ro:/ignored]\n"
    )
    config, files = resolve_config_file(
        write(tmp_path / "egg.yaml", "base: {name: team, network: net}\nenv: [MINE]\n"), env
    )
    assert config.network.domains == ("root.net", "leaf.net")  # the *resolved* chain of net
    assert rules(config) == ["deny:/t"]  # fs still from team, not from net
    assert config.env.names == ("T", "MINE")
    assert len(files) == 4


def test_mask_path_and_env_mask(tmp_path, env, egg_home):
    write(egg_home / "bases" / "team.yaml", "base: none\nenv: [T]\n")
    write(tmp_path / "envs.yaml", "base: none\nenv: [FROM_MASK]\n")
    config, _ = resolve_config_file(
        write(tmp_path / "egg.yaml", "base: {name: team, env: ./envs.yaml, fs: none}\n"), env
    )
    assert config.env.names == ("FROM_MASK",)
    assert rules(config) == []


def test_masks_without_name_mask_the_default(tmp_path, env):
    config, _ = resolve_config_file(write(tmp_path / "egg.yaml", "base: {fs: none}\n"), env)
    assert rules(config) == []
    assert config.env.names == DEFAULT_ENV


def test_masks_with_base_none_are_an_error(tmp_path, env):
    with pytest.raises(ConfigError, match="section masks need a base"):
        resolve_config_file(write(tmp_path / "egg.yaml", "base: {name: none, env: x}\n"), env)


def test_cycle_is_an_error_naming_the_chain(tmp_path, env):
    write(tmp_path / "a.yaml", "base: ./b.yaml\n")
    write(tmp_path / "b.yaml", "base: ./c.yaml\n")
    write(tmp_path / "c.yaml", "base: ./a.yaml\n")
    with pytest.raises(ConfigError) as exc:
        resolve_config_file(tmp_path / "a.yaml", env)
    where, _, chain = str(exc.value).partition(": base cycle: ")
    assert where.endswith("c.yaml")  # the file holding the reference that closes the cycle
    assert [Path(p).name for p in chain.split(" -> ")] == ["a.yaml", "b.yaml", "c.yaml", "a.yaml"]


def test_self_reference_is_a_cycle(tmp_path, env):
    with pytest.raises(ConfigError, match="base cycle"):
        resolve_config_file(write(tmp_path / "a.yaml", "base: ./a.yaml\n"), env)


def test_a_file_seen_twice_anywhere_in_the_tree_is_an_error(tmp_path, env, egg_home):
    write(egg_home / "bases" / "team.yaml", "base: none\n")
    path = write(tmp_path / "egg.yaml", "base: {name: team, fs: team}\n")
    with pytest.raises(
        ConfigError, match=r"base file reached twice in one resolution: .*team.yaml"
    ):
        resolve_config_file(path, env)


def test_cycle_through_a_symlink_is_detected(tmp_path, env):
    write(tmp_path / "a.yaml", "base: ./link.yaml\n")
    os.symlink(tmp_path / "a.yaml", tmp_path / "link.yaml")
    with pytest.raises(ConfigError, match="base cycle"):
        resolve_config_file(tmp_path / "a.yaml", env)


def _chain(tmp_path: Path, length: int) -> Path:
    for i in range(length):
        base = f"./c{i + 1}.yaml" if i + 1 < length else "none"
        write(tmp_path / f"c{i}.yaml", f"base: {base}\nfs: [ro:/r{i}]\n")
    return tmp_path / "c0.yaml"


def test_ten_bases_deep_is_fine(tmp_path, env):
    config, files = resolve_config_file(_chain(tmp_path, 11), env)
    assert len(files) == 11
    assert rules(config) == [f"ro:/r{i}" for i in reversed(range(11))]


def test_deeper_than_ten_is_an_error(tmp_path, env):
    with pytest.raises(ConfigError, match="base chain deeper than 10"):
        resolve_config_file(_chain(tmp_path, 12), env)


def test_discovery_prefers_config_flag(tmp_path, env, egg_home):
    write(tmp_path / "egg.yaml", "fs: [ro:/local]\n")
    write(egg_home / "egg.yaml", "fs: [ro:/global]\n")
    write(tmp_path / "other.yaml", "fs: [ro:/flag]\n")
    found = discover_config(tmp_path, "other.yaml", env)
    assert found.origin == "--config" and rules(found.config)[-1] == "ro:/flag"


def test_discovery_uses_local_egg_yaml_then_user_global_then_default(tmp_path, env, egg_home):
    project = tmp_path / "project"
    project.mkdir()
    found = discover_config(project, None, env)
    assert found.origin == "built-in default" and found.path is None and found.files == ()
    write(egg_home / "egg.yaml", "fs: [ro:/global]\n")
    found = discover_config(project, None, env)
    assert found.origin == "$EGG_HOME/egg.yaml" and rules(found.config)[-1] == "ro:/global"
    write(project / "egg.yaml", "fs: [ro:/local]\n")
    found = discover_config(project, None, env)
    assert found.origin == "./egg.yaml" and rules(found.config)[-1] == "ro:/local"
    assert "ro:/global" not in rules(found.config)


def test_discovery_errors(tmp_path, env):
    with pytest.raises(ConfigError, match="nope.yaml: no such config file"):
        discover_config(tmp_path, "nope.yaml", env)
    with pytest.raises(ConfigError, match="is a directory"):
        discover_config(tmp_path, str(tmp_path), env)


def test_egg_home_defaults_to_dot_egg(tmp_path, egg_user_home):
    write(egg_user_home / ".egg" / "egg.yaml", "fs: [ro:/from-default-home]\n")
    found = discover_config(tmp_path, None, {"HOME": str(egg_user_home)})
    assert rules(found.config)[-1] == "ro:/from-default-home"
