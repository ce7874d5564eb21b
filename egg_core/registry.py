"""Collect what plugins register (agents, platforms) and know which plugin registered each.

Registration hooks receive a typed ``register`` callback. Each implementation is called with its
own callback so that a duplicate name can be reported with *both* plugin names, and an object of
the wrong type with the name of the plugin that passed it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from egg_core.errors import PluginError, UnknownNameError
from egg_core.plugins import EggPluginManager
from egg_core.profiles import AgentProfile
from egg_core.sandbox import Platform

if TYPE_CHECKING:
    pass

T = TypeVar("T")


@attrs.frozen
class Registered(Generic[T]):
    """An object a plugin registered, with that plugin's name."""

    obj: T
    plugin: str


def reject_wrapper(impl: Any, hook_name: str) -> None:
    """Registration hooks call each plugin's implementation once, with its own ``register``
    callback (so a clash names the plugin that caused it): there is no call for a wrapper to
    wrap. One is refused at load time, rather than silently never run."""
    if getattr(impl, "hookwrapper", False) or getattr(impl, "wrapper", False):
        raise PluginError(
            f"plugin {impl.plugin_name!r} implements {hook_name} as a hook wrapper; "
            "registration hooks cannot be wrapped (register directly instead)"
        )


def _collect(
    pm: EggPluginManager,
    hook_name: str,
    kind: str,
    expected: type[T],
    name_of: Callable[[T], str],
    **kwargs: object,
) -> dict[str, Registered[T]]:
    found: dict[str, Registered[T]] = {}
    caller = getattr(pm.hook, hook_name)
    # get_hookimpls() lists implementations in registration order (the reverse of call order).
    for impl in caller.get_hookimpls():
        plugin_name = impl.plugin_name
        reject_wrapper(impl, hook_name)

        def register(obj: T, _plugin: str = plugin_name) -> None:
            if not isinstance(obj, expected):
                raise PluginError(
                    f"plugin {_plugin!r} registered a {type(obj).__name__} as {kind}; "
                    f"expected {expected.__name__}"
                )
            name = name_of(obj)
            if not isinstance(name, str) or not name:
                raise PluginError(f"plugin {_plugin!r} registered {kind} without a name")
            if name in found:
                first = found[name].plugin
                raise PluginError(
                    f"{kind} {name!r} is registered by two plugins: {first!r} and {_plugin!r}"
                    if first != _plugin
                    else f"plugin {_plugin!r} registers {kind} {name!r} twice"
                )
            found[name] = Registered(obj, _plugin)

        try:
            impl.function(register=register, **{k: kwargs[k] for k in impl.argnames if k in kwargs})
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(
                f"plugin {plugin_name!r} failed in {hook_name}: {type(exc).__name__}: {exc}"
            ) from exc
    return found


def agents(pm: EggPluginManager) -> dict[str, Registered[AgentProfile]]:
    """Every registered agent profile by name."""
    return _collect(pm, "egg_register_agents", "agent", AgentProfile, lambda a: a.name)


def unknown_agent(pm: EggPluginManager, name: str) -> UnknownNameError:
    """The error for a name that is no agent and no command either (``egg run``, ``egg
    explain``): what it might have meant, or the agents there are."""
    import difflib

    known = sorted(agents(pm))
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"agents: {', '.join(known)}"
    return UnknownNameError(f"unknown agent {name!r}, and no command of that name ({hint})")


def platforms(pm: EggPluginManager) -> dict[str, Registered[Platform]]:
    """Every registered platform by name."""
    return _collect(
        pm,
        "egg_register_platforms",
        "platform",
        Platform,  # type: ignore[type-abstract]
        lambda p: p.name,
    )


def get_platform(pm: EggPluginManager, name: str) -> Platform:
    """The platform called ``name``, or an error listing the ones that exist."""
    known = platforms(pm)
    if name not in known:
        raise UnknownNameError(
            f"unknown platform {name!r} (registered: {', '.join(sorted(known)) or 'none'})"
        )
    return known[name].obj
