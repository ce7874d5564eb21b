"""The ``egg`` command line.

:func:`main` first offers ``egg exec`` to its cache of prepared launches (which needs nothing
beyond the standard library, see :mod:`egg_core.execcache`); everything else, and every cache
miss, goes to the full CLI in :mod:`egg_core.cli.app`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc and typing cost egg exec's fast path milliseconds
    from collections.abc import Mapping, Sequence


#: seconds a thread waits for the interpreter's lock before asking for it (sys.setswitchinterval)
#: on egg exec's cached path, where the socket gate's thread must answer bubblewrap promptly
HIT_SWITCH_INTERVAL = 0.00005


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    env = os.environ if environ is None else environ
    if args[:1] == ["tool-call"]:
        # inside a sandbox, on every tool call: the client alone, no CLI
        from egg_core.tools import client as toolclient

        return toolclient.main(args[1:])
    if args[:1] == ["exec"] and "--debug" not in args and env.get("EGG_DEBUG") != "1":
        import gc

        # A hit is a few milliseconds of work that leaves no garbage cycles worth a collection,
        # and one collection (every object the start made, walked) cost it 0.5-0.8 ms, often
        # while the socket gate answered bubblewrap's own bind. Collecting resumes once the
        # command is admitted (egg_core.cachedrun.admit_run), and on a miss.
        collecting = gc.isenabled()
        gc.disable()
        # The socket gate's thread answers bubblewrap's own calls while egg's main thread checks
        # the entry, and the sandbox's connects while it runs: it waits for the interpreter's
        # lock a switch interval at most, and answering bwrap's bind takes it three times
        # (a hit's median took 0.26 ms longer with the default 5 ms than with 0.2 ms, and 0.4 ms
        # longer with 0.2 ms than with 0.05 ms; 0.02 ms gained nothing more). A hit keeps it
        # until it exits; a miss puts the default back.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(HIT_SWITCH_INTERVAL)
        from egg_core import hitcode

        # what a hit imports from here on comes from one file of its cache (egg_core.hitcode)
        served = hitcode.install(env) if env.get("EGG_EXEC_CACHE") != "0" else None
        from egg_core.cachedrun import try_run

        code = try_run(args, env)
        if served is not None:
            if code is not None:
                hitcode.record(served)
            hitcode.uninstall(served)
        if code is not None and argv is None:
            _exit_now(code)
        sys.setswitchinterval(interval)
        gc.unfreeze()  # (called in-process: what the hit froze is the caller's to collect)
        if collecting:
            gc.enable()
        if code is not None:
            return code
        if env.get("EGG_EXEC_CACHE") != "0":
            # the full path, every host observation and environment read recorded for the
            # entry it stores (egg_core.observe)
            from egg_core import observe
            from egg_core.cli.app import run_cli

            with observe.recording():
                return run_cli(args, observe.RecordingEnviron(env))
    from egg_core.cli.app import run_cli

    return run_cli(args, env)


def _exit_now(code: int) -> None:
    """End a cached ``egg exec`` now: its work is done, and the interpreter's own teardown
    (every module's objects freed, one by one) would cost the launch about 1.5 ms more. What
    was registered to run at exit still runs, and what was written is flushed."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
