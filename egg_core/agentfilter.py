"""The filtered ssh agent a sandbox gets for ``SSH_AUTH_SOCK``: a socket egg serves itself, which
relays to the host's agent only what lets ssh log in to an allowed host.

OpenSSH (8.9 and later) tells its agent which server a connection is for: before it asks for a
signature it sends ``session-bind@openssh.com`` — the server's host key, the session identifier
(the key exchange's hash) and the server's signature of it. egg checks that signature (so the
binding is the server's, not the sandbox's invention) and that the host key is one the user's
known_hosts holds for a host the policy allows — or a host certificate ssh would accept for one:
signed by that host's ``@cert-authority`` key, naming it, valid now, not ``@revoked``. From then
on that connection may have signatures made only of a publickey login request *in that session*
(its data begins with the bound session identifier). So a signature is only ever usable to
log in to an allowed host, in a session that host's key signed. Listing identities is allowed;
signing without a binding, or after a binding to another key, adding, removing, locking and
unlocking keys, smartcards and every other extension are refused with the protocol's failure
answer, and each refusal is one record in the run's ``network.log``.

Wire format: draft-miller-ssh-agent (``uint32`` length, a type byte, the body); keys and
signatures are checked with ``cryptography``.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

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
        authorities: Mapping[bytes, Collection[str]] | None = None,
        revoked: Collection[bytes] = (),
    ) -> None:
        """``authorities``: the ``@cert-authority`` keys of the allowed hosts' known_hosts
        lines, each with the allowed host names it vouches for (a server that presents a host
        certificate such a key signed for one of those names is bound as ssh would accept it);
        ``revoked``: the ``@revoked`` keys, which bind nothing, as a key or as a CA."""
        self.upstream = upstream
        self.revoked = frozenset(revoked)
        self.allowed_keys = frozenset(allowed_keys) - self.revoked
        self.authorities = {
            ca: frozenset(names)
            for ca, names in (authorities or {}).items()
            if ca not in self.revoked
        }
        self.record = record
        self.now: Callable[[], float] = time.time

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
            signer = host_key
            if host_key not in self.allowed_keys:
                certified = self._certified(host_key)
                if certified is None:
                    return "a session bound to a host key no allowed host has"
                signer = certified
            if not verify_signature(signer, signature, session_id):
                return "a session binding the host key did not sign"
            binding.session_id = session_id
            return None
        return NAMES.get(kind, f"agent request {kind}")

    def _certified(self, blob: bytes) -> bytes | None:
        """The key a host certificate certifies (the one that signs the binding), when the
        certificate is one ssh accepts for an allowed host: a host certificate, signed by an
        allowed host's ``@cert-authority`` key, valid now, naming one of the host names that
        authority vouches for, neither it nor its key revoked. None otherwise."""
        if not self.authorities:
            return None
        certificate = certificate_of(blob)
        if certificate is None:
            return None
        cert, key, authority = certificate
        names = self.authorities.get(authority, frozenset())
        principals = {p.decode("utf-8", "replace") for p in cert.valid_principals}
        now = self.now()
        if key in self.revoked or not (names & principals):
            return None
        if not cert.valid_after <= now < cert.valid_before:
            return None
        return key

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


def certificate_of(blob: bytes) -> tuple[Any, bytes, bytes] | None:
    """(the certificate, its key's blob, its signer's blob) of an OpenSSH *host* certificate
    whose signature checks out; None for anything else (a plain key, a user certificate, a
    certificate signed by another key than it names)."""
    import base64

    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        SSHCertificate,
        SSHCertificateType,
        load_ssh_public_identity,
    )

    try:
        key_type = Reader(blob).string()
        if not key_type.endswith(b"-cert-v01@openssh.com"):
            return None
        cert = load_ssh_public_identity(key_type + b" " + base64.b64encode(blob))
        if not isinstance(cert, SSHCertificate) or cert.type != SSHCertificateType.HOST:
            return None
        cert.verify_cert_signature()

        def blob_of(public: Any) -> bytes:
            text = public.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
            return base64.b64decode(text.split()[1])

        return cert, blob_of(cert.public_key()), blob_of(cert.signature_key())
    except (InvalidSignature, Malformed, ValueError, TypeError, IndexError):
        return None


def key_lines(known_hosts_lines: Collection[str]) -> Iterator[tuple[str | None, str, bytes]]:
    """(marker or None, host patterns, key blob) of each known_hosts line that names a key
    (a line too short or whose key is not base64 is skipped)."""
    import base64
    import binascii

    for line in known_hosts_lines:
        fields = line.split()
        marker = fields[0] if fields and fields[0].startswith("@") else None
        if len(fields) < 3 + bool(marker):
            continue
        with contextlib.suppress(binascii.Error, ValueError):
            blob = base64.b64decode(fields[3 if marker else 2], validate=True)
            yield marker, fields[1 if marker else 0], blob


def revoked_blobs(known_hosts_lines: Collection[str]) -> set[bytes]:
    """The keys of ``@revoked`` lines."""
    return {blob for marker, _, blob in key_lines(known_hosts_lines) if marker == "@revoked"}


def key_blobs(known_hosts_lines: Collection[str]) -> set[bytes]:
    """The host key blobs of known_hosts lines (``@revoked`` and ``@cert-authority`` lines name
    no key a server presents as its own: neither is allowed to bind as one)."""
    plain = {blob for marker, _, blob in key_lines(known_hosts_lines) if marker is None}
    return plain - revoked_blobs(known_hosts_lines)
