"""The filtered ssh agent's judgement (:mod:`egg_core.agentfilter`), message by message, with real
keys: a session binding counts only when the host key is an allowed host's and signed the session
identifier; a signature only of a login in the bound session; everything else refused."""

from __future__ import annotations

import struct

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils

from egg_core.agentfilter import (
    EXTENSION,
    REQUEST_IDENTITIES,
    SESSION_BIND,
    SIGN_REQUEST,
    AgentFilter,
    Binding,
    key_blobs,
    verify_signature,
)


def s(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def blob_of(public: object) -> bytes:
    line = public.public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    import base64

    return base64.b64decode(line.split()[1])


def ed25519_signed(key: ed25519.Ed25519PrivateKey, data: bytes) -> bytes:
    return s(b"ssh-ed25519") + s(key.sign(data))


def bind(host_key: bytes, session: bytes, signature: bytes, forwarding: int = 0) -> bytes:
    return s(SESSION_BIND) + s(host_key) + s(session) + s(signature) + bytes([forwarding])


def login(session: bytes) -> bytes:
    data = s(session) + bytes([50]) + s(b"git") + s(b"ssh-connection") + s(b"publickey")
    return s(b"user-key-blob") + s(data) + bytes(4)


@pytest.fixture
def host() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


def agent_for(*allowed: bytes) -> AgentFilter:
    return AgentFilter("/nonexistent", allowed, lambda **_: None)


def test_a_binding_signed_by_an_allowed_host_key_admits_logins_in_that_session_only(host) -> None:
    key = blob_of(host.public_key())
    judge, binding = agent_for(key).judge, Binding()
    session = b"exchange-hash-1"

    assert judge(EXTENSION, bind(key, session, ed25519_signed(host, session)), binding) is None
    assert judge(SIGN_REQUEST, login(session), binding) is None
    assert judge(SIGN_REQUEST, login(b"another-session"), binding) is not None
    data = s(session) + bytes([51])  # not a login request
    assert judge(SIGN_REQUEST, s(b"k") + s(data) + bytes(4), binding) is not None
    assert judge(REQUEST_IDENTITIES, b"", binding) is None


def test_a_binding_the_host_key_did_not_sign_is_refused_and_unbinds(host) -> None:
    key = blob_of(host.public_key())
    judge, binding = agent_for(key).judge, Binding()
    judge(EXTENSION, bind(key, b"first", ed25519_signed(host, b"first")), binding)

    forged = ed25519_signed(ed25519.Ed25519PrivateKey.generate(), b"second")
    assert "did not sign" in (judge(EXTENSION, bind(key, b"second", forged), binding) or "")
    assert judge(SIGN_REQUEST, login(b"first"), binding) is not None  # the old one is gone too
    assert judge(SIGN_REQUEST, login(b"second"), binding) is not None


def test_a_binding_to_another_key_or_for_forwarding_is_refused(host) -> None:
    key = blob_of(host.public_key())
    other = ed25519.Ed25519PrivateKey.generate()
    judge = agent_for(key).judge

    outsider = bind(blob_of(other.public_key()), b"x", ed25519_signed(other, b"x"))
    assert "no allowed host has" in (judge(EXTENSION, outsider, Binding()) or "")
    forwarding = bind(key, b"x", ed25519_signed(host, b"x"), forwarding=1)
    assert "forwarding" in (judge(EXTENSION, forwarding, Binding()) or "")
    assert judge(SIGN_REQUEST, login(b"x"), Binding()) is not None  # never bound


@pytest.mark.parametrize("kind", [17, 18, 19, 20, 21, 22, 23, 25, 26, 9, 99])
def test_every_other_request_is_refused(kind: int) -> None:
    assert agent_for().judge(kind, b"", Binding()) is not None


def test_other_extensions_and_malformed_ones_are_refused(host) -> None:
    judge = agent_for(blob_of(host.public_key())).judge
    assert "query" in (judge(EXTENSION, s(b"query"), Binding()) or "")
    assert "malformed" in (judge(EXTENSION, s(SESSION_BIND) + b"\0\0", Binding()) or "")
    assert "malformed" in (judge(SIGN_REQUEST, b"\0\0\0\xff", _bound()) or "")


def _bound() -> Binding:
    binding = Binding()
    binding.session_id = b"s"
    return binding


def test_ecdsa_and_rsa_host_signatures_verify_and_a_wrong_one_does_not() -> None:
    data = b"the session identifier"
    ecdsa = ec.generate_private_key(ec.SECP256R1())
    r, s_ = utils.decode_dss_signature(ecdsa.sign(data, ec.ECDSA(hashes.SHA256())))
    mp = lambda n: s(n.to_bytes((n.bit_length() + 8) // 8, "big"))  # noqa: E731
    ecdsa_sig = s(b"ecdsa-sha2-nistp256") + s(mp(r) + mp(s_))
    assert verify_signature(blob_of(ecdsa.public_key()), ecdsa_sig, data)
    assert not verify_signature(blob_of(ecdsa.public_key()), ecdsa_sig, b"other data")

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_sig = s(b"rsa-sha2-256") + s(key.sign(data, padding.PKCS1v15(), hashes.SHA256()))
    assert verify_signature(blob_of(key.public_key()), rsa_sig, data)
    sha1 = s(b"ssh-rsa") + s(key.sign(data, padding.PKCS1v15(), hashes.SHA1()))
    assert not verify_signature(blob_of(key.public_key()), sha1, data)  # SHA-1: not accepted


def test_revoked_and_certificate_authority_lines_give_no_key_to_bind_to(host) -> None:
    import base64

    key = base64.b64encode(blob_of(host.public_key())).decode()
    other = base64.b64encode(blob_of(ed25519.Ed25519PrivateKey.generate().public_key())).decode()
    lines = [
        f"git.example.test ssh-ed25519 {key}",
        f"@revoked * ssh-ed25519 {key}",
        f"@cert-authority *.example.test ssh-ed25519 {other}",
        "broken line",
    ]
    assert key_blobs(lines) == set()
    assert key_blobs(lines[:1]) == {blob_of(host.public_key())}


# -- host certificates: a server that presents one signed by an allowed host's authority


def host_certificate(
    key: ed25519.Ed25519PrivateKey,
    authority: ed25519.Ed25519PrivateKey,
    principals: list[bytes],
    *,
    kind: serialization.SSHCertificateType = serialization.SSHCertificateType.HOST,
    valid: tuple[int, int] = (0, 2**64 - 1),
) -> bytes:
    """The blob of an OpenSSH certificate of ``key`` that ``authority`` signed."""
    builder = (
        serialization.SSHCertificateBuilder()
        .public_key(key.public_key())
        .serial(1)
        .type(kind)
        .key_id(b"host")
        .valid_principals(principals)
        .valid_after(valid[0])
        .valid_before(valid[1])
    )
    import base64

    return base64.b64decode(builder.sign(authority).public_bytes().split()[1])


def certified_agent(authority: bytes, *names: str, revoked: tuple[bytes, ...] = ()) -> AgentFilter:
    return AgentFilter(
        "/nonexistent", (), lambda **_: None, {authority: set(names)}, revoked=revoked
    )


@pytest.fixture
def ca() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


def test_a_host_certificate_an_allowed_hosts_authority_signed_for_it_binds(host, ca) -> None:
    cert = host_certificate(host, ca, [b"git.example.test"])
    judge, binding = certified_agent(blob_of(ca.public_key()), "git.example.test").judge, Binding()
    session = b"exchange-hash-cert"

    assert judge(EXTENSION, bind(cert, session, ed25519_signed(host, session)), binding) is None
    assert judge(SIGN_REQUEST, login(session), binding) is None


@pytest.mark.parametrize(
    "case",
    [
        "another principal",
        "another authority",
        "a user certificate",
        "expired",
        "not yet valid",
        "the key revoked",
        "the authority revoked",
        "signed by the authority, not the host key",
        "a forged certificate signature",
    ],
)
def test_a_host_certificate_ssh_would_not_accept_binds_nothing(host, ca, case: str) -> None:
    name, authority, kind = b"git.example.test", ca, serialization.SSHCertificateType.HOST
    valid, revoked, signer = (0, 2**64 - 1), (), host
    if case == "another principal":
        name = b"other.example.test"
    elif case == "another authority":
        authority = ed25519.Ed25519PrivateKey.generate()
    elif case == "a user certificate":
        kind = serialization.SSHCertificateType.USER
    elif case == "expired":
        valid = (0, 1_000_000)
    elif case == "not yet valid":
        valid = (2**40, 2**64 - 1)
    elif case == "the key revoked":
        revoked = (blob_of(host.public_key()),)
    elif case == "the authority revoked":
        revoked = (blob_of(ca.public_key()),)
    elif case == "signed by the authority, not the host key":
        signer = ca
    cert = host_certificate(host, authority, [name], kind=kind, valid=valid)
    if case == "a forged certificate signature":  # the authority's name, not its signature
        cert = cert[:-1] + bytes([cert[-1] ^ 1])
    agent = certified_agent(blob_of(ca.public_key()), "git.example.test", revoked=revoked)
    binding = Binding()
    session = b"exchange-hash-cert"

    why = agent.judge(EXTENSION, bind(cert, session, ed25519_signed(signer, session)), binding)

    assert why is not None
    assert agent.judge(SIGN_REQUEST, login(session), binding) is not None
