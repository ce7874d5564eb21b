"""Choose the platform that runs a policy — never a weaker one as a fallback.

In order: ``--platform NAME``, else ``$EGG_PLATFORM``, else — when the policy requires no sandbox at
all (every boundary wide open, see :func:`~egg_core.policy.requires_sandbox`) — the outer-boundary
platform, else the best available platform that enforces everything the policy needs. A named
platform that is unavailable or cannot enforce the policy is an EnforcementError; so is a policy
that no available platform can enforce. The one exception is an outer-boundary platform
(``unsandboxed``) the user names explicitly: that is the user declaring that a VM or container
around egg is the boundary, and it is recorded as such.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from egg_core.errors import EnforcementError, UnknownNameError
from egg_core.policy import EffectivePolicy
from egg_core.registry import Registered
from egg_core.sandbox import Platform

PLATFORM_ENV = "EGG_PLATFORM"


@attrs.frozen
class Selection:
    platform: Platform
    reason: str
    #: "declared by user" / "declared by config" when an outer boundary replaces the sandbox
    outer_boundary: str | None = None


def select_platform(
    platforms: Mapping[str, Registered[Platform]],
    policy: EffectivePolicy,
    requested: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Selection:
    env: Mapping[str, str] = {} if environ is None else environ
    source = "--platform" if requested else None
    if not requested and env.get(PLATFORM_ENV):
        requested, source = env[PLATFORM_ENV], f"${PLATFORM_ENV}"
    if requested:
        if requested not in platforms:
            known = ", ".join(sorted(platforms)) or "none"
            raise UnknownNameError(
                f"unknown platform {requested!r} from {source} (registered: {known})"
            )
        platform = platforms[requested].obj
        ok, why = platform.available()
        if not ok:
            raise EnforcementError([f"not available here: {why}"], platform=platform.name)
        if platform.outer_boundary:
            return Selection(platform, f"chosen with {source}", "declared by user")
        gaps = platform.gaps(policy)
        if gaps:
            raise EnforcementError(gaps, platform=platform.name)
        return Selection(platform, f"chosen with {source}")
    if not policy.requires_sandbox:
        for registered in _ordered(platforms):
            if registered.obj.outer_boundary and registered.obj.available().ok:
                return Selection(
                    registered.obj,
                    "the config opens every boundary (network '*', env '*', no fs or resource "
                    "rules): no OS sandbox is required",
                    "declared by config",
                )
    problems: list[str] = []
    for registered in _ordered(platforms):
        platform = registered.obj
        if platform.outer_boundary:
            continue
        ok, why = platform.available()
        if not ok:
            problems.append(f"{platform.name}: {why}")
            continue
        gaps = platform.gaps(policy)
        if gaps:
            problems.append(f"{platform.name}: " + "; ".join(gaps))
            continue
        return Selection(platform, "the best available platform that enforces this policy")
    if not problems:
        problems.append("no sandbox platform is installed (egg plugins lists them)")
    fix = (
        "fix one of these, or if a VM or container around egg is the boundary, say so with "
        "--platform unsandboxed"
    )
    raise EnforcementError([*problems, fix])


def _ordered(platforms: Mapping[str, Registered[Platform]]) -> list[Registered[Platform]]:
    """Most capable first; name breaks ties so the choice is stable."""
    return sorted(platforms.values(), key=lambda r: (-len(r.obj.capabilities), r.obj.name))
