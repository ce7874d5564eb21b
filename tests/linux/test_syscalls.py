"""The seccomp filter and the namespace set-up (DESIGN.md §9 E): each escape syscall fails with
EPERM (the program sees a permission error, not a crash), for root as for anyone, and the
terminal cannot be injected into."""

from __future__ import annotations

import errno
import fcntl
import os
import platform
import pty
import select
import subprocess
import termios
import time

import pytest

from .conftest import PRELUDE, PY, Box

#: syscall numbers, per architecture
NUMBERS = {
    "x86_64": {
        "ptrace": 101,
        "unshare": 272,
        "setns": 308,
        "mount": 165,
        "pivot_root": 155,
        "chroot": 161,
        "io_uring_setup": 425,
        "keyctl": 250,
        "add_key": 248,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "open_by_handle_at": 304,
        "process_vm_readv": 310,
        "kcmp": 312,
        "fsopen": 430,
        "open_tree": 428,
        "clone": 56,
        "clone3": 435,
        "kexec_load": 246,
        "init_module": 175,
        "ioctl": 16,
    },
    "aarch64": {
        "ptrace": 117,
        "unshare": 97,
        "setns": 268,
        "mount": 40,
        "pivot_root": 41,
        "chroot": 51,
        "io_uring_setup": 425,
        "keyctl": 219,
        "add_key": 217,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "open_by_handle_at": 265,
        "process_vm_readv": 270,
        "kcmp": 272,
        "fsopen": 430,
        "open_tree": 428,
        "clone": 220,
        "clone3": 435,
        "kexec_load": 104,
        "init_module": 105,
        "ioctl": 29,
    },
}
NR = NUMBERS.get(platform.machine(), {})
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17

#: escape -> (probe code that makes the call with otherwise valid arguments, expected errno)
ESCAPES = {
    "ptrace": ("syscall(NR['ptrace'], 0, 0, 0, 0)", "EPERM"),  # PTRACE_TRACEME
    "unshare-user": (f"syscall(NR['unshare'], {CLONE_NEWUSER})", "EPERM"),
    "unshare-mount": (f"syscall(NR['unshare'], {CLONE_NEWNS})", "EPERM"),
    "unshare-net": (f"syscall(NR['unshare'], {CLONE_NEWNET})", "EPERM"),
    "clone-newuser": (
        f"pid = syscall(NR['clone'], {CLONE_NEWUSER | SIGCHLD}, 0, 0, 0, 0)\n"
        "    if pid == 0: os._exit(0)\n"
        "    os.waitpid(pid, 0)",
        "EPERM",
    ),
    "clone3": ("syscall(NR['clone3'], 0, 0)", "ENOSYS"),
    "setns": (
        "fd = os.open('/proc/self/ns/mnt', os.O_RDONLY)\n    syscall(NR['setns'], fd, 0)",
        "EPERM",
    ),
    "mount": (
        "syscall(NR['mount'], cstr('none'), cstr('/tmp'), cstr('tmpfs'), 0, 0)",
        "EPERM",
    ),
    "pivot_root": ("syscall(NR['pivot_root'], cstr('/tmp'), cstr('/tmp'))", "EPERM"),
    "chroot": ("syscall(NR['chroot'], cstr('/'))", "EPERM"),
    "fsopen": ("syscall(NR['fsopen'], cstr('tmpfs'), 0)", "EPERM"),
    "open_tree": ("syscall(NR['open_tree'], -100, cstr('/'), 0)", "EPERM"),
    "io_uring_setup": (
        "params = ctypes.create_string_buffer(256)\n"
        "    syscall(NR['io_uring_setup'], 4, ctypes.addressof(params))",
        "EPERM",
    ),
    "keyctl": ("syscall(NR['keyctl'], 0, -3, 1)", "EPERM"),  # KEYCTL_GET_KEYRING_ID
    "add_key": (
        "syscall(NR['add_key'], cstr('user'), cstr('egg'), cstr('x'), 1, -2)",
        "EPERM",
    ),
    "bpf": (
        "attr = ctypes.create_string_buffer(128)\n"
        "    syscall(NR['bpf'], 0, ctypes.addressof(attr), 128)",
        "EPERM",
    ),
    "perf_event_open": (
        "attr = ctypes.create_string_buffer(128)\n"
        "    syscall(NR['perf_event_open'], ctypes.addressof(attr), 0, -1, -1, 0)",
        "EPERM",
    ),
    "userfaultfd": ("syscall(NR['userfaultfd'], 0)", "EPERM"),
    "open_by_handle_at": (
        "handle = ctypes.create_string_buffer(128)\n"
        "    syscall(NR['open_by_handle_at'], -100, ctypes.addressof(handle), 0)",
        "EPERM",
    ),
    "process_vm_readv": (
        "syscall(NR['process_vm_readv'], os.getpid(), 0, 0, 0, 0, 0)",
        "EPERM",
    ),
    # compares two processes' kernel objects: an ASLR and descriptor oracle (Docker denies it)
    "kcmp": ("syscall(NR['kcmp'], os.getpid(), os.getpid(), 0, 0, 0)", "EPERM"),  # KCMP_FILE
    "kexec_load": ("syscall(NR['kexec_load'], 0, 0, 0, 0)", "EPERM"),
    "init_module": ("syscall(NR['init_module'], 0, 0, cstr(''))", "EPERM"),
    "vsock-socket": ("socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()", "EPERM"),
}


def escape_probe(code: str) -> str:
    return (
        f"NR = {NR!r}\n"
        "keep = []\n"
        "def cstr(text):\n"
        "    buf = ctypes.create_string_buffer(text.encode())\n"
        "    keep.append(buf)\n"
        "    return ctypes.addressof(buf)\n"
        "def escape():\n"
        f"    {code}\n"
        "report(result=attempt(escape))"
    )


@pytest.mark.skipif(not NR, reason=f"no syscall table for {platform.machine()}")
@pytest.mark.parametrize("escape", list(ESCAPES))
def test_escape_syscall_is_denied(box: Box, escape: str) -> None:
    code, expected = ESCAPES[escape]

    found = box.probe(escape_probe(code))

    assert found["result"] == expected


def test_unshare_command_cannot_make_a_namespace(box: Box) -> None:
    result = box.exec("unshare", "--user", "--map-root-user", "id", "-u")

    assert result.returncode != 0
    assert result.stdout == ""


def test_ptrace_attach_to_a_sibling_process_fails(box: Box) -> None:
    found = box.probe(
        escape_probe(
            "pid = os.fork()\n"
            "    if pid == 0:\n"
            "        time.sleep(5); os._exit(0)\n"
            "    try: syscall(NR['ptrace'], 16, pid, 0, 0)\n"  # PTRACE_ATTACH
            "    finally: os.kill(pid, 9); os.waitpid(pid, 0)"
        )
    )

    assert found["result"] == "EPERM"


def test_every_capability_is_dropped(box: Box) -> None:
    result = box.exec(
        "grep", "-E", "^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):", "/proc/self/status"
    )
    status = dict(line.split(":\t") for line in result.stdout.splitlines())

    assert status == {
        "CapPrm": "0000000000000000",
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
        "CapAmb": "0000000000000000",
        "NoNewPrivs": "1",
        "Seccomp": "2",
    }


# -- TIOCSTI: pushing characters into the terminal's input queue


TIOCSTI_PROBE = (
    PRELUDE
    + """
import fcntl, termios
def inject():
    for ch in b"egg-injected":
        fcntl.ioctl(0, termios.TIOCSTI, bytes([ch]))
report(tiocsti=attempt(inject))
"""
)


def run_on_terminal(argv: list[str], env: dict[str, str], cwd: str) -> tuple[int, bytes, str]:
    """Run ``argv`` with a fresh pty as its controlling terminal and stdin; stdout is a pipe.

    Returns (exit code, what the terminal showed, stdout). After the process exits, whatever
    an injection left in the terminal's input queue is read back as "what the terminal showed".
    """
    master, slave = pty.openpty()

    def controlling_tty() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        preexec_fn=controlling_tty,
    )
    out, _err = proc.communicate(timeout=30)
    shown = b""
    os.set_blocking(master, False)
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        if select.select([master], [], [], 0.05)[0]:
            try:
                shown += os.read(master, 4096)
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                break
    # anything injected is waiting in the slave's input queue
    os.set_blocking(slave, False)
    try:
        shown += os.read(slave, 4096)
    except BlockingIOError:
        pass
    os.close(master)
    os.close(slave)
    return proc.returncode, shown, out.decode()


def test_tiocsti_works_on_the_host_without_the_sandbox() -> None:
    """The control for the next test: this host lets a process inject into its terminal."""
    code, shown, out = run_on_terminal([PY, "-I", "-c", TIOCSTI_PROBE], dict(os.environ), "/")

    assert code == 0
    assert '"tiocsti": "ok"' in out
    assert b"egg-injected" in shown


def test_tiocsti_cannot_inject_into_the_terminal(box: Box) -> None:
    argv = box.command("exec", "--tty", "--", PY, "-I", "-c", TIOCSTI_PROBE)

    code, shown, out = run_on_terminal(argv, box.env(), str(box.workspace))

    assert code == 0, out
    assert '"tiocsti": "EPERM"' in out
    assert b"egg-injected" not in shown


#: TIOCSTI with bit 32 set, issued as the raw syscall so the full 64-bit register reaches the
#: filter (Python's ``fcntl.ioctl`` takes an unsigned int and would drop the high bits). The
#: kernel's ioctl takes ``unsigned int cmd``, so to it this request IS TIOCSTI: a filter that
#: compared all 64 bits would let it through (flatpak's CVE-2019-10063).
TIOCSTI_HIGH_BITS_PROBE = (
    PRELUDE
    + f"""
import termios
NR_IOCTL = {NR.get("ioctl", -1)}
REQUEST = termios.TIOCSTI | (1 << 32)
def inject():
    for ch in b"egg-injected":
        buf = ctypes.create_string_buffer(bytes([ch]), 1)
        syscall(NR_IOCTL, 0, REQUEST, ctypes.addressof(buf))
report(tiocsti=attempt(inject))
"""
)


@pytest.mark.skipif(not NR, reason=f"no syscall table for {platform.machine()}")
def test_tiocsti_with_high_bits_set_injects_on_the_host() -> None:
    """The control for the next test: the kernel reads only the low 32 bits of the request."""
    code, shown, out = run_on_terminal(
        [PY, "-I", "-c", TIOCSTI_HIGH_BITS_PROBE], dict(os.environ), "/"
    )

    assert code == 0, out
    assert '"tiocsti": "ok"' in out
    assert b"egg-injected" in shown


@pytest.mark.skipif(not NR, reason=f"no syscall table for {platform.machine()}")
def test_tiocsti_with_high_bits_set_cannot_inject_into_the_terminal(box: Box) -> None:
    argv = box.command("exec", "--tty", "--", PY, "-I", "-c", TIOCSTI_HIGH_BITS_PROBE)

    code, shown, out = run_on_terminal(argv, box.env(), str(box.workspace))

    assert code == 0, out
    assert '"tiocsti": "EPERM"' in out
    assert b"egg-injected" not in shown


# -- the i386 ABI: ``int 0x80`` from a 64-bit process must meet the same rules

INT80 = r"""
import mmap
CODE = bytes.fromhex("53 89f8 89f3 4189c8 89d1 4489c2 cd80 4863c0 5b c3")
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(CODE)
int80 = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long,
                         ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
low = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40)  # MAP_32BIT
low.write(bytes((ctypes.c_uint32 * 3)(40, 1, 0)))  # AF_VSOCK, SOCK_STREAM, 0
LOW = ctypes.addressof(ctypes.c_char.from_buffer(low))
def call32(number, a=0, b=0, c=0):
    result = int80(number, a, b, c)
    return "ok" if result >= 0 else errno.errorcode.get(-result, str(-result))
"""
#: i386 syscall numbers and arguments that would otherwise succeed (or fail differently)
I386_ESCAPES = {
    "ptrace": "call32(26, 0)",
    "unshare-user": f"call32(310, {CLONE_NEWUSER})",
    "keyctl": "call32(288, 0, 0xFFFFFFFD, 1)",
    "bpf": "call32(357, 0, 0, 0)",
    "io_uring_setup": "call32(425, 4, 0)",
    "kcmp": "call32(349, os.getpid(), os.getpid(), 0)",
    "vsock-socket": "call32(359, 40, 1, 0)",
    "vsock-socketcall": "call32(102, 1, LOW)",
}


def _i386_abi_works() -> bool:
    if platform.machine() != "x86_64":
        return False
    code = PRELUDE + INT80 + "report(pid=int80(20, 0, 0, 0) == os.getpid())"
    try:
        result = subprocess.run([PY, "-I", "-c", code], capture_output=True, text=True, timeout=30)
    except OSError:
        return False
    return result.returncode == 0 and '"pid": true' in result.stdout


@pytest.mark.skipif(
    not _i386_abi_works(), reason="this kernel runs no i386 code: nothing to walk around"
)
@pytest.mark.parametrize("escape", list(I386_ESCAPES))
def test_escape_syscall_is_denied_on_the_i386_abi(box: Box, escape: str) -> None:
    found = box.probe(INT80 + f"report(control=call32(20), result={I386_ESCAPES[escape]})")

    assert found == {"control": "ok", "result": "EPERM"}
