"""The syscall filter of the linux-ns sandbox, built with libseccomp and handed to bwrap as BPF.

Denied with EPERM (the program sees an ordinary permission error, not a crash):
- namespace and mount escapes: mount, umount2, pivot_root, setns, unshare, the new mount API
  (fsopen, fsconfig, fsmount, move_mount, open_tree, mount_setattr), and clone/clone3 with
  namespace flags (clone3 passes its flags in memory a filter cannot read, so it answers ENOSYS and
  libc falls back to clone);
- process inspection and injection: ptrace, process_vm_readv/writev, kcmp (it compares two
  processes' kernel objects: an oracle for their address space and descriptors; Docker denies it);
- kernel attack surface: bpf, perf_event_open, userfaultfd, io_uring_setup/enter/register (its
  socket operations bypass socket rules), keyctl/add_key/request_key, open_by_handle_at;
- host administration: kexec_load/kexec_file_load, init/finit/delete_module, reboot,
  swapon/swapoff, acct, clock_settime/clock_adjtime/settimeofday/adjtimex, iopl/ioperm/modify_ldt,
  quotactl, lookup_dcookie, uselib, nfsservctl, vhangup;
- sockets the network namespace does not confine: AF_VSOCK (on i386, whose socketcall() hides
  the family in memory, libseccomp denies socketcall(SOCKET) outright; glibc calls socket());
- terminal injection: ioctl TIOCSTI and TIOCLINUX, compared on the low 32 bits (the kernel ignores
  the high ones; bubblewrap's CVE-2017-5226 lesson).
On x86_64 the same rules cover the i386 and x32 ABIs, so a 32-bit syscall cannot walk around them.
"""

from __future__ import annotations

import errno
import hashlib
import os
import platform
import tempfile
from pathlib import Path

DENIED_SYSCALLS = (
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "setns",
    "unshare",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "open_by_handle_at",
    "name_to_handle_at",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "clock_settime",
    "clock_settime64",
    "clock_adjtime",
    "clock_adjtime64",
    "settimeofday",
    "stime",
    "adjtimex",
    "iopl",
    "ioperm",
    "modify_ldt",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "uselib",
    "nfsservctl",
    "vhangup",
)
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
#: vsock is not confined by the network namespace: in a VM it reaches the hypervisor's host
AF_VSOCK = 40
FILTER_VERSION = "3"  # 3: built as a binary tree


def build_bpf() -> bytes:
    """Compile the filter for this machine's architecture(s); returns the BPF program."""
    import pyseccomp as sc

    filt = sc.SyscallFilter(sc.ALLOW)
    try:
        # a binary tree of syscall numbers, not a list walked to its end by every call the
        # filter allows (libseccomp 2.5): about 0.2 ms of each launch, and every call inside
        filt.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except (OSError, ValueError, RuntimeError, AttributeError):
        pass  # an older libseccomp: the same filter, as a list
    if platform.machine() == "x86_64":
        for arch in (sc.Arch.X86, sc.Arch.X32):
            try:
                filt.add_arch(arch)
            except OSError:
                pass  # then libseccomp's bad-arch action (kill) covers that ABI
    eperm = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            filt.add_rule(eperm, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a syscall on this architecture
    for request in (TIOCSTI, TIOCLINUX):
        filt.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    for flag in CLONE_NAMESPACE_FLAGS:
        filt.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    filt.add_rule(eperm, "socket", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, AF_VSOCK))
    try:
        filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except (OSError, ValueError, RuntimeError):
        pass
    with tempfile.TemporaryFile() as handle:
        filt.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def cache_key() -> str:
    rules = ",".join(DENIED_SYSCALLS) + f"|{TIOCSTI}|{TIOCLINUX}|{CLONE_NAMESPACE_FLAGS}|{AF_VSOCK}"
    return hashlib.sha256(f"{FILTER_VERSION}|{platform.machine()}|{rules}".encode()).hexdigest()[
        :16
    ]


def bpf_file(cache_dir: Path | None) -> Path | None:
    """Path of the compiled filter in ``cache_dir`` (compiled on first use); None if uncachable.

    The cache lives in ``$EGG_HOME/cache``, which no sandbox can read or write.
    """
    if cache_dir is None:
        return None
    path = cache_dir / f"seccomp-{cache_key()}.bpf"
    try:
        if path.is_file() and path.stat().st_size > 0 and path.stat().st_size % 8 == 0:
            return path
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = build_bpf()
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return path
    except OSError:
        return None


def open_bpf_fd(cache_dir: Path | None) -> int:
    """A readable fd positioned at the start of the BPF program, for ``bwrap --seccomp FD``."""
    path = bpf_file(cache_dir)
    if path is not None:
        fd = os.open(path, os.O_RDONLY)
    else:
        data = build_bpf()
        fd = os.memfd_create("egg-seccomp", 0)
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd
