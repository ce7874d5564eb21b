"""``facts.identity_of``: what a path *is*, as the exec cache and the git guard's audit record it
(an ``i`` fact) — device, inode, type and permissions, owner, and a symlink's target — and not
what it holds. Tested on the function itself, so that no test depends on how a filesystem hands
out inodes: ext4 gives a freed inode straight back (a symlink replaced by another one then differs
only in its target), tmpfs never does (there every replacement differs in its inode anyway).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from egg_core.facts import identity, identity_of

#: the fields identity_of stands for, as (name in os.stat_result, index in its sequence)
FIELDS = {"st_mode": 0, "st_ino": 1, "st_dev": 2, "st_uid": 4, "st_gid": 5}


def changed(st: os.stat_result, field: str, value: int) -> os.stat_result:
    """``st`` with one field replaced: a stat no filesystem has to be coaxed into giving."""
    values = list(st)
    values[FIELDS[field]] = value
    return os.stat_result(values)


def a_symlink(tmp_path: Path, target: str = "one") -> str:
    link = tmp_path / "ctl"
    link.symlink_to(target)
    return str(link)


def a_file(tmp_path: Path, name: str = "config") -> str:
    path = tmp_path / name
    path.write_text("first\n")
    path.chmod(0o644)
    return str(path)


# -- a symlink -------------------------------------------------------------------------------------


def test_a_symlink_retargeted_on_the_same_inode_is_another_identity(tmp_path: Path) -> None:
    """What ext4 does to the cache: the new symlink gets the freed inode, and the same device,
    type, permissions and owner — only its target tells it from the old one. The old ``lstat``
    passed again stands for that inode coming back, on any filesystem."""
    link = a_symlink(tmp_path, "one")
    st = os.lstat(link)
    before = identity_of(link, st)
    os.unlink(link)
    os.symlink("two", link)

    assert identity_of(link, st) != before
    assert identity(link) != before


def test_a_symlink_replaced_by_one_with_the_same_target_text_is_another_identity(
    tmp_path: Path,
) -> None:
    """Renamed over the old one while both exist, the new symlink cannot have its inode: same
    target text, still another path object."""
    link = a_symlink(tmp_path, "one")
    before = identity(link)
    (tmp_path / "new").symlink_to("one")
    os.replace(tmp_path / "new", link)

    assert os.readlink(link) == "one"
    assert identity(link) != before


@pytest.mark.parametrize("field", ["st_ino", "st_dev", "st_uid", "st_gid"])
def test_each_field_of_a_symlinks_identity_counts(tmp_path: Path, field: str) -> None:
    link = a_symlink(tmp_path)
    st = os.lstat(link)

    assert identity_of(link, changed(st, field, getattr(st, field) + 1)) != identity_of(link, st)


# -- any other path --------------------------------------------------------------------------------


def test_a_file_replaced_by_another_file_is_another_identity(tmp_path: Path) -> None:
    """Same name, type, permissions and owner: the inode alone tells the new file from the
    old one (a file swapped in under a name the policy resolved)."""
    path = a_file(tmp_path, "config")
    before = identity(path)
    os.replace(a_file(tmp_path, "other"), path)

    assert identity(path) != before


def test_a_directory_replaced_by_another_directory_is_another_identity(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir(mode=0o755)
    (tmp_path / "two").mkdir(mode=0o755)
    before = identity(str(tmp_path / "one"))
    os.replace(tmp_path / "two", tmp_path / "one")

    assert identity(str(tmp_path / "one")) != before


def test_a_change_of_permissions_or_of_type_is_another_identity(tmp_path: Path) -> None:
    path = a_file(tmp_path)
    before = identity(path)
    os.chmod(path, 0o600)
    assert identity(path) != before
    st = os.lstat(path)  # a directory with the very same inode, permissions and owner
    directory = changed(st, "st_mode", (st.st_mode & 0o7777) | 0o040000)
    assert identity_of(path, directory) != identity_of(path, st)


@pytest.mark.parametrize("field", ["st_ino", "st_dev", "st_uid", "st_gid"])
def test_each_field_of_a_files_identity_counts(tmp_path: Path, field: str) -> None:
    path = a_file(tmp_path)
    st = os.lstat(path)

    assert identity_of(path, changed(st, field, getattr(st, field) + 1)) != identity_of(path, st)


def test_writing_into_a_file_or_touching_it_leaves_its_identity(tmp_path: Path) -> None:
    """Identity is not contents (that is the ``c`` fact): a file written to, or its times set,
    is the same path object, and an entry resting only on what it *is* stays in use."""
    path = a_file(tmp_path)
    before = identity(path)
    with open(path, "a") as handle:
        handle.write("more\n")
    os.utime(path, (0, 0))

    assert identity(path) == before


def test_a_path_that_does_not_exist_has_no_identity(tmp_path: Path) -> None:
    assert identity(str(tmp_path / "missing")) is None
