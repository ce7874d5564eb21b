"""``egg policy suggest`` for files: strace records of refused writes become ``rw:`` rules, while
egg's protections and the built-in deny list are "refused on purpose", and system paths, the home
directory itself and refused reads are listed apart. The real traced run is in
tests/linux/test_suggest_e2e.py."""

from __future__ import annotations

import os
from pathlib import Path

from egg_core.suggest.fs import classify
from egg_core.suggest.trace import Refusal, read_trace

HOME = "/home/dev"
PROJECT = "/home/dev/proj"

TRACE = r"""
100  10:00:00.000001 execve("/usr/bin/bwrap", ["bwrap"], 0x7ffd /* 5 vars */) = 0
101  10:00:00.000002 mkdir("/newroot/home/dev", 0755) = -1 EROFS (Read-only file system)
102  10:00:00.000100 openat(AT_FDCWD, "/home/dev/.local/share/tool/state.json", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EROFS (Read-only file system)
102  10:00:00.000200 chdir("/home/dev/.config") = 0
102  10:00:00.000300 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 103
103  10:00:00.000400 mkdir("tool", 0777 <unfinished ...>
102  10:00:00.000401 wait4(-1,  <unfinished ...>
103  10:00:00.000500 <... mkdir resumed>) = -1 EROFS (Read-only file system)
102  10:00:00.000600 openat(AT_FDCWD, "/home/dev/.ssh/known_hosts", O_WRONLY|O_CREAT|O_APPEND, 0666) = -1 EROFS (Read-only file system)
102  10:00:00.000700 openat(AT_FDCWD, "/home/dev/proj/.git/hooks/pre-commit", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EROFS (Read-only file system)
102  10:00:00.000800 openat(AT_FDCWD, "/usr/lib/python3/x.pyc", O_WRONLY|O_CREAT|O_EXCL, 0644) = -1 EROFS (Read-only file system)
102  10:00:00.000900 openat(AT_FDCWD, "/home/dev/.zshenv", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EROFS (Read-only file system)
102  10:00:00.001000 openat(AT_FDCWD, "/home/dev/other/secret", O_RDONLY) = -1 EACCES (Permission denied)
102  10:00:00.001100 openat(3, "relative-to-a-descriptor", O_WRONLY|O_CREAT, 0666) = -1 EROFS (Read-only file system)
102  10:00:00.001200 unlinkat(AT_FDCWD, "/home/dev/.local/share/tool/old\"name\303\251", 0) = -1 EPERM (Operation not permitted)
102  10:00:00.001300 renameat2(AT_FDCWD, "/home/dev/proj/a", AT_FDCWD, "/home/dev/.cache2/b", RENAME_NOREPLACE) = -1 EROFS (Read-only file system)
102  10:00:00.001400 openat(AT_FDCWD, "/home/dev/.local/share/tool/ok", O_RDONLY) = 3
102  10:00:00.001500 faccessat2(AT_FDCWD, "/home/dev/x", W_OK, AT_EACCESS) = -1 EACCES (Permission denied)
102  10:00:00.001600 +++ exited with 0 +++
"""

RULES = [
    (PROJECT, "rw", "egg.yaml"),
    (f"{HOME}/.ssh", "deny", "built-in default"),
]
PROTECTED = [(f"{PROJECT}/.git/hooks", "deny-write", "egg: git: git runs these hooks")]


def test_the_refused_writes_are_read_with_their_working_directory_and_flags():
    found = read_trace(TRACE.splitlines(), PROJECT)
    assert [(r.path, r.call, r.errno, r.intent) for r in found] == [
        (f"{HOME}/.local/share/tool/state.json", "openat", "EROFS", "create"),
        (f"{HOME}/.config/tool", "mkdir", "EROFS", "create"),  # the forked child's cwd
        (f"{HOME}/.ssh/known_hosts", "openat", "EROFS", "create"),
        (f"{PROJECT}/.git/hooks/pre-commit", "openat", "EROFS", "create"),
        ("/usr/lib/python3/x.pyc", "openat", "EROFS", "create"),
        (f"{HOME}/.zshenv", "openat", "EROFS", "create"),
        (f"{HOME}/other/secret", "openat", "EACCES", "read"),
        ("relative-to-a-descriptor", "openat", "EROFS", "create"),  # kept, not placed
        (f'{HOME}/.local/share/tool/old"name\u00e9', "unlinkat", "EPERM", "remove"),
        (f"{PROJECT}/a", "renameat2", "EROFS", "remove"),
        (f"{HOME}/.cache2/b", "renameat2", "EROFS", "create"),
    ]  # bwrap's own /newroot set-up and the successes are not there


def test_refusals_become_rules_and_the_protected_ones_are_refused_on_purpose(tmp_path: Path):
    found = read_trace(TRACE.splitlines(), PROJECT)
    rules, apart = classify(found, home=HOME, project=PROJECT, rules=RULES, protected=PROTECTED)
    assert [u.rule for u in rules] == ["rw:~/.local/share/tool"]
    tool = rules[-1]
    assert tool.count == 2 and tool.first == "10:00:00.000100"
    why = {r.path: r.why for r in apart}
    assert why[f"{HOME}/.ssh/known_hosts"] == (
        f"refused on purpose: deny:{HOME}/.ssh (built-in default)"
    )
    assert why[f"{PROJECT}/.git/hooks/pre-commit"].startswith(
        f"refused on purpose: deny-write:{PROJECT}/.git/hooks (egg: git"
    )
    assert why["/usr/lib/python3/x.pyc"].startswith("outside your home and this project")
    assert why[f"{HOME}/.zshenv"].startswith("it would need your home directory (or one above it)")
    assert why[f"{HOME}/other/secret"].startswith("EACCES on a read")
    assert why[f"{PROJECT}/a"].startswith("EROFS: writable under egg.yaml now")
    assert why[f"{HOME}/.cache2/b"].startswith("at the top of your home")  # not all of ~/.cache2
    assert why[f"{HOME}/.config/tool"].startswith("at the top of your home")


def test_a_deeper_rule_folds_into_its_ancestor():
    found = [
        Refusal(f"{HOME}/.local/share/tool/a/b/c", "mkdir", "EROFS", "create", "1"),
        Refusal(f"{HOME}/.local/share/tool/x", "openat", "EROFS", "create", "2"),
    ]
    rules, _ = classify(found, home=HOME, project=PROJECT, rules=RULES, protected=())
    assert [(u.rule, u.count) for u in rules] == [("rw:~/.local/share/tool", 2)]


def test_an_existing_file_opened_for_writing_is_the_rule_itself(tmp_path: Path):
    home = str(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    found = [Refusal(f"{home}/notes/todo.txt", "openat", "EROFS", "create", "1")]
    rules, _ = classify(found, home=home, project=f"{home}/p", rules=(), protected=())
    assert [u.rule for u in rules] == ["rw:~/notes/todo.txt"]


def test_a_program_cannot_forge_a_refusal_through_its_string_arguments():
    forged = [
        # the kernel said ENOENT; the text "= -1 EROFS" is inside the program's own string
        '7 10:00:00.1 rename("/home/dev/.config/autostart/x.desktop", '
        '"/y) = -1 EROFS (Read-only file system") = -1 ENOENT (No such file or directory)',
        # "O_CREAT" inside a path does not make a read a create
        '7 10:00:00.2 openat(AT_FDCWD, "/home/dev/p/O_CREAT", O_RDONLY) = -1 EACCES (Permission '
        "denied)",
        # a truncated string argument, then a successful call
        '7 10:00:00.3 write(1, ") = -1 EROFS (x)"..., 4096) = 4096',
    ]
    found = read_trace(forged, PROJECT)
    assert [(r.path, r.intent, r.errno) for r in found] == [
        ("/home/dev/p/O_CREAT", "read", "EACCES")
    ]


PIDNS = r"""
19877 17:26:27.020639 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 19878
19878 17:26:27.032084 chdir("/home/dev/work") = 0
19878 17:26:27.033658 vfork( <unfinished ...>
19879 17:26:27.035000 execve("/usr/bin/touch", ["touch", "newfile"], 0x7ff /* 6 vars */ <unfinished ...>
19878 17:26:27.034209 <... vfork resumed>) = 2 /* 19879 in strace's PID NS */
19879 17:26:27.035622 <... execve resumed>) = 0
19879 17:26:27.051390 openat(AT_FDCWD, "newfile", O_WRONLY|O_CREAT|O_NOCTTY|O_NONBLOCK, 0666) = -1 EROFS (Read-only file system)
19878 17:26:27.052000 clone(child_stack=0x7f, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD) = 3 /* 19880 in strace's PID NS */
19880 17:26:27.052100 mkdir("a", 0777) = -1 EROFS (Read-only file system)
19878 17:26:27.052200 chdir("sub") = 0
19880 17:26:27.052300 mkdir("b", 0777) = -1 EROFS (Read-only file system)
19878 17:26:27.052400 fchdir(3) = 0
19878 17:26:27.052500 mkdir("c", 0777) = -1 EROFS (Read-only file system)
19900 17:26:27.052600 mkdir("d", 0777) = -1 EROFS (Read-only file system)
"""


def test_working_directories_follow_forks_across_the_pid_namespace_threads_and_fchdir():
    found = read_trace(PIDNS.strip().splitlines(), PROJECT)
    assert [(r.path, r.cwd_known) for r in found] == [
        ("/home/dev/work/newfile", True),  # the child's line came before its parent's result
        ("/home/dev/work/a", True),
        # a directory threads share (CLONE_FS) that moves: which of them resolved a path
        # before or after the chdir is not in the record, so it is unknown
        ("b", False),
        ("c", False),  # after fchdir the directory is unknown: never guessed
        ("d", False),  # a process whose parent the trace does not show
    ]
    rules, apart = classify(found, home=HOME, project=PROJECT, rules=RULES, protected=())
    assert rules == []  # ~/work is at the top of the home; the rest cannot be placed
    assert {r.path: r.why for r in apart}["c"].startswith("relative to a directory the trace")


def test_paths_egg_yaml_cannot_hold_are_listed_apart():
    found = [
        Refusal(f"{HOME}/.config/d\udcff/sub", "mkdir", "EROFS", "create", "1"),
        Refusal(f"{HOME}/.config/a\nb/c", "mkdir", "EROFS", "create", "2"),
        Refusal(f"{HOME}/.config/trailing /c", "mkdir", "EROFS", "create", "3"),
    ]
    rules, apart = classify(found, home=HOME, project=PROJECT, rules=RULES, protected=())
    assert rules == [] and all("egg.yaml cannot hold this path" in r.why for r in apart)


def test_a_child_has_the_directory_of_its_fork_not_of_its_first_line_and_pids_are_reused():
    later = [
        '1 10:00:00.000001 chdir("/home/dev/proj") = 0',
        "1 10:00:00.000002 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 7",
        '1 10:00:00.000003 chdir("/home/dev/.config") = 0',
        '7 10:00:00.000004 mkdir("build", 0777) = -1 EROFS (Read-only file system)',
    ]
    reused = [
        '1 10:00:00.000001 chdir("/home/dev/proj") = 0',
        "1 10:00:00.000002 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 7",
        '7 10:00:00.000003 chdir("/home/dev/.config") = 0',
        "7 10:00:00.000004 +++ exited with 0 +++",
        "1 10:00:00.000005 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 7",
        '7 10:00:00.000006 mkdir("build", 0777) = -1 EROFS (Read-only file system)',
        '7 10:00:00.000007 mkdir("//home/dev/.ssh/x", 0777) = -1 EROFS (Read-only file system)',
    ]
    assert [r.path for r in read_trace(later, "/")] == ["/home/dev/proj/build"]
    assert [r.path for r in read_trace(reused, "/")] == [
        "/home/dev/proj/build",
        "/home/dev/.ssh/x",  # "//" is "/": the deny list still sees it
    ]


def test_rules_that_would_give_more_than_the_refused_write_are_never_proposed(tmp_path: Path):
    home = str(tmp_path / "home")
    project = f"{home}/src/proj"
    for d in ("src/proj", "src/other/.git", ".ssh", ".local/share/tool", ".local/share/apps"):
        os.makedirs(f"{home}/{d}")
    os.symlink(f"{home}/.ssh", f"{home}/.local/share/keys")  # a link the rule would follow
    Path(f"{home}/.ssh/authorized_keys").write_text("")
    os.symlink(f"{home}/.ssh/authorized_keys", f"{home}/.local/share/tool/notes.txt")
    attempts = [
        (f"{home}/.local/share/keys/x", "openat", "create"),
        (f"{home}/.local/share/tool/notes.txt", "openat", "create"),
        (f"{home}/.local/bin/git", "openat", "create"),
        (f"{home}/.config/git/config.lock", "openat", "create"),
        (f"{home}/src/x", "mkdir", "create"),  # ~/src holds this project and another repository
        (f"{home}/src/other/x", "mkdir", "create"),  # a repository: its hooks
        (f"{home}/.local/share/apps", "chmod", "write"),  # metadata only
        ("/", "mkdir", "create"),
        (f"{home}/.local/share/apps/x", "creat", "create"),  # the one that is fine
    ]
    found = [
        Refusal(p, call, "EROFS", intent, str(i)) for i, (p, call, intent) in enumerate(attempts)
    ]
    rules, apart = classify(found, home=home, project=project, rules=[], protected=[])
    assert [u.rule for u in rules] == ["rw:~/.local/share/apps"]
    why = {r.path: r.why for r in apart}
    assert why[f"{home}/.local/share/keys/x"].startswith("reached through a symlink on the host")
    assert why[f"{home}/.local/share/tool/notes.txt"].startswith("reached through a symlink")
    assert (
        why[f"{home}/.local/bin/git"] == "refused on purpose: the host runs what is in ~/.local/bin"
    )
    assert why[f"{home}/.config/git/config.lock"].endswith("~/.config/git")
    assert why[f"{home}/src/x"].startswith("it holds this project")
    assert (
        why[f"{home}/src/other/x"]
        == f"it holds {home}/src/other/.git: its hooks or policy would become writable"
    )
    assert why[f"{home}/.local/share/apps"].startswith("a metadata change")
    assert why["/"].startswith("outside your home") or why["/"].startswith("it would need")


def test_a_read_only_rule_at_the_same_path_is_named_not_shadowed():
    found = [Refusal(f"{HOME}/.local/share/tool/x", "openat", "EROFS", "create", "1")]
    rules = [*RULES, (f"{HOME}/.local/share/tool", "ro", "egg.yaml")]
    proposed, apart = classify(found, home=HOME, project=PROJECT, rules=rules, protected=())
    assert proposed == []
    assert apart[0].why == "egg.yaml says ro:~/.local/share/tool: change that rule by hand"


E = " = -1 EROFS (Read-only file system)"


def test_padded_short_calls_superseding_threads_and_exit_group_are_followed():
    padded = [
        '100 10:00:00.000001 chdir("/home/dev/proj/sub") = 0',
        '100 10:00:00.000002 chdir("..")       = 0',  # strace pads short calls to column 40
        '100 10:00:00.000003 mkdir("out", 0777)    ' + E,
        "100 10:00:00.000004 fchdir(3)         = 0",
        '100 10:00:00.000005 mkdir("x", 0777) ' + E,
    ]
    assert [(r.path, r.cwd_known) for r in read_trace(padded, "/")] == [
        ("/home/dev/proj/out", True),
        ("x", False),
    ]
    superseded = [
        '100 10:00:00.000001 chdir("/home/dev/proj/b") = 0',
        "100 10:00:00.000002 clone(child_stack=0x55, flags=CLONE_VM|CLONE_THREAD) = 101",
        '101 10:00:00.000003 chdir("/home/dev/proj/a") = 0',
        "100 10:00:00.000005 +++ superseded by execve in pid 101 +++",
        '100 10:00:00.000007 mkdir("new", 0777)' + E,
    ]
    assert [r.path for r in read_trace(superseded, "/")] == ["/home/dev/proj/a/new"]
    reused = [  # as strace -q records it when a pid's "+++ exited" line is missing
        "1 10:00:00.000001 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 7",
        '7 10:00:00.000002 chdir("/home/dev/.config/something") = 0',
        "7 10:00:00.000003 exit_group(0)                 = ?",
        "1 10:00:00.000004 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 7",
        '7 10:00:00.000005 mkdir("new", 0777)' + E,
    ]
    assert [r.path for r in read_trace(reused, "/home/dev/proj")] == ["/home/dev/proj/new"]
    appended = ['1 10:00:00.1 openat(AT_FDCWD, "/home/dev/f", O_RDONLY|O_APPEND) = -1 EACCES (x)']
    assert [r.intent for r in read_trace(appended, "/")] == ["read"]


def test_denials_above_the_directory_repositories_and_odd_homes_propose_nothing(tmp_path: Path):
    home = str(tmp_path / "home")
    for d in ("work/shared/out", "code/other/.git/objects", "code/bare.git/objects"):
        os.makedirs(f"{home}/{d}")
    os.makedirs(f"{home}/code/bare.git/refs")
    Path(f"{home}/code/bare.git/HEAD").write_text("ref: refs/heads/main\n")
    rules = [
        (f"{home}/work/shared", "deny-write", "base.yaml"),
        (f"{home}/work/shared/out", "rw", ""),
    ]
    attempts = [
        f"{home}/work/shared/out",  # rmdir: the directory is under a deny-write
        f"{home}/code/other/.git/index.lock",
        f"{home}/code/bare.git/objects/x",
        f"{home}/.local/lib/python3.11/site-packages/evil.pth",
        f"{home}/tools/go/bin/x",
    ]
    found = [Refusal(p, "unlinkat", "EROFS", "remove", "1") for p in attempts]
    rules_out, apart = classify(found, home=home, project=f"{home}/proj", rules=rules, protected=[])
    assert rules_out == []
    why = {r.path: r.why for r in apart}
    assert why[attempts[0]].startswith(f"refused on purpose: deny-write:{home}/work/shared")
    assert why[attempts[1]].startswith(f"it is inside the repository {home}/code/other/.git")
    assert why[attempts[2]].startswith(f"it is inside the repository {home}/code/bare.git")
    assert why[attempts[3]].endswith("~/.local/lib")
    assert why[attempts[4]].endswith("a bin/ directory")
    for odd_home, project in (("/", "/srv/p"), ("/root", "/")):
        one = [Refusal("/srv/p/x/y", "mkdir", "EROFS", "create", "1")]
        out, apart = classify(one, home=odd_home, project=project, rules=[], protected=[])
        assert out == [] and "egg proposes no rule there" in apart[0].why


def test_a_link_chain_too_deep_to_resolve_is_listed_not_a_crash(tmp_path: Path):
    home = str(tmp_path)
    os.makedirs(f"{home}/.local/share")
    previous = f"{home}/.local/share/end"
    os.makedirs(previous)
    for i in range(1500):
        link = f"{home}/.local/share/l{i}"
        os.symlink(previous, link)
        previous = link
    found = [Refusal(f"{previous}/x", "mkdir", "EROFS", "create", "1")]
    rules, apart = classify(found, home=home, project=f"{home}/p", rules=[], protected=[])
    assert rules == [] and apart[0].why.startswith(("its symlinks cannot", "reached through"))
