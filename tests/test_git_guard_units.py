"""The git guard's pieces against the real git: index parsing, configuration scrubbing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from egg_core.git.config import read_config, render_config, safe_key, split_key
from egg_core.git.index import gitlinks, parse_gitlinks

OID = "0123456789012345678901234567890123456789"


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / f"a-longer-file-name-{i}.txt").write_text(str(i))
    git(tmp_path, "add", "-A")
    git(tmp_path, "update-index", "--add", "--cacheinfo", f"160000,{OID},d7/sub")
    git(tmp_path, "update-index", "--add", "--cacheinfo", f"160000,{OID},zz/" + "x" * 300)
    (tmp_path / "new.txt").write_text("n")
    git(tmp_path, "add", "-N", "new.txt")  # intent-to-add: an extended flag in format 3
    return tmp_path


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_gitlinks_are_found_in_every_index_format(repo: Path, version: str) -> None:
    git(repo, "update-index", "--index-version", version)
    assert gitlinks(str(repo / ".git" / "index")) == ["d7/sub", "zz/" + "x" * 300]


def test_gitlinks_in_a_sha256_repository(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--object-format=sha256")
    git(tmp_path, "update-index", "--add", "--cacheinfo", f"160000,{'ab' * 32},lib")
    assert gitlinks(str(tmp_path / ".git" / "index"), hash_bytes=32) == ["lib"]


def test_a_truncated_or_garbage_index_gives_what_it_can_and_never_raises(repo: Path) -> None:
    data = (repo / ".git" / "index").read_bytes()
    for cut in range(0, len(data), 97):
        parse_gitlinks(data[:cut])
    assert parse_gitlinks(b"DIRC\x00\x00\x00\x02\xff\xff\xff\xff" + b"\x00" * 50) == []
    assert parse_gitlinks(b"not an index") == []


def test_keys_split_with_dotted_subsections() -> None:
    assert split_key("remote.my.origin.url") == ("remote", "my.origin", "url")
    assert split_key("core.fsmonitor") == ("core", None, "fsmonitor")
    assert safe_key("remote.origin.url") and safe_key("branch.main.merge")
    for key in ("core.fsmonitor", "core.hookspath", "alias.st", "diff.x.textconv",
                "filter.lfs.clean", "include.path", "url.evil.insteadof",
                "merge.x.driver", "credential.helper", "core.sshcommand"):  # fmt: skip
        assert not safe_key(key), key


def test_a_rendered_configuration_reads_back_the_same_through_git(tmp_path: Path) -> None:
    entries = [
        ("core.bare", "false"),
        ('remote.we"ird\\name.url', 'https://example.com/a b;#c\\d"e'),
        ("branch.main.rebase", None),
        ("user.name", "  spaced  "),
    ]
    path = tmp_path / "config"
    path.write_bytes(render_config(entries))
    assert read_config(str(path), "/usr/bin/git") == entries


def _linked_repository(
    tmp_path: Path, with_config: bool = True
) -> tuple[Path, dict[str, object], Path]:
    """A workspace whose ``.git`` file names its git directory through a symlink (the git
    directory's ``config`` left out unless ``with_config``); the guard's plan for it, and the
    symlink."""
    from egg_core.git import guard as gitguard
    from egg_core.policy import EffectivePolicy, FsEntry
    from egg_core.profiles import AgentProfile

    work = tmp_path / "w"
    work.mkdir()
    git(tmp_path, "init", "-q", "--bare", str(work / "gits" / "real"))
    if not with_config:
        (work / "gits" / "real" / "config").unlink()
    (work / "link").symlink_to("gits/real")
    (work / ".git").write_text("gitdir: link\n")
    policy = EffectivePolicy(
        agent="shell",
        profile=AgentProfile(name="shell", description="a shell", binary="sh"),
        home=str(tmp_path),
        cwd=str(work),
        fs=[FsEntry("rw", str(work), "test")],
    )
    guard = gitguard.plan(policy, [(str(work), "rw")])
    return work, guard.state, work / "link"


def test_the_guards_watch_holds_the_paths_its_search_went_through_after_an_audit_too(
    tmp_path: Path,
) -> None:
    """The symlink on the way to the git directory is watched from the plan on, and still once
    an audit (an index change is enough to bring one) has rewritten the watch: otherwise the
    sandbox's second retarget, after any audit, would go unseen."""
    from egg_core.git import guard as gitguard

    work, state, link = _linked_repository(tmp_path)
    watched = lambda: [f for f in state["watch"] if f[1] == str(link)]  # noqa: E731
    assert watched()
    git(work, "--git-dir=gits/real", "config", "user.name", "someone")  # something to audit
    assert gitguard.changed(state)
    gitguard.check(state, tmp_path / "egg-home")
    assert watched() and not gitguard.changed(state)

    # the same target, a new link, made before the old one goes (so it cannot get the freed
    # inode back and be the very same fact): looked at again
    fresh = link.with_name(link.name + ".new")
    fresh.symlink_to("gits/real")
    os.replace(fresh, link)

    assert gitguard.changed(state)


def test_the_guards_placeholders_are_no_change_for_its_watch(tmp_path: Path) -> None:
    """What the run plants where the search found nothing (an empty hooks directory, the
    commondir seed) does not bring an audit by itself."""
    from egg_core.git import guard as gitguard

    work, state, _ = _linked_repository(tmp_path, with_config=False)
    gitdir = work / "gits" / "real"
    (gitdir / "commondir").write_text(".\n")
    (gitdir / "config").write_text("")
    assert not gitguard.changed(state)
    (gitdir / "config").write_text("[core]\n\tfsmonitor = x\n")  # not the placeholder
    assert gitguard.changed(state)
