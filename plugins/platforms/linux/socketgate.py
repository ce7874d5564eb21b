"""The socket gate: every ``connect()`` a sandboxed process makes is judged, and carried out, by
egg on the host — so no host unix socket is reachable, however many there are, wherever they
are, and whenever they were bound; nor is any socket another sandbox bound.

Why not masks: ``connect()`` works through a read-only mount, so every socket a sandbox can see
by path is a way out. Masking each one at launch (what egg did before) read the host's socket
table, cost a mount per socket, failed with more than a thousand of them, missed sockets bound
after the launch and sockets of other network namespaces (another sandbox's), and made the exec
cache miss whenever any socket anywhere came or went. Landlock cannot help on this kernel line:
its ABI 6 scopes *abstract* unix sockets only (pathname sockets have no access right before
``LANDLOCK_ACCESS_FS_RESOLVE_UNIX``, which this machine's ABI 7 does not have).

How (see :mod:`.gate_filter` for the filters): ``connect`` and ``bind`` of the sandbox's native
ABI stop in the kernel and wait for egg (a seccomp user notification). egg

- reads the address from the caller's memory once, into its own copy;
- for a unix socket path, resolves it the way the caller would — in the caller's own root and
  mount namespace (``/proc/TID/root`` with ``openat2(RESOLVE_IN_ROOT)``) — to the socket's file,
  held open so that nothing can be swapped between the check and the connect;
- lets it through only when that file is **one this sandbox bound** (every ``bind`` is seen:
  egg keeps the file of each socket it bound, ``SIOCUNIXFILE``; only bwrap's own, made while a
  cache hit's command is held, goes on unlooked at) or **one egg grants** (the
  proxy's and tool server's sockets, a socket an ``rw:``/``ro:`` rule names exactly in a
  directory the sandbox cannot write: ``linux_ns.named_sockets``);
- and then connects the caller's own socket itself (``pidfd_getfd`` gives the same socket, not a
  copy) to that file, through ``/proc/self/fd/N``: what the caller's memory says afterwards does
  not matter. Other addresses (TCP through the network namespace, abstract unix names, which
  the namespace scopes) are connected as copied.

Everything else is the kernel's answer to egg's connect, returned to the caller as its own. A
refused socket is EACCES. The sandbox's own servers see egg as the connecting peer (SO_PEERCRED
names egg's process); the user is the same.

Limits: a sandbox holds at most :data:`MAX_OWN` sockets of its own at once; calls of the i386 and
x32 ABIs are refused; a relative path is resolved from the caller's working directory as the
caller sees it. Without egg (its process killed) every ``connect`` fails: the gate fails closed.

Why one module of this size: the listener's loop (receive a notification, judge it, carry it out,
answer) is one protocol with the kernel whose steps share each notification's lifetime and the
sandbox's own sockets; the filters are :mod:`.gate_filter`, the kernel ABI :mod:`.gate_abi`, the
socket diagnostics :mod:`.unixdiag`. It is on the exec cache's fast path, which every split
would make import one more module.
"""

from __future__ import annotations

import _thread
import errno
import fcntl
import os
import stat
import sys
import time

from . import gate_abi as abi

# _socket, select and struct are imported where they are used: a cache hit starts its sandbox
# before the gate serves (spawn_filtered), and their imports are then done while bwrap sets up

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _queue
    import _socket
    from collections.abc import Callable, Sequence
    from typing import Any

    from .gate_abi import Notification

MAX_OWN = 8192
#: sockets bind() was let through for whose bind has not shown yet (one each, however often it
#: is called on one socket); when full, those older than BIND_SETTLE are dropped, then binds are
#: refused (ENOBUFS): binds that fail would otherwise hold a descriptor each in egg
MAX_PENDING = 1024
#: connects carried out at once (the rest wait their turn)
MAX_WORKERS = 64
#: connects waiting for a worker; past them a blocking connect is refused (EAGAIN): each holds
#: two descriptors in egg, and a sandbox's own listener that never accepts keeps them there
MAX_QUEUED = 512
#: the gate's descriptor in the child is at or above this
CHILD_FD_FLOOR = 10
#: how long a socket just given to bind() may take to show as bound (another thread may connect
#: to it before the kernel has finished the bind egg let through)
BIND_SETTLE = 0.2
#: a socket whose bind never took effect (it failed, or the socket was swapped) is forgotten
PENDING_TTL = 5.0
_SYSCALLS = {
    "x86_64": {"connect": 42, "bind": 49, "prctl": 157, "seccomp": 317},
    "aarch64": {"connect": 203, "bind": 200, "prctl": 167, "seccomp": 277},
}.get(abi.MACHINE, {})
CONNECT = _SYSCALLS.get("connect", -1)
BIND = _SYSCALLS.get("bind", -1)
#: the loading of a seccomp filter (the filter sends egg no other prctl or seccomp call)
FILTER_LOADS = (_SYSCALLS.get("prctl", -1), _SYSCALLS.get("seccomp", -1))
SOCKADDR_MAX = 128  # sizeof(struct sockaddr_storage): longer is EINVAL, as the kernel says
AF_UNIX = 1  # socket.AF_UNIX
Key = tuple[int, int]


class Grants:
    """Sockets egg itself lets a sandbox reach: files named exactly, and every socket directly
    in egg's own directories (the proxy's, the tool server's), which no sandbox can write."""

    def __init__(self, files: Sequence[str] = (), directories: Sequence[str] = ()) -> None:
        self.files = tuple(files)
        self.directories = tuple(directories)

    def as_json(self) -> dict[str, list[str]]:
        return {"files": list(self.files), "directories": list(self.directories)}

    @classmethod
    def from_json(cls, data: dict[str, list[str]]) -> Grants:
        return cls(data.get("files", ()), data.get("directories", ()))

    def granted(self, key: Key) -> bool:
        """Whether the socket file ``key`` (device, inode) is one of them now (looked up each
        time: egg binds sockets in its directories while a sandbox runs)."""
        for path in self.files:
            if _key_of(path) == key:
                return True
        for directory in self.directories:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) == key:
                    return True
        return False


def _why(exc: BaseException) -> str:
    """Why the filters could not be loaded, in a user's words."""
    if isinstance(exc, OSError) and exc.errno == errno.EBUSY:
        return "another supervisor already filters this process (egg inside egg?)"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _key_of(path: str) -> Key | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISSOCK(st.st_mode) else None


class Gate:
    """One sandbox's gate. Made before the spawn; then either :meth:`spawn_filtered` starts the
    sandbox from a thread that loaded the filters (no fork: egg exec's cache hit), or
    :meth:`child_setup` runs in a forked child (between fork and exec) and :meth:`started` in
    egg once the child exists; :meth:`close` at the end.

    With ``hold``, the sandbox's command is held at bubblewrap's last step — loading the
    sandbox's own seccomp filter, which it does right before it runs the command and after its
    ``--die-with-parent`` binds it to egg's life — until egg lets it go (:meth:`release`):
    egg exec's cache hit starts bwrap before its last checks and admits the command after them.
    Nothing of the sandbox but bwrap's own code runs before that. Were egg killed meanwhile, the
    kernel fails the held call (ENOSYS, as every call sent to a listener that is gone), and
    bwrap ends there without running the command."""

    def __init__(self, programs: Sequence[bytes], grants: Grants, hold: bool = False) -> None:
        self.programs = [abi.Program(bpf) for bpf in programs]
        self.grants = grants
        # the channel a forked child sends the listener back on (see child_fd): made when
        # asked for, as spawn_filtered needs none
        self._parent: _socket.socket | None = None
        self._child: _socket.socket | None = None
        self.listener: int | None = None
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)
        self._spawner = _thread.allocate_lock()  # held while spawn_filtered's thread must live
        self._spawner_held = False  # by egg: close() lets it go, once
        self._started = False
        self._ended = False  # the gate's thread has ended
        self._handed_over = False  # close() left the letting go to the gate's thread
        self._lock = _thread.allocate_lock()
        self._own: dict[Key, int] = {}  # socket file -> an O_PATH descriptor holding it
        self._pending: dict[int, Pending] = {}  # sockets bind() was called on, not yet bound
        self._diag: bool | None = None  # see _by_name
        self.error: str | None = None
        self._workers = Workers()
        # the hold (see the class): every filter's loading is held, with whether bwrap ran when
        # it came, until release() said what the command is to be given (_go: stderr) and
        # which process is the sandbox's pid 1 (_init), and pid 1's own loading came while bwrap
        # ran (_armed: it had armed its parent-death signal); _sandbox: bwrap's pid
        self._holding = hold
        self._held: list[tuple[Notification, bool]] = []
        self._init: int | None = None
        self._armed = False
        self._go: int | None = None
        self._sandbox: int | None = None

    @property
    def child_fd(self) -> int:
        """The descriptor a forked child needs (pass it through the spawn's descriptor
        sealing) to send the listener back: see :meth:`child_setup` and :meth:`started`."""
        if self._child is None:
            # _socket, _thread, _queue: the C modules alone (egg exec's cache hit imports this)
            import _socket

            self._parent, child = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
            # above the numbers spawners put things at in the child (the command's stderr at 9)
            moved = fcntl.fcntl(child.fileno(), fcntl.F_DUPFD_CLOEXEC, CHILD_FD_FLOOR)
            child.close()
            self._child = _socket.socket(fileno=moved)
            os.set_inheritable(moved, True)
        return self._child.fileno()

    def _load_filters(self) -> int:
        """Load the filters on the calling thread (inherited by what it starts); returns the
        listener, which is close-on-exec: it never reaches the sandbox. The native filter, the
        one with the listener, is loaded last: it sends egg every filter's loading, and nothing
        serves its listener yet."""
        abi.no_new_privs()
        for program in self.programs[1:]:
            program.load()
        return self.programs[0].load(
            abi.SECCOMP_FILTER_FLAG_NEW_LISTENER | abi.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
        )

    # -- in the child

    def child_setup(self) -> None:
        """Load the filters (the listener goes back to egg, never on into the sandbox). Never
        raises: a failure is sent to egg and the child exits with 125."""
        import _socket
        import struct

        channel = self._child
        assert channel is not None, "child_fd was not passed to the child"
        try:
            listener = self._load_filters()
            try:
                rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("i", listener))]
                channel.sendmsg([b"L"], rights)
            finally:
                os.close(listener)
            channel.close()
        except BaseException as exc:
            try:
                channel.sendall(b"E" + _why(exc).encode("utf-8", "replace")[:500])
            except OSError:
                pass
            os._exit(125)

    # -- in egg

    def spawn_filtered(self, spawn: Callable[[], int]) -> Callable[[], int]:
        """Run ``spawn`` (which starts the sandbox with ``os.posix_spawn`` and returns its pid)
        on a thread of its own that loads the filters first, so that the process it starts
        inherits them, and judge with that thread's listener. Returns once the gate judges,
        with the spawn under way: the function returned waits for its pid (and raises what
        ``spawn`` raised), so that egg can go on with its own work while the kernel loads
        bwrap. Raises OSError when the filters cannot be loaded (the reason in :attr:`error`).

        egg's own process is not forked (a fork copies it, about 0.7 ms of a cache hit):
        seccomp filters and ``no_new_privs`` belong to the thread that set them and what it
        starts, never to egg's other threads. The thread lives until :meth:`close`: it is what
        the kernel takes for the sandbox's parent, and bwrap's ``--die-with-parent`` kills the
        sandbox when its parent *thread* ends."""
        outcome: dict[str, Any] = {}
        loaded = _thread.allocate_lock()
        loaded.acquire()
        spawned = _thread.allocate_lock()
        spawned.acquire()
        self._spawner.acquire()
        self._spawner_held = True

        def filtered() -> None:
            try:
                outcome["listener"] = self._load_filters()
            except BaseException as exc:
                outcome["filters"] = exc
                loaded.release()
                spawned.release()
                return
            loaded.release()
            try:
                outcome["pid"] = self._sandbox = spawn()
            except BaseException as exc:
                outcome["spawn"] = exc
            finally:
                spawned.release()
            # the sandbox's parent, as long as egg needs it (see above)
            self._spawner.acquire()
            self._spawner.release()

        _thread.start_new_thread(filtered, ())
        loaded.acquire()
        if "filters" in outcome:
            self.error = f"cannot start the socket gate: {_why(outcome['filters'])}"
            raise OSError(errno.EPERM, self.error)
        self.listener = outcome["listener"]
        self._started = True
        # serving from the spawn on: egg's descriptor limit is raised then (it is the
        # process's, and bwrap must get egg's own, as on the full path)
        _thread.start_new_thread(self._serve_then_let_go, (spawned,))

        def pid() -> int:
            with spawned:
                if "spawn" in outcome:
                    raise outcome["spawn"]
                return int(outcome["pid"])

        return pid

    def started(self) -> None:
        """Take the listener from the child and start judging. Raises OSError (with the child's
        reason) when the child could not load the filters."""
        import _socket
        import struct

        parent, child = self._parent, self._child
        assert parent is not None and child is not None, "child_fd was not passed to the child"
        child.close()
        parent.settimeout(10)
        message, ancillary, _, _ = parent.recvmsg(600, _socket.CMSG_SPACE(4))
        parent.close()
        fds = [
            struct.unpack("i", data[:4])[0]
            for level, kind, data in ancillary
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(data) >= 4
        ]
        if not message.startswith(b"L") or not fds:
            for fd in fds:
                os.close(fd)
            reason = message[1:].decode("utf-8", "replace") or "the child exited"
            self.error = f"cannot start the socket gate: {reason}"
            raise OSError(errno.EPERM, self.error)
        self.listener = fds[0]
        self._started = True
        _thread.start_new_thread(self._serve_then_let_go, ())

    def close(self) -> None:
        """Stop judging (calls still waiting fail: the gate fails closed) and let go of
        everything held. When the gate's thread still runs, it is told to end and lets go of
        the listener and the rest itself as it does (:meth:`_let_go`), once it is done with the
        call it may be carrying out: egg does not wait for it (two wake-ups and the
        interpreter's lock cost a cache hit 0.4 ms at its very end), and nothing the thread uses
        is closed under it. Calling it again does nothing."""
        for sock in (self._child, self._parent):
            if sock is not None:
                sock.close()
        with self._lock:
            spawner_held, self._spawner_held = self._spawner_held, False
        if spawner_held:  # the sandbox has been waited for: its parent may end
            self._spawner.release()
        with self._lock:
            serving = self._started and not self._ended
            self._started = False
            if serving:
                self._handed_over = True
                os.write(self._wake_write, b"x")  # (the thread closes the pipe only after this)
                return
            if self._handed_over:
                return  # the thread lets go, or has
        self._let_go()

    def _let_go(self) -> None:
        """Close the listener, the wake-up pipe and every socket file and bind held: once, by
        :meth:`close` or by the gate's thread as it ends after a close."""
        with self._lock:
            fds = [self.listener if self.listener is not None else -1]
            fds += [self._wake_read, self._wake_write]
            self.listener = None
            self._wake_read = self._wake_write = -1
            fds += self._own.values()
            self._own.clear()
            pending = list(self._pending.values())
            self._pending.clear()
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        for item in pending:
            item.close()

    def _serve_then_let_go(self, spawned: Any = None) -> None:
        try:
            # what serving needs, made while the kernel starts bwrap (see the module's imports)
            import _socket  # noqa: F401
            import select  # noqa: F401

            abi.ready_to_serve()
            if spawned is not None:  # the sandbox has been started (or could not be)
                with spawned:
                    pass
            self._serve()
        finally:
            with self._lock:
                self._ended = True
                handed_over = self._handed_over
            if handed_over:  # closed while it served: what it used is let go now
                self._let_go()

    def _serve(self) -> None:
        listener = self.listener
        assert listener is not None
        import select

        poller = select.poll()
        poller.register(listener, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        raised = False
        while True:
            events = dict(poller.poll())
            if self._wake_read in events:
                return
            state = events.get(listener, 0)
            if state & select.POLLIN:
                try:
                    call = abi.receive(listener)
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.EINTR):
                        continue
                    return
                try:
                    self._dispatch(listener, call)
                except Exception:  # one bad call must not stop the gate
                    try:
                        abi.respond(listener, call.id, error=errno.EACCES)
                    except OSError:
                        pass
                if not raised:
                    # after the first call, not before the launch (importing resource costs
                    # 0.15 ms: bubblewrap's own first call, its loopback's bind, waits for it)
                    raised = True
                    _raise_fd_limit()
            elif state & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                return  # no process of the sandbox is left

    def _dispatch(self, listener: int, call: Notification) -> None:
        if call.arch != abi.NATIVE_ARCH:
            abi.respond(listener, call.id, error=errno.EPERM)
            return
        if call.nr == BIND:
            self._on_bind(listener, call)
        elif call.nr == CONNECT:
            self._on_connect(listener, call)
        elif call.nr in FILTER_LOADS:
            self._on_filter_load(listener, call)
        else:
            abi.respond(listener, call.id, error=errno.ENOSYS)

    # -- a filter's loading: the command's held until release() (see the class)

    def _on_filter_load(self, listener: int, call: Notification) -> None:
        with self._lock:
            holding = self._holding
        if not holding:
            # whatever a process adds to its filters only takes from what it may do
            abi.respond(listener, call.id, cont=True)
            return
        running = self._bwrap_runs()
        with self._lock:
            self._held.append((call, running))
        self._go_when_ready(listener)

    def release(self, stderr: int, init: int) -> None:
        """Let the sandbox's command start, now if bwrap holds it already, else as soon as it
        does (the gate's thread lets it go then, without waiting for egg's): the process that
        is to run it gets egg's descriptor ``stderr`` as its standard error (bwrap's own set-up
        errors went to a pipe of egg's until then), and from then on a filter's loading goes on
        at once.

        ``init`` is the sandbox's pid 1 as bwrap reported it (``--json-status-fd``'s
        ``child-pid``: the same numbering as the calls', whatever ``/proc`` egg sees). Nothing
        goes until its own filter's loading came while bwrap ran: bwrap's pid 1 arms its
        parent-death signal just before, so from then on the sandbox ends with bwrap, and a
        bwrap that ended before (a signal egg passed on to it while it set up) may have left a
        pid 1 that is bound to nothing, whose command would run on its own. The command's
        process is the one other process that loads a filter then (bwrap's forks before it runs
        nothing else); it goes only while bwrap runs, and with the descriptor it is to have —
        otherwise it is refused, and bwrap ends there."""
        listener = self.listener
        if listener is None:
            return
        with self._lock:
            self._go, self._init = stderr, init
        self._go_when_ready(listener)

    def command_held(self, init: int) -> bool:
        """Whether a process of the sandbox other than its pid 1 (``init``) is held at its
        filter's loading, not yet let go: before the release, bwrap's process that is to run
        the command (see :meth:`release`)."""
        with self._lock:
            return self._holding and any(call.pid != init for call, _ in self._held)

    def _go_when_ready(self, listener: int) -> None:
        with self._lock:
            init, go = self._init, self._go
            if init is None or go is None:
                return
            for call, running in self._held:
                if call.pid == init and running:
                    self._armed = True
            pid_1 = [call for call, _ in self._held if call.pid == init]
            others = [call for call, _ in self._held if call.pid != init]
            going = bool(self._armed and others)
            if going:
                self._held, self._holding = [], False
            elif self._armed:
                self._held = [(call, running) for call, running in self._held if call not in pid_1]
            else:
                pid_1 = []
        for call in pid_1:  # (armed: it goes on to wait for the command)
            _respond(listener, call.id)
        if not going:
            return
        for index, call in enumerate(others):
            if index or not self._bwrap_runs():
                _respond(listener, call.id, errno.EPERM)
                continue
            try:
                abi.add_fd(listener, call.id, go, 2)
            except OSError:
                _respond(listener, call.id, errno.EPERM)  # never without what it was to have
                continue
            _respond(listener, call.id)

    def _bwrap_runs(self) -> bool:
        """Whether the process spawn_filtered started has not ended (egg has not waited for
        it: its pid is still its own)."""
        sandbox = self._sandbox
        if sandbox is None:
            return False
        try:
            return os.waitid(os.P_PID, sandbox, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except OSError:
            return False

    # -- bind: let it through, remember the socket

    def _on_bind(self, listener: int, call: Notification) -> None:
        with self._lock:
            holding = self._holding
        if holding:
            # The command is held (see the class): nothing but bwrap's own set-up runs in the
            # sandbox until it is let go, and bwrap binds no unix socket (this is its loopback's
            # netlink socket). So it goes on at once, not looked at: bwrap waits for the answer
            # on a cache hit's path, while egg's main thread competes for the interpreter.
            # From the release on (_go_when_ready clears _holding before the command's call is
            # answered) every bind is looked at.
            abi.respond(listener, call.id, cont=True)
            return
        pending = self._pending_of(listener, call)
        if pending is not None:
            with self._lock:
                kept = self._keep(pending)
            if not kept:
                abi.respond(listener, call.id, error=errno.ENOBUFS)
                return
        # whatever the socket and the address: binding makes a socket only this sandbox has
        abi.respond(listener, call.id, cont=True)

    def _pending_of(self, listener: int, call: Notification) -> Pending | None:
        """The socket the call binds, to learn its file once bound; None when there is nothing
        to learn (not a unix socket, or one with an address already: an accepted one bears its
        listener's file, another may come from a host service; either fails this bind, and its
        file is not one the sandbox made) or the caller is gone."""
        try:
            sock = _take_socket(call.pid, call.args[0])
        except OSError:
            return None
        view = None
        try:
            if not _unbound_unix(sock):
                return None
            if self._by_name(sock):
                # where the binder stands, kept for when egg must find the file by its name
                # (see _bound_file): the binder may have moved on, or exited, by then
                view = View.of(call.pid)
            # the pid named the caller only while its call waits: a thread killed meanwhile
            # frees its number for any process, whose descriptor egg would have taken
            if not abi.still_waiting(listener, call.id):
                return None
            pending = Pending(sock, time.monotonic(), view)
            sock, view = -1, None
            return pending
        except OSError:
            return None
        finally:
            if sock >= 0:
                os.close(sock)
            if view is not None:
                view.close()

    def _keep(self, pending: Pending) -> bool:
        """Add ``pending`` (in place of an earlier bind of the same socket); False, with it
        closed, when MAX_PENDING binds are waiting and none is old enough to drop. Called with
        the lock held."""
        earlier = self._pending.pop(pending.ident, None)
        if earlier is not None:
            earlier.close()
        if len(self._pending) >= MAX_PENDING:
            self._settle()
            now = time.monotonic()
            for ident, item in list(self._pending.items()):
                if now - item.since >= BIND_SETTLE:  # not bound by now: that bind failed
                    item.close()
                    del self._pending[ident]
        if len(self._pending) >= MAX_PENDING:
            pending.close()
            return False
        self._pending[pending.ident] = pending
        return True

    def _by_name(self, sock: int) -> bool:
        """Whether egg lacks SIOCUNIXFILE over the sandbox's sockets (the host's network
        namespace, an unprivileged user): learnt from the first socket (still unbound, so the
        kernel answers EPERM for the capability, or ENOENT)."""
        if self._diag is None:
            try:
                os.close(abi.unix_file(sock))
                self._diag = False
            except OSError as exc:
                self._diag = exc.errno == errno.EPERM
        return self._diag

    def _settle(self) -> bool:
        """Move the sockets that are bound by now to the sandbox's own; whether a bind let
        through less than BIND_SETTLE ago is still unsettled. Called with the lock held."""
        now = time.monotonic()
        waiting: dict[int, Pending] = {}
        for item in self._pending.values():
            held = self._bound_file(item)
            if held is None and now - item.since < PENDING_TTL:
                waiting[item.ident] = item
                continue
            item.close()
            if held is None:
                continue
            st = os.fstat(held)
            key = (st.st_dev, st.st_ino)
            if key in self._own or len(self._own) >= MAX_OWN:
                self._forget_unlinked()
            if key in self._own or len(self._own) >= MAX_OWN:
                os.close(held)
                continue
            self._own[key] = held
        self._pending = waiting
        return any(now - item.since < BIND_SETTLE for item in waiting.values())

    def _bound_file(self, item: Pending) -> int | None:
        """The file the socket is bound at (an O_PATH descriptor), or None while it is not."""
        if self._diag is not True:
            try:
                held = abi.unix_file(item.sock)
            except OSError as exc:
                if exc.errno != errno.EPERM:
                    self._diag = False
                    return None
                self._diag = True  # and from now on every bind keeps its binder's view
            else:
                self._diag = False
                return held
        # EPERM: the socket is in a network namespace egg has no CAP_NET_ADMIN over — the
        # host's, for a sandbox with `network: *` run by an unprivileged user
        if item.view is None:
            return None
        from . import unixdiag

        return unixdiag.bound_file(item.sock, item.view)

    def _forget_unlinked(self) -> None:
        for key, fd in list(self._own.items()):
            try:
                gone = os.fstat(fd).st_nlink == 0
            except OSError:
                gone = True
            if gone:
                os.close(fd)
                del self._own[key]

    # -- connect: judge, then carry it out

    def _on_connect(self, listener: int, call: Notification) -> None:
        fd, pointer, length = call.args[0], call.args[1], call.args[2]
        sock = -1
        target = -1
        view = None
        try:
            if length > SOCKADDR_MAX or length < 2:
                raise OSError(errno.EINVAL, "bad address length")
            address = _read_memory(call.pid, pointer, length)
            sock = _take_socket(call.pid, fd)
            family = int.from_bytes(address[:2], sys.byteorder)  # (the machine's own order)
            path = family == AF_UNIX and len(address) > 2 and address[2] != 0
            if path:
                view = View.of(call.pid)
            # everything read from /proc/PID above is that caller's while its call waits
            if not abi.still_waiting(listener, call.id):
                raise OSError(errno.ESRCH, "the caller is gone")
            if view is not None:
                name = address[2:].split(b"\0", 1)[0]
                target = view.resolve(name)
                address = self._judge(target)
        except OSError as exc:
            for held in (sock, target):
                if held >= 0:
                    os.close(held)
            abi.respond(listener, call.id, error=exc.errno or errno.EACCES)
            return
        finally:
            if view is not None:
                view.close()
        # A blocking connect may take long (a TCP handshake): never in the loop. (The sandbox
        # can clear O_NONBLOCK between this look and the connect below, and so stall its own
        # gate while a connect of its waits: its own calls only, which any of its processes
        # could stop anyway; handing every connect off would cost each a thread's wake-up.)
        if os.get_blocking(sock):
            if not self._workers.submit(
                lambda: self._connect(listener, call.id, sock, target, address)
            ):
                for held in (sock, target):
                    if held >= 0:
                        os.close(held)
                abi.respond(listener, call.id, error=errno.EAGAIN)
        else:
            self._connect(listener, call.id, sock, target, address)

    def _judge(self, target: int) -> bytes:
        """The address to connect to for the socket file ``target``; EACCES when it is neither
        this sandbox's own nor granted."""
        st = os.fstat(target)
        if not stat.S_ISSOCK(st.st_mode):
            raise OSError(errno.ECONNREFUSED, "not a socket")
        key = (st.st_dev, st.st_ino)
        deadline = time.monotonic() + BIND_SETTLE
        while True:
            with self._lock:
                unsettled = self._settle()
                own = key in self._own
            if own or self.grants.granted(key):
                family = AF_UNIX.to_bytes(2, sys.byteorder)
                return family + b"/proc/self/fd/%d\0" % target
            if not unsettled or time.monotonic() > deadline:
                break
            time.sleep(0.002)
        raise OSError(errno.EACCES, "not this sandbox's socket")

    def _connect(self, listener: int, ident: int, sock: int, target: int, address: bytes) -> None:
        try:
            error = abi.connect(sock, address)
        finally:
            os.close(sock)
            if target >= 0:
                os.close(target)
        abi.respond(listener, ident, error=error)


class Workers:
    """Threads that carry out blocking connects, kept for the next (starting a thread for each
    would cost more than most connects), at most :data:`MAX_WORKERS` at once; more wait."""

    def __init__(self) -> None:
        # made with the first job: _queue is a shared library of its own (0.3 ms to load),
        # and most sandboxes never make a connect that needs a worker
        self._jobs: _queue.SimpleQueue[Callable[[], None]] | None = None
        self._lock = _thread.allocate_lock()
        self._idle = 0
        self._count = 0

    def submit(self, job: Callable[[], None]) -> bool:
        """Run ``job`` in a worker; False (not run) when MAX_QUEUED jobs wait already."""
        if self._jobs is None:
            import _queue

            with self._lock:
                if self._jobs is None:
                    self._jobs = _queue.SimpleQueue()
        with self._lock:
            start = self._idle <= 0 and self._count < MAX_WORKERS
            if start:
                self._count += 1
            elif self._idle <= -MAX_QUEUED:  # _idle below 0: jobs waiting for a worker
                return False
            else:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            _thread.start_new_thread(self._work, ())
        return True

    def _work(self) -> None:
        jobs = self._jobs
        assert jobs is not None  # submit made it before starting any worker
        while True:
            job = jobs.get()
            try:
                job()
            except Exception:  # a job answers its own call: never let one end the worker
                pass
            with self._lock:
                self._idle += 1


def _respond(listener: int, ident: int, error: int = 0) -> None:
    """Answer a held call: let it go on, or fail it with ``error``; a call whose caller is gone
    needs no answer."""
    try:
        if error:
            abi.respond(listener, ident, error=error)
        else:
            abi.respond(listener, ident, cont=True)
    except OSError:
        pass


def _take_socket(tid: int, fd: int) -> int:
    """The caller's descriptor ``fd`` (the same open file, not a copy)."""
    try:
        pidfd = abi.pidfd_open(tid, abi.PIDFD_THREAD)
    except OSError:
        pidfd = abi.pidfd_open(_tgid(tid))
    try:
        return abi.pidfd_getfd(pidfd, fd)
    except OSError as exc:
        if exc.errno == errno.EBADF:
            raise
        raise OSError(errno.EBADF, "no such descriptor") from exc
    finally:
        os.close(pidfd)


def _tgid(tid: int) -> int:
    with open(f"/proc/{tid}/status", "rb") as handle:
        for line in handle:
            if line.startswith(b"Tgid:"):
                return int(line.split()[1])
    return tid


def _unbound_unix(sock: int) -> bool:
    """Whether ``sock`` is a unix socket with no address yet (False for a file: no socket)."""
    import _socket

    copy = os.dup(sock)
    try:
        probe = _socket.socket(fileno=copy)
    except OSError:
        os.close(copy)  # socket() does not take a descriptor it refuses
        return False
    try:
        return bool(probe.family == AF_UNIX and not probe.getsockname())
    finally:
        probe.close()


def _read_memory(tid: int, pointer: int, length: int) -> bytes:
    try:
        fd = os.open(f"/proc/{tid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise OSError(errno.ESRCH, "the caller is gone") from exc
    try:
        data = os.pread(fd, length, pointer)
    except OSError as exc:
        raise OSError(errno.EFAULT, "bad address") from exc
    finally:
        os.close(fd)
    if len(data) != length:
        raise OSError(errno.EFAULT, "bad address")
    return data


class View:
    """Where a thread stands — its root and working directory, opened while its call waits —
    to resolve a socket path as it would."""

    def __init__(self, root: int, cwd: int, cwd_path: bytes) -> None:
        self.root, self.cwd, self.cwd_path = root, cwd, cwd_path

    @classmethod
    def of(cls, tid: int) -> View:
        flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
        root = os.open(f"/proc/{tid}/root", flags)
        try:
            cwd = os.open(f"/proc/{tid}/cwd", flags)
        except OSError:
            os.close(root)
            raise
        try:
            # the working directory as the thread sees it (its own mount namespace)
            cwd_path = os.readlink(f"/proc/{tid}/cwd").encode()
        except OSError:
            cwd_path = b""
        return cls(root, cwd, cwd_path)

    def resolve(self, path: bytes) -> int:
        """An O_PATH descriptor of ``path`` as the thread would find it, never leaving its root:
        absolute from its root; relative from its working directory, named from the root when
        that name is known (so ``..`` goes where it would), else from the directory itself."""
        how = abi.RESOLVE_IN_ROOT | abi.RESOLVE_NO_MAGICLINKS
        if path.startswith(b"/"):
            return abi.openat2(self.root, path, os.O_PATH, how)
        known = self.cwd_path
        if known.startswith(b"/") and not known.endswith(b" (deleted)"):
            return abi.openat2(self.root, known.rstrip(b"/") + b"/" + path, os.O_PATH, how)
        return abi.openat2(self.cwd, path, os.O_PATH, how)

    def close(self) -> None:
        for fd in (self.root, self.cwd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.root = self.cwd = -1


class Pending:
    """A socket bind() was let through for, until egg sees the file it is bound at."""

    __slots__ = ("ident", "since", "sock", "view")

    def __init__(self, sock: int, since: float, view: View | None) -> None:
        self.sock, self.since, self.view = sock, since, view
        self.ident = os.fstat(sock).st_ino  # the socket itself, however many descriptors

    def close(self) -> None:
        os.close(self.sock)
        if self.view is not None:
            self.view.close()


def _raise_fd_limit() -> None:
    """Each socket a sandbox binds is held open by egg: lift egg's own soft descriptor limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, MAX_OWN + 3 * MAX_PENDING + 1024))
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (OSError, ValueError):
            pass
