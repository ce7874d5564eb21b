"""A tiny reader for the SBPL egg writes, and the structural check every generated profile passes.

The reader follows TinyScheme's (the interpreter libsandbox embeds): ``;`` comments to the end of
the line; ``"..."`` strings where a backslash escapes the next character (``\\n``, ``\\t``, ``\\r``
and ``\\xHH`` have their C meaning, any other character stands for itself); anything else between
parentheses and whitespace is a symbol. So a string that decodes differently here than intended
would decode differently in ``sandbox-exec`` too.

The check accepts only the known SBPL operations and filters (names from Apple's operation table
and public profiles; see the platform module's docstring), so a typo or an injected form fails.
"""

from __future__ import annotations

import re

import attrs

#: operations: Apple's table (fG!'s list) plus later additions seen in public profiles
KNOWN_OPERATIONS = frozenset(
    """
    default appleevent-send authorization-right-obtain device* device-camera device-microphone
    distributed-notification-post file* file-chroot file-clone file-ioctl file-issue-extension
    file-link file-map-executable file-mknod file-mount file-mount-update file-read*
    file-read-data file-read-metadata file-read-xattr file-revoke file-search
    file-test-existence file-unmount file-write* file-write-acl file-write-create
    file-write-data file-write-flags file-write-mode file-write-owner file-write-setugid
    file-write-times file-write-unlink file-write-xattr generic-issue-extension hid-control
    iokit* iokit-get-properties iokit-issue-extension iokit-open iokit-open-user-client
    iokit-set-properties ipc* ipc-posix* ipc-posix-issue-extension ipc-posix-sem
    ipc-posix-shm* ipc-posix-shm-read* ipc-posix-shm-read-data ipc-posix-shm-read-metadata
    ipc-posix-shm-write* ipc-posix-shm-write-create ipc-posix-shm-write-data
    ipc-posix-shm-write-unlink ipc-sysv* ipc-sysv-msg ipc-sysv-sem ipc-sysv-shm job-creation
    load-unsigned-code lsopen mach* mach-bootstrap mach-host* mach-issue-extension mach-lookup
    mach-per-user-lookup mach-priv* mach-priv-host-port mach-priv-task-port mach-register
    mach-task-name network* network-bind network-inbound network-outbound nvram* nvram-delete
    nvram-get nvram-set process* process-exec process-exec* process-exec-interpreter
    process-fork process-info* process-info-codesignature process-info-dirtycontrol
    process-info-listpids process-info-pidfdinfo process-info-pidfileportinfo
    process-info-pidinfo process-info-rusage process-info-setcontrol pseudo-tty qtn-download
    qtn-sandbox qtn-user signal sysctl* sysctl-read sysctl-write system* system-acct
    system-audit system-chud system-debug system-fsctl system-info system-kext*
    system-kext-load system-kext-query system-kext-unload system-lcid system-mac-label
    system-nfssvc system-privilege system-reboot system-sched system-set-time system-socket
    system-suspend-resume system-swap system-write-bootstrap user-preference*
    user-preference-read user-preference-write
    """.split()  # noqa: SIM905
)
#: filters taking one string
STRING_FILTERS = frozenset(
    """
    literal subpath regex prefix path path-literal path-regex path-prefix global-name
    local-name sysctl-name sysctl-name-prefix sysctl-name-regex xpc-service-name
    xpc-service-name-prefix extension extension-class iokit-user-client-class
    iokit-registry-entry-class preference-domain
    """.split()  # noqa: SIM905
)
METAFILTERS = frozenset({"require-any", "require-all", "require-not"})
TARGETS = frozenset({"self", "others", "children", "pgrp", "same-sandbox"})
UNIX_SOCKET_FILTERS = frozenset({"path-literal", "literal", "subpath", "path-regex", "regex"})
_ADDRESS = re.compile(r"^(\*|localhost):(\*|[0-9]+)$")
#: ``egg explain`` shows this where the proxy's port goes (it is picked when the session starts)
PREVIEW_ADDRESS = "localhost:<port>"


@attrs.frozen
class Str:
    """A string atom (symbols are plain ``str``)."""

    value: str


Form = list["Str | str | Form"]


class ParseError(ValueError):
    pass


def tokens(text: str) -> list[object]:
    """``(``, ``)``, :class:`Str` and symbol tokens; comments dropped."""
    out: list[object] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n\r\f":
            i += 1
        elif c == ";":
            while i < n and text[i] != "\n":
                i += 1
        elif c in "()":
            out.append(c)
            i += 1
        elif c == '"':
            value, i = _string(text, i + 1)
            out.append(Str(value))
        else:
            start = i
            while i < n and text[i] not in ' \t\n\r\f();"':
                i += 1
            out.append(text[start:i])
    return out


def _string(text: str, i: int) -> tuple[str, int]:
    chars: list[str] = []
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(chars), i + 1
        if c == "\\":
            if i + 1 >= len(text):
                break
            nxt = text[i + 1]
            if nxt == "x":
                digits = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2 :])
                if not digits:
                    raise ParseError(f"bad \\x escape at {i}")
                chars.append(chr(int(digits.group(), 16)))
                i += 2 + len(digits.group())
                continue
            chars.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
            i += 2
            continue
        chars.append(c)
        i += 1
    raise ParseError("unterminated string")


def parse(text: str) -> list[Form]:
    """The top-level forms of ``text``; raises ParseError unless the parentheses balance and every
    top-level item is a form."""
    stack: list[Form] = [[]]
    for token in tokens(text):
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ParseError("unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)  # type: ignore[arg-type]
    if len(stack) != 1:
        raise ParseError("unbalanced '('")
    top = stack[0]
    for item in top:
        if not isinstance(item, list):
            raise ParseError(f"an atom outside any form: {item!r}")
    return top  # type: ignore[return-value]


def check_profile(text: str, *, preview: bool = False) -> list[Form]:
    """Parse ``text`` and check it is a profile made only of known SBPL; returns the forms.

    With ``preview`` the proxy-port placeholder of ``egg explain`` is accepted.
    """
    forms = parse(text)
    assert forms and forms[0] == ["version", "1"], (
        f"profile must start with (version 1): {forms[:1]}"
    )
    if preview:
        text = text.replace(f'"{PREVIEW_ADDRESS}"', '"localhost:1"')
        forms = parse(text)
    for form in forms[1:]:
        if form[0] == "import":
            assert len(form) == 2 and isinstance(form[1], Str), f"bad import: {form!r}"
            continue
        check_rule(form)
    return forms


def check_rule(form: Form) -> None:
    assert form and form[0] in ("allow", "deny"), f"not a rule: {form!r}"
    rest = form[1:]
    ops = [x for x in rest if isinstance(x, str)]
    filters = [x for x in rest if isinstance(x, list)]
    assert ops, f"a rule without an operation: {form!r}"
    assert rest == ops + filters, f"operations must come before filters: {form!r}"
    for op in ops:
        assert op in KNOWN_OPERATIONS, f"unknown SBPL operation {op!r} in {form!r}"
    for f in filters:
        check_filter(f)


def check_filter(f: Form) -> None:
    assert f and isinstance(f[0], str), f"a filter must start with its name: {f!r}"
    name, args = f[0], f[1:]
    if name in STRING_FILTERS:
        assert len(args) == 1 and isinstance(args[0], Str), f"{name} takes one string: {f!r}"
        if name in ("regex", "path-regex"):
            re.compile(args[0].value)
    elif name in METAFILTERS:
        assert args and all(isinstance(a, list) for a in args), f"{name} takes filters: {f!r}"
        for a in args:
            check_filter(a)  # type: ignore[arg-type]
    elif name == "target":
        assert len(args) == 1 and args[0] in TARGETS, f"bad target: {f!r}"
    elif name == "file-mode":
        assert len(args) == 1 and isinstance(args[0], str) and re.fullmatch(r"#o[0-7]+", args[0])
    elif name in ("remote", "local"):
        check_address(f)
    else:
        raise AssertionError(f"unknown SBPL filter {name!r} in {f!r}")


def check_address(f: Form) -> None:
    args = f[1:]
    assert args and args[0] in ("ip", "tcp", "udp", "unix-socket"), f"bad address: {f!r}"
    if args[0] == "unix-socket":
        assert len(args) == 2 and isinstance(args[1], list), f"bad unix-socket filter: {f!r}"
        inner = args[1]
        assert inner[0] in UNIX_SOCKET_FILTERS, f"bad unix-socket path filter: {f!r}"
        check_filter(inner)
    else:
        assert len(args) == 2 and isinstance(args[1], Str), f"bad address: {f!r}"
        assert _ADDRESS.match(args[1].value), f"host must be * or localhost: {f!r}"


def strings(forms: list[Form]) -> list[str]:
    """Every string atom, in order."""
    found: list[str] = []

    def walk(item: object) -> None:
        if isinstance(item, Str):
            found.append(item.value)
        elif isinstance(item, list):
            for x in item:
                walk(x)

    walk(forms)
    return found


def shape(forms: list[Form]) -> object:
    """The profile with every string replaced by a marker: equal shapes mean no value changed
    the structure around it."""

    def walk(item: object) -> object:
        if isinstance(item, Str):
            return "<str>"
        if isinstance(item, list):
            return tuple(walk(x) for x in item)
        return item

    return walk(forms)


def rules(forms: list[Form], action: str, *ops: str) -> list[Form]:
    """Rules with this action naming exactly these operations."""
    return [
        f for f in forms if f[0] == action and [x for x in f[1:] if isinstance(x, str)] == list(ops)
    ]


def filters_of(form: Form) -> list[Form]:
    return [x for x in form[1:] if isinstance(x, list)]
