"""Class 2 of the persistence review: build caches that hold code are the sandbox's own.

A poisoned wheel in ``~/.cache/pip``, a package under ``~/.npm/_npx``, a crate's build script in
``~/.cargo/registry``: the host runs them at its next build. The default ``cache:`` rules give
every sandbox a cache of its own at those paths — shared by sandbox runs, so builds stay warm —
and the host's caches are never written.
"""

from __future__ import annotations

from tests.linux.conftest import Box

CACHES = (".cache/pip", ".npm/_npx", ".cargo/registry/src", "go/pkg/mod")


def test_what_a_sandbox_caches_never_reaches_the_hosts_caches(box: Box) -> None:
    for cache in (".cache", ".npm", ".cargo/registry", "go/pkg/mod"):
        box.mkdir(cache)
    box.write(".cache/pip/host-wheel.whl", "the host's own")
    script = "; ".join(f"mkdir -p ~/{c} && echo poisoned > ~/{c}/planted" for c in CACHES)

    first = box.exec("sh", "-c", f"{script}; cat ~/.cache/pip/host-wheel.whl 2>&1; exit 0")
    second = box.exec("sh", "-c", "cat ~/.cache/pip/planted ~/.npm/_npx/planted")

    assert first.returncode == 0, first.stderr
    for cache in CACHES:
        assert not (box.home / cache / "planted").exists(), cache
    assert (box.home / ".cache" / "pip" / "host-wheel.whl").read_text() == "the host's own"
    assert "the host's own" not in first.stdout  # the sandbox sees its own cache, not the host's
    assert second.stdout == "poisoned\npoisoned\n"  # shared by sandbox runs: builds stay warm
    assert list((box.egg_home / "sandbox-cache").rglob("planted"))


def test_an_explicit_rw_rule_gives_the_host_cache_back(box: Box) -> None:
    box.mkdir(".npm")
    result = box.exec("sh", "-c", "echo mine > ~/.npm/file", config={"fs": ["rw:~/.npm"]})

    assert result.returncode == 0, result.stderr
    assert (box.home / ".npm" / "file").read_text() == "mine\n"
