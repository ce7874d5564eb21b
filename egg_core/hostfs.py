"""Changing, from the host, directories a sandbox could write (threat M): every operation here
walks and acts through descriptors, never following a symlink the sandbox may have planted.

The settings restore (:mod:`egg_core.snapshot`), the home layer's cleanup and the removal of
run and session directories use it:

- :func:`open_directory` opens a path one component at a time from ``/`` with ``O_NOFOLLOW``;
  a symlink or file standing where a directory belongs is removed (and, asked to, replaced by an
  empty directory), a directory the sandbox made unsearchable is taken back;
- :func:`replace_at` writes a replacement under a fresh name and renames it over the target;
- :func:`remove_at` / :func:`remove_tree` remove a tree of any depth iteratively;
- :func:`give_back_modes` returns each directory on the way to the mode it had before the run.

Standard library only: the exec cache's fast path restores settings too.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_directory(
    real_dir: str, modes: dict[str, int], notes: list[str], *, create: bool
) -> int | None:
    """A descriptor for ``real_dir``, walked from ``/`` one component at a time without
    following any symlink. A component that is now a symlink or not a directory is removed
    (what the sandbox put there) and, with ``create``, replaced by an empty directory; a
    missing one is made with ``create`` and otherwise ends the walk (None)."""
    fd = os.open("/", _DIR_FLAGS)
    current = "/"
    try:
        for part in [p for p in real_dir.split("/") if p]:
            child = os.path.join(current, part)
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                make_writable(fd)
                os.mkdir(part, modes.get(child, 0o700), dir_fd=fd)
                notes.append(f"recreated {child}")
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno == 13:  # EACCES: the sandbox took away our own permission
                    take_back(fd, part, child, modes)
                    next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                elif exc.errno in (20, 40):  # ENOTDIR, ELOOP: a symlink or file stands there
                    st = os.lstat(part, dir_fd=fd)
                    what = describe(part, fd, st)
                    make_writable(fd)
                    remove_at(fd, part, st)
                    notes.append(f"removed {what} that stood in place of the directory {child}")
                    if not create:
                        os.close(fd)
                        return None
                    os.mkdir(part, modes.get(child, 0o700), dir_fd=fd)
                    next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                else:
                    raise
            os.close(fd)
            fd, current = next_fd, child
        return fd
    except BaseException:
        os.close(fd)
        raise


def describe(name: str, dir_fd: int, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return f"a symlink (to {os.readlink(name, dir_fd=dir_fd)})"
    return "a file"


def take_back(parent_fd: int, name: str, path: str, modes: dict[str, int]) -> None:
    """Make ``name`` (a directory of the user's own) searchable and writable again; its mode
    from before the run (or, if unknown, the one it had) is given back afterwards."""
    st = os.lstat(name, dir_fd=parent_fd)
    if st.st_uid != os.geteuid():
        raise PermissionError(13, f"{path} belongs to another user")
    os.chmod(name, stat.S_IMODE(st.st_mode) | 0o700, dir_fd=parent_fd, follow_symlinks=False)
    modes.setdefault(path, stat.S_IMODE(st.st_mode))


def give_back_modes(modes: dict[str, int]) -> list[str]:
    """Every directory on the way gets the permission bits it had before the run (the sandbox
    may have changed them; this restore may have had to)."""
    notes = []
    for path, wanted in sorted(modes.items(), key=lambda item: -item[0].count("/")):
        fd = open_directory(path, {}, [], create=False) if path != "/" else None
        if fd is None:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_IMODE(st.st_mode) != wanted and st.st_uid == os.geteuid():
                os.fchmod(fd, wanted)
                notes.append(f"gave {path} back its mode {wanted:o}")
        except OSError:
            pass
        finally:
            os.close(fd)
    return notes


def make_writable(dir_fd: int) -> None:
    """Make the open directory writable by its owner (us) if the sandbox took that away; the
    mode recorded before the run is given back afterwards (:func:`give_back_modes`)."""
    st = os.fstat(dir_fd)
    if st.st_mode & 0o300 != 0o300 and st.st_uid == os.geteuid():
        os.fchmod(dir_fd, stat.S_IMODE(st.st_mode) | 0o700)


def replace_at(
    parent_fd: int,
    name: str,
    existing: os.stat_result | None,
    create: Any,
) -> None:
    """Create the replacement under a fresh name in the directory, then rename it over ``name``
    (``create`` must create exclusively). Whatever stood there first is removed if it was a
    directory (rename cannot replace one); the fresh name never outlives a failure."""
    make_writable(parent_fd)
    tmp = None
    try:
        for _ in range(20):
            candidate = f".{name}.egg-{os.urandom(6).hex()}"
            try:
                create(candidate)
            except FileExistsError:
                continue
            tmp = candidate
            break
        if tmp is None:
            raise FileExistsError(17, f"no free temporary name next to {name}")
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            remove_at(parent_fd, name, existing)
        os.rename(tmp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=parent_fd)
            except OSError:
                pass


def remove_tree(path: str) -> None:
    """Remove ``path``, whatever shape a sandbox gave it (a run's home layer was its $HOME):
    iteratively, through descriptors, never following a symlink. Never raises."""
    try:
        parent_fd = os.open(os.path.dirname(path) or ".", _DIR_FLAGS)
    except OSError:
        return
    try:
        remove_at(parent_fd, os.path.basename(path))
    except Exception:  # what cannot be removed stays; egg goes on
        pass
    finally:
        os.close(parent_fd)


def remove_at(parent_fd: int, name: str, st: os.stat_result | None = None) -> None:
    """Remove ``name`` in the directory — a whole tree of any depth, iteratively, through
    descriptors (never following a symlink), taking back permissions the user owns."""
    if st is None:
        st = os.lstat(name, dir_fd=parent_fd)
    make_writable(parent_fd)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return
    # each level: (its descriptor, its name in the level above, names left to remove in it)
    stack: list[tuple[int, str, list[str]]] = []
    try:
        top = _open_for_removal(parent_fd, name)
        stack.append((top, name, _names(top)))
        while stack:
            fd, own_name, names = stack[-1]
            if names:
                child = names.pop()
                if stat.S_ISDIR(os.lstat(child, dir_fd=fd).st_mode):
                    child_fd = _open_for_removal(fd, child)
                    stack.append((child_fd, child, _names(child_fd)))
                else:
                    os.unlink(child, dir_fd=fd)
                continue
            os.close(fd)
            stack.pop()
            os.rmdir(own_name, dir_fd=stack[-1][0] if stack else parent_fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _open_for_removal(parent_fd: int, name: str) -> int:
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent_fd, follow_symlinks=False)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    make_writable(fd)
    return fd


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return [entry.name for entry in entries]


def restore_link(at: str, wanted: str, modes: dict[str, int]) -> list[str]:
    """The settings file's directory was a symlink before the run: put its target back (the
    sandbox could have pointed it at a directory of its own)."""
    try:
        if os.readlink(at) == wanted:
            return []
    except OSError:
        pass
    parent_fd = open_directory(os.path.dirname(at), modes, [], create=False)
    if parent_fd is None:
        return []
    try:
        name = os.path.basename(at)
        try:
            st: os.stat_result | None = os.lstat(name, dir_fd=parent_fd)
        except FileNotFoundError:
            st = None
        replace_at(parent_fd, name, st, lambda tmp: os.symlink(wanted, tmp, dir_fd=parent_fd))
    finally:
        os.close(parent_fd)
    return [f"restored {at} (symlink to {wanted})"]
