"""A real ``sshd`` on a loopback port for the ssh route's tests (linux-ns and macos-seatbelt's
host side), run by the test (root), letting one client key in as root."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"


class Server:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = 0
        self.host_key = root / "host_key"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def public_key(self) -> str:
        """``TYPE BASE64`` of the server's host key."""
        return " ".join((self.host_key.with_suffix(".pub")).read_text().split()[:2])

    def logins(self) -> list[str]:
        """The logins the server accepted (its log's ``Accepted METHOD for USER`` lines; a key
        it merely found in authorized_keys, before any signature, is no login): a refused
        case must have none."""
        log = self.root / "sshd.log"
        lines = log.read_text(errors="replace").splitlines()
        return [line for line in lines if re.search(r"\bAccepted \S+ for ", line)]

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    root: Path, client_public_key: str, certified_as: tuple[Path, str] | None = None
) -> Server:
    """An sshd under ``root`` that lets ``client_public_key`` in as root and runs what it is
    asked (``git-upload-pack``, scp's and sftp's servers included); with ``certified_as`` (a
    certificate authority's key file, a host name) it presents a host certificate that the
    authority signed for that name."""
    if not (shutil.which("ssh") and os.access(SSHD, os.X_OK)):
        raise AssertionError(
            "needs openssh-client and openssh-server (scripts/setup installs them)"
        )
    root.mkdir()
    server = Server(root)
    keygen(server.host_key)
    presented = ""
    if certified_as is not None:
        authority, name = certified_as
        subprocess.run(
            ["ssh-keygen", "-q", "-s", str(authority), "-I", "egg-test-host", "-h", "-n", name,
             str(server.host_key.with_suffix(".pub"))],
            check=True, timeout=30,
        )  # fmt: skip
        presented = f"HostCertificate {root}/host_key-cert.pub\n"
    (root / "authorized_keys").write_text(client_public_key)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    for _attempt in range(5):  # a port another process took between the probe and the bind
        server.port = _free_port()
        config = root / "sshd_config"
        config.write_text(
            f"Port {server.port}\nListenAddress 127.0.0.1\nHostKey {server.host_key}\n"
            f"PidFile none\nAuthorizedKeysFile {root}/authorized_keys\nStrictModes no\n"
            "UsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            f"KbdInteractiveAuthentication no\nLogLevel VERBOSE\nSubsystem sftp {SFTP_SERVER}\n"
            + presented
        )
        server.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=open(root / "sshd.log", "wb"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and server.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        if server.proc.poll() is None:
            return server
    raise AssertionError((root / "sshd.log").read_text())
