"""Merge rules (parent -> child) of DESIGN.md §4, one test per rule."""

from __future__ import annotations

from pathlib import Path

from egg_core.config.model import (
    DEFAULT_ENV,
    EggConfig,
    EnvConfig,
    FsRule,
    NetworkConfig,
    Resources,
    default_config,
    merge_configs,
    unsandboxed_config,
)

HOME = Path("/home/u")


def merge(parent: EggConfig, child: EggConfig) -> EggConfig:
    return merge_configs(parent, child, HOME)


def fs(*rules: str) -> tuple[FsRule, ...]:
    return tuple(FsRule(*r.split(":", 1)) for r in rules)


def test_fs_is_appended():
    merged = merge(EggConfig(fs=fs("rw:./", "deny:~/.ssh")), EggConfig(fs=fs("ro:/opt")))
    assert [str(r) for r in merged.fs] == ["rw:./", "deny:~/.ssh", "ro:/opt"]


def test_child_ro_or_rw_drops_parent_deny_of_the_same_normalized_path():
    parent = EggConfig(fs=fs("deny:~/.aws", "deny:~/.ssh", "deny:/home/u/.kube/"))
    child = EggConfig(fs=fs("ro:/home/u/.aws", "rw:~/.kube"))
    assert [str(r) for r in merge(parent, child).fs] == [
        "deny:~/.ssh",
        "ro:/home/u/.aws",
        "rw:~/.kube",
    ]


def test_child_deny_does_not_drop_anything_and_other_paths_stay_denied():
    parent = EggConfig(fs=fs("deny:~/.ssh"))
    child = EggConfig(fs=fs("ro:~/.ssh/config", "deny:~/.gnupg"))
    assert [str(r) for r in merge(parent, child).fs] == [
        "deny:~/.ssh",
        "ro:~/.ssh/config",
        "deny:~/.gnupg",
    ]


def test_child_rw_also_drops_parent_deny_write_but_ro_does_not():
    parent = EggConfig(fs=fs("deny-write:./egg.yaml", "deny-write:./.git/config"))
    child = EggConfig(fs=fs("rw:./egg.yaml", "ro:./.git/config"))
    assert [str(r) for r in merge(parent, child).fs] == [
        "deny-write:./.git/config",
        "rw:./egg.yaml",
        "ro:./.git/config",
    ]


def test_identical_rules_are_not_repeated():
    merged = merge(EggConfig(fs=fs("rw:./")), EggConfig(fs=fs("rw:.", "rw:./")))
    assert [str(r) for r in merged.fs] == ["rw:./"]


def test_network_domains_are_unioned_in_order():
    parent = EggConfig(network=NetworkConfig(domains=("a.com", "b.com"), shape="list"))
    child = EggConfig(network=NetworkConfig(domains=("b.com", "c.com"), shape="list"))
    net = merge(parent, child).network
    assert net.domains == ("a.com", "b.com", "c.com") and net.shape == "list"


def test_network_star_wins_from_either_side():
    star = EggConfig(network=NetworkConfig(domains=("*",), shape="star"))
    some = EggConfig(network=NetworkConfig(domains=("a.com",), shape="list"))
    assert merge(star, some).network.domains == ("*",)
    assert merge(some, star).network.domains == ("*",)
    assert merge(some, star).network.shape == "star"


def test_network_local_ports_union_and_child_options_win():
    parent = EggConfig(
        network=NetworkConfig(local_ports=(8080,), mode="observe", log=True, shape="mapping")
    )
    child = EggConfig(
        network=NetworkConfig(
            local_ports=(11434, 8080), mode="enforce", agent_domains="none", shape="mapping"
        )
    )
    net = merge(parent, child).network
    assert net.local_ports == (8080, 11434)
    assert (net.mode, net.log, net.agent_domains) == ("enforce", True, "none")
    assert net.shape == "mapping"


def test_network_none_and_absent():
    none = EggConfig(network=NetworkConfig(shape="none"))
    assert merge(none, EggConfig()).network.shape == "none"
    assert merge(EggConfig(), EggConfig()).network.shape == "absent"


def test_env_is_unioned_and_star_wins():
    a = EggConfig(env=EnvConfig(names=("HOME", "PATH"), shape="list"))
    b = EggConfig(env=EnvConfig(names=("PATH", "GOPATH"), shape="list"))
    star = EggConfig(env=EnvConfig(names=("*",), shape="star"))
    assert merge(a, b).env.names == ("HOME", "PATH", "GOPATH")
    assert merge(a, star).env.names == ("*",)
    assert merge(star, b).env.names == ("*",)


def test_resources_child_wins_per_field():
    parent = EggConfig(
        resources=Resources(
            cpu="60s", memory="1GB", max_fds=100, max_pids=10, cpu_per_process="10s"
        )
    )
    child = EggConfig(resources=Resources(memory="2GB", max_pids=20, cpu_per_process="5s"))
    assert merge(parent, child).resources == Resources(
        cpu="60s", memory="2GB", max_fds=100, max_pids=20, cpu_per_process="5s"
    )


def test_shell_child_wins_when_set():
    assert merge(EggConfig(shell="/bin/sh"), EggConfig(shell="/bin/zsh")).shell == "/bin/zsh"
    assert merge(EggConfig(shell="/bin/sh"), EggConfig()).shell == "/bin/sh"


def test_booleans_are_ored():
    for key in ("dangerously_skip_permissions", "audit", "trace"):
        on, off = EggConfig(**{key: True}), EggConfig()
        assert getattr(merge(on, off), key) is True
        assert getattr(merge(off, on), key) is True
        assert getattr(merge(off, off), key) is False


def test_agent_settings_merge_per_key():
    parent = EggConfig(agent_settings=(("claude", "a.json"), ("codex", "b.toml")))
    child = EggConfig(agent_settings=(("claude", "c.json"),))
    assert merge(parent, child).agent_settings_map == {"claude": "c.json", "codex": "b.toml"}


def test_merged_config_has_no_base():
    assert merge(default_config(), EggConfig()).base is None


def test_default_config_matches_the_design():
    config = default_config()
    rules = [str(r) for r in config.fs]
    assert "rw:./" in rules and "cache:~/.cache" in rules
    for denied in (
        "~/.ssh",
        "~/.gnupg",
        "~/.aws",
        "~/.docker",
        "~/.kube",
        "~/.netrc",
        "~/.bash_history",
        "~/.zsh_history",
    ):
        assert f"deny:{denied}" in rules
    # ./egg.yaml and .git are egg's own protections (policy.protected), not a base's rules
    assert not [r for r in rules if "egg.yaml" in r or ".git" in r]
    assert config.env.names == DEFAULT_ENV
    assert config.network.domains == () and not config.network.unrestricted
    assert all(r.source == "built-in default" for r in config.fs)


def test_unsandboxed_config_is_wide_open():
    config = unsandboxed_config()
    assert config.fs == () and config.network.unrestricted and config.env.everything
    assert not config.resources.any
