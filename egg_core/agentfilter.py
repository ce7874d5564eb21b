"""The filtered ssh agent a sandbox gets for ``SSH_AUTH_SOCK``: a socket egg serves itself, which
relays to the host's agent only what lets ssh log in to an allowed host.

OpenSSH (8.9 and later) tells its agent which server a connection is for: before it asks for a
signature it sends ``session-bind@openssh.com`` — the server's host key, the session identifier
(the key exchange's hash) and the server's signature of it. egg checks that signature (so the
binding is the server's, not the sandbox's invention) and that the host key is one the user's
known_hosts holds for a host the policy allows; from then on that connection may have
signatures made only of a publickey login request *in that session* (its data begins with the
bound session identifier). So a signature is only ever usable to log in to an allowed host, in a
session that host's key signed. Listing identities is allowed; signing without a binding, or
after a binding to another key, adding, removing, locking and unlocking keys, smartcards and
every other extension are refused with the protocol's failure answer, and each refusal is one
record in the run's ``network.log``.

Wire format: draft-miller-ssh-agent (``uint32`` length, a type byte, the body); keys and
signatures are checked with ``cryptography``.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable, Collection

AGENT_FAILURE = 5
REQUEST_IDENTITIES = 11
SIGN_REQUEST = 13
EXTENSION = 27
#: the answers a relayed request may get back
ANSWERS = frozenset({5, 6, 12, 14, 28})
#: OpenSSH's limit of one agent message
MAX_MESSAGE = 256 * 1024
SESSION_BIND = b"session-bind@openssh.com"
#: SSH_MSG_USERAUTH_REQUEST: what a publickey login signs (after the session identifier)
USERAUTH_REQUEST = 50
NAMES = {
    17: "add a key",
    18: "remove a key",
    19: "remove every key",
    20: "add a smartcard key",
    21: "remove a smartcard key",
    22: "lock the agent",
    23: "unlock the agent",
    25: "add a constrained key",
    26: "add a constrained smartcard key",
    # SSH protocol 1's, which OpenSSH still sends beside its own (ssh-add -D)
    **{kind: "an SSH-1 request" for kind in (1, 3, 7, 8, 9, 24)},
}


class Malformed(ValueError):
    """A message that does not parse as the protocol says."""


class Reader:
    """The fields of one message body, in order."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def string(self) -> bytes:
        if self.at + 4 > len(self.data):
            raise Malformed("truncated")
        (length,) = struct.unpack_from(">I", self.data, self.at)
        start = self.at + 4
        if start + length > len(self.data):
            raise Malformed("truncated")
        self.at = start + length
        return self.data[start : self.at]

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise Malformed("truncated")
        self.at += 1
        return self.data[self.at - 1]


def verify_signature(key_blob: bytes, signature_blob: bytes, data: bytes) -> bool:
    """Whether ``signature_blob`` (SSH's ``string algorithm, string signature``) is ``key_blob``'s
    signature of ``data``: Ed25519, ECDSA (P-256/384/521) and RSA (rsa-sha2-256/512)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    try:
        key_type = Reader(key_blob).string()
        public = load_ssh_public_key(key_type + b" " + _b64(key_blob))
        sig = Reader(signature_blob)
        algorithm, raw = sig.string(), sig.string()
        if isinstance(public, ed25519.Ed25519PublicKey) and algorithm == b"ssh-ed25519":
            public.verify(raw, data)
            return True
        if isinstance(public, ec.EllipticCurvePublicKey) and algorithm == key_type:
            digest = {256: hashes.SHA256(), 384: hashes.SHA384(), 521: hashes.SHA512()}
            parts = Reader(raw)
            r, s = (int.from_bytes(parts.string(), "big") for _ in range(2))
            chosen = digest[public.curve.key_size]
            public.verify(utils.encode_dss_signature(r, s), data, ec.ECDSA(chosen))
            return True
        if isinstance(public, rsa.RSAPublicKey) and algorithm in (b"rsa-sha2-256", b"rsa-sha2-512"):
            chosen_hash = hashes.SHA256() if algorithm == b"rsa-sha2-256" else hashes.SHA512()
            public.verify(raw, data, padding.PKCS1v15(), chosen_hash)
            return True
    except (InvalidSignature, Malformed, ValueError, KeyError, TypeError):
        return False
    return False


def _b64(data: bytes) -> bytes:
    import base64

    return base64.b64encode(data)


def message(kind: int, body: bytes = b"") -> bytes:
    return struct.pack(">IB", len(body) + 1, kind) + body


class Binding:
    """What one client connection has been bound to (its last session-bind)."""

    def __init__(self) -> None:
        self.session_id: bytes | None = None


class AgentFilter:
    """The filter between a sandbox's agent clients and the host's agent at ``upstream``.

    ``allowed_keys`` are the host key blobs a binding may name (the allowed hosts' known_hosts
    keys); ``record`` gets each decision as network.log fields."""

    def __init__(
        self,
        upstream: str,
        allowed_keys: Collection[bytes],
        record: Callable[..., None],
    ) -> None:
        self.upstream = upstream
        self.allowed_keys = frozenset(allowed_keys)
        self.record = record

    def judge(self, kind: int, body: bytes, binding: Binding) -> str | None:
        """Why the request must be refused (None: relay it). A session-bind that passes
        becomes the connection's binding; one that does not clears it."""
        if kind == REQUEST_IDENTITIES:
            return None
        if kind == SIGN_REQUEST:
            if binding.session_id is None:
                return "a signature without a session bound to an allowed host's key"
            try:
                request = Reader(body)
                request.string()  # the key to sign with
                data = Reader(request.string())
                if data.string() != binding.session_id or data.byte() != USERAUTH_REQUEST:
                    return "a signature of something else than a login in the bound session"
            except Malformed:
                return "a malformed signature request"
            return None
        if kind == EXTENSION:
            binding.session_id = None  # whatever it is, the connection is bound to nothing now
            try:
                request = Reader(body)
                name = request.string()
                if name != SESSION_BIND:
                    return f"the agent extension {name.decode('ascii', 'replace')!r}"
                host_key, session_id, signature = (
                    request.string(),
                    request.string(),
                    request.string(),
                )
                forwarding = request.byte()
            except Malformed:
                return "a malformed agent extension"
            if forwarding:
                return "a binding for agent forwarding"
            if host_key not in self.allowed_keys:
                return "a session bound to a host key no allowed host has"
            if not verify_signature(host_key, signature, session_id):
                return "a session binding the host key did not sign"
            binding.session_id = session_id
            return None
        return NAMES.get(kind, f"agent request {kind}")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: each request judged, then relayed to a connection of the
        host's agent of its own (or answered with the protocol's failure)."""
        binding = Binding()
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                try:
                    kind, body = await _read_message(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except Malformed as exc:
                    self.record(decision="deny", reason=f"ssh agent: {exc}")
                    return
                why = self.judge(kind, body, binding)
                if why is not None:
                    self.record(decision="deny", reason=f"ssh agent: refused {why}")
                    writer.write(message(AGENT_FAILURE))
                    await writer.drain()
                    continue
                if upstream is None:
                    upstream = await asyncio.open_unix_connection(self.upstream)
                up_reader, up_writer = upstream
                up_writer.write(message(kind, body))
                await up_writer.drain()
                answer_kind, answer = await _read_message(up_reader)
                if answer_kind not in ANSWERS:
                    answer_kind, answer = AGENT_FAILURE, b""
                if kind != REQUEST_IDENTITIES:
                    what = "session bound" if kind == EXTENSION else "signature"
                    ok = answer_kind not in (AGENT_FAILURE, 28)
                    self.record(
                        decision="allow" if ok else "error",
                        reason=f"ssh agent: {what}" + ("" if ok else " (the agent refused)"),
                    )
                writer.write(message(answer_kind, answer))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, Malformed) as exc:
            self.record(decision="error", reason=f"ssh agent: {type(exc).__name__}: {exc}")
        finally:
            if upstream is not None:
                upstream[1].close()
            writer.close()


async def _read_message(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readexactly(4)
    (length,) = struct.unpack(">I", head)
    if length < 1 or length > MAX_MESSAGE:
        raise Malformed(f"a message of {length} bytes")
    data = await reader.readexactly(length)
    return data[0], data[1:]


def key_blobs(known_hosts_lines: Collection[str]) -> set[bytes]:
    """The host key blobs of known_hosts lines (``@revoked`` and ``@cert-authority`` lines name
    no key a server presents as its own: neither is allowed to bind)."""
    import base64
    import binascii

    found: set[bytes] = set()
    revoked: set[bytes] = set()
    for line in known_hosts_lines:
        fields = line.split()
        marker = fields[0] if fields and fields[0].startswith("@") else None
        if len(fields) < 3 + bool(marker) or marker not in (None, "@revoked"):
            continue
        with contextlib.suppress(binascii.Error, ValueError):
            blob = base64.b64decode(fields[3 if marker else 2], validate=True)
            (revoked if marker else found).add(blob)
    return found - revoked
