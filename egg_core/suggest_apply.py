"""``egg policy suggest --apply``: add allowlist entries to the egg.yaml a run used.

Every byte the user wrote stays where it was: comments, key order, quoting, indentation, blank
lines. A round-trip *dump* would not promise that (ruamel.yaml re-indents every mapping of the
file to one width and moves trailing comments), so ruamel.yaml only *composes* the file, whose
nodes carry exact positions, and the new entries are inserted as text where the list ends (or
where the key that will hold them goes), written in the style of the list they join.

Before anything is written the result must pass the checks a run would make: egg's own loader
(same errors, same line numbers), the base chain resolved again, every added entry now matched
by the allowlist, and nothing but ``network`` changed. The write is atomic (a fresh file renamed
over) and refused when the file changed since it was read. ``mode`` is never touched: switching
to ``enforce`` is the user's step.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from egg_core import safeio
from egg_core.config_files import ResolvedConfig, resolve_config
from egg_core.config_yaml import decode, load_config_file, load_config_string, to_data
from egg_core.errors import ConfigError, EggError, UsageError
from egg_core.netrules import DEFAULT_PORTS, NetworkRules

#: an egg.yaml larger than this is not edited (the loader's own limit is far above real files)
MAX_CONFIG_BYTES = 1024 * 1024
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?")


@attrs.frozen
class Applied:
    """What ``--apply`` did to one file."""

    path: Path
    #: the allowlist entries added (the file already had the others)
    added: tuple[str, ...]
    before: str
    after: str
    #: the fs rules added
    added_fs: tuple[str, ...] = ()

    def diff(self) -> str:
        """The edit as a unified diff (empty when nothing changes)."""
        import difflib

        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                str(self.path),
                str(self.path),
                n=1,
            )
        )


def yaml_item(entry: str) -> str:
    """``entry`` as a YAML scalar: plain when that reads back as the same string, else single
    quoted (``*.example.com`` unquoted would be an alias)."""
    if _PLAIN.fullmatch(entry):
        return entry
    return "'" + entry.replace("'", "''") + "'"


def network_file(resolved: ResolvedConfig) -> Path:
    """The file ``--apply`` edits: the discovered egg.yaml, which must itself hold ``network``
    unless no base of it does (then the key is added to it). A ``network`` that comes from a base
    is refused, naming the base: editing a shared base would widen every config built on it."""
    if resolved.path is None:
        raise UsageError(
            "no egg.yaml to edit: this directory uses the built-in default "
            "(create ./egg.yaml, or pass --config PATH)"
        )
    path = Path(os.path.abspath(resolved.path))
    leaf = load_config_file(path)
    if "network" in leaf.present:
        return path
    for base in resolved.files:
        if Path(os.path.abspath(base)) == path:
            continue
        if "network" in load_config_file(base).present:
            raise UsageError(
                f"{path}: its network section comes from the base {base}: edit that file, "
                f"or add a network section to {path.name} and run --apply again"
            )
    return path


def edit_text(text: str, entries: Sequence[str], source: str, section: str = "network") -> str:
    """``text`` with ``entries`` added to its ``network`` allowlist or its ``fs`` rules, as
    inserted text; unchanged when ``entries`` is empty."""
    if not entries:
        return text
    root = _compose(text, source)
    newline = "\r\n" if "\r\n" in text else "\n"
    if root is None:
        return _append_section(text, section, entries, newline)
    if not isinstance(root, MappingNode):
        raise ConfigError(f"{source}: the top level is not a mapping")
    pair = _pair(root, section)
    if pair is None:
        return _append_section(text, section, entries, newline)
    if section == "fs":
        if isinstance(pair[1], SequenceNode):
            return _extend(text, pair[1], entries, newline)
        if isinstance(pair[1], ScalarNode):
            return _replace_scalar(text, *pair, _flow_list(entries))  # fs: / fs: ~
        raise ConfigError(f"{source}: fs is not a list")
    network = pair[1]
    network = pair[1]
    if isinstance(network, SequenceNode):
        return _extend(text, network, entries, newline)
    if isinstance(network, ScalarNode):
        if network.value.strip() == "*":
            return text  # everything is allowed already
        return _replace_scalar(text, *pair, _flow_list(entries))  # network: / none / ~
    if not isinstance(network, MappingNode):
        raise ConfigError(f"{source}: network is neither a list nor a mapping")
    pair = _pair(network, "domains")
    if pair is None:
        return _add_domains_key(text, network, entries, newline)
    domains = pair[1]
    if isinstance(domains, SequenceNode):
        return _extend(text, domains, entries, newline)
    if isinstance(domains, ScalarNode):
        if domains.value.strip() == "*":
            return text
        return _replace_scalar(text, *pair, _flow_list(entries))
    raise ConfigError(f"{source}: network.domains is neither a list nor '*'")


def planned_edit(
    resolved: ResolvedConfig, network: Sequence[str], fs: Sequence[str] = ()
) -> Applied:
    """What ``--apply`` would write (nothing is written): the file, the entries it lacks, and
    its text before and after."""
    path = network_file(resolved) if network else _leaf(resolved)
    before = decode(_read(os.path.realpath(path), path), str(path))
    after, new_domains, new_fs = add_entries(before, network, fs, str(path))
    return Applied(path, new_domains, before, after, new_fs)


def add_entries(
    text: str, network: Sequence[str], fs: Sequence[str], source: str
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """``text`` with the ``network`` entries and ``fs`` rules it does not hold yet, and which
    those were. Applying the result again changes nothing."""
    old = load_config_string(text, source)
    new_domains = tuple(e for e in dict.fromkeys(network) if e not in old.network.domains)
    written = {str(rule) for rule in old.fs}
    new_fs = tuple(e for e in dict.fromkeys(fs) if e not in written)
    after = edit_text(text, new_domains, source, "network")
    return edit_text(after, new_fs, source, "fs"), new_domains, new_fs


def apply_entries(
    resolved: ResolvedConfig,
    network: Sequence[str],
    environ: Mapping[str, str],
    fs: Sequence[str] = (),
) -> Applied:
    """Add ``network`` entries to the allowlist and ``fs`` rules to the config ``resolved``
    came from, checked and written atomically (see the module docstring)."""
    edit = planned_edit(resolved, network, fs)
    path = edit.path
    if edit.after == edit.before:
        return edit
    real = os.path.realpath(path)  # a symlinked egg.yaml: edit the file, keep the link
    data = _read(real, path)
    if decode(data, str(path)) != edit.before:
        raise EggError(f"{path}: changed while egg was editing it; nothing written, run again")
    _check(edit, environ)
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    st = os.stat(real)
    safeio.replace(real, bom + edit.after.encode("utf-8"), mode=st.st_mode & 0o7777)
    if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
        os.chown(real, st.st_uid, st.st_gid, follow_symlinks=False)
    return edit


def _leaf(resolved: ResolvedConfig) -> Path:
    if resolved.path is None:
        raise UsageError(
            "no egg.yaml to edit: this directory uses the built-in default "
            "(create ./egg.yaml, or pass --config PATH)"
        )
    return Path(os.path.abspath(resolved.path))


def _read(real: str, shown: Path) -> bytes:
    try:
        return safeio.read_regular(real, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise UsageError(f"{shown}: cannot read it: {exc.strerror or exc}") from None


def _check(edit: Applied, environ: Mapping[str, str]) -> None:
    """The edit passes what a run checks, adds exactly what it says and changes nothing else."""
    path = edit.path
    old = load_config_string(edit.before, str(path))
    try:
        new = load_config_string(edit.after, str(path))
        merged = resolve_config(new, path, environ)
    except ConfigError as exc:
        raise EggError(f"{path}: the edit would not load ({exc.message}); nothing written") from (
            None
        )
    others = ("network", "fs")
    untouched = {k: v for k, v in to_data(old, everything=True).items() if k not in others}
    now = {k: v for k, v in to_data(new, everything=True).items() if k not in others}
    old_fs, new_fs = [str(r) for r in old.fs], [str(r) for r in new.fs]
    if (
        untouched != now
        or set(new.network.domains) - set(old.network.domains) != set(edit.added)
        or not set(old.network.domains) <= set(new.network.domains)
        or old.network.mode != new.network.mode
        or old.network.local_ports != new.network.local_ports
        or new_fs != old_fs + list(edit.added_fs)
    ):
        raise EggError(f"{path}: the edit would change more than it adds; nothing written")
    rules = NetworkRules(domains=merged.network.domains)
    for entry in edit.added:
        host, _, port = entry.rpartition(":") if ":" in entry else (entry, "", "")
        probe = host.replace("*.", "any.", 1) if host.startswith("*.") else host
        if not rules.match(probe, int(port) if port else DEFAULT_PORTS[0])[0]:
            raise EggError(f"{path}: after the edit {entry} is still refused; nothing written")


def _compose(text: str, source: str) -> Node | None:
    try:
        node: Node | None = YAML().compose(text)
    except YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML ({exc})") from None
    return node


def _pair(mapping: MappingNode, key: str) -> tuple[Node, Node] | None:
    """The key and value nodes of ``key`` in ``mapping``."""
    for key_node, value_node in mapping.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return key_node, value_node
    return None


def _flow_list(entries: Sequence[str]) -> str:
    return "[" + ", ".join(yaml_item(e) for e in entries) + "]"


def _line_end(text: str, index: int) -> int:
    """The index just past the newline that ends the line holding ``index`` (or the end)."""
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _with_final_newline(text: str, newline: str) -> str:
    return text if not text or text.endswith("\n") else text + newline


def _extend(text: str, seq: SequenceNode, entries: Sequence[str], newline: str) -> str:
    """Entries appended to a list, in its own style."""
    items: list[Any] = seq.value
    if seq.flow_style:
        if items:  # after the last item (a trailing comma after it stays valid)
            at = items[-1].end_mark.index
            return text[:at] + "".join(", " + yaml_item(e) for e in entries) + text[at:]
        at = seq.end_mark.index - 1  # just inside the closing bracket of []
        if text[at : at + 1] != "]":
            raise ConfigError("the network list's closing bracket is not where YAML said")
        return text[:at] + ", ".join(yaml_item(e) for e in entries) + text[at:]
    last = items[-1]
    line_start = text.rfind("\n", 0, last.start_mark.index) + 1
    prefix = text[line_start : last.start_mark.index]
    if prefix.strip() != "-":  # not "<indent>- item" on its own line: write a standard dash
        prefix = " " * seq.start_mark.column + "- "
    at = _line_end(text, last.end_mark.index)
    head = _with_final_newline(text[:at], newline)
    added = "".join(prefix + yaml_item(e) + newline for e in entries)
    return head + added + text[at:]


def _replace_scalar(text: str, key: Node, node: Node, value: str) -> str:
    """The scalar ``node`` (``none``, ``~``, or nothing at all after ``key:``) replaced."""
    start, end = node.start_mark.index, node.end_mark.index
    if start == end:  # an empty value: YAML may place it on the next line, after the colon
        start = end = text.index(":", key.end_mark.index) + 1
        value = " " + value
    return text[:start] + value + text[end:]


def _add_domains_key(text: str, mapping: MappingNode, entries: Sequence[str], newline: str) -> str:
    """``domains:`` added to a network mapping that has none (``network: {mode: observe}``)."""
    items = _flow_list(entries)
    if mapping.flow_style:
        if mapping.value:
            at = mapping.value[-1][1].end_mark.index
            return text[:at] + ", domains: " + items + text[at:]
        at = mapping.end_mark.index - 1
        return text[:at] + "domains: " + items + text[at:]
    first_key = mapping.value[0][0]
    line_start = text.rfind("\n", 0, first_key.start_mark.index) + 1
    indent = " " * first_key.start_mark.column
    if text[line_start : first_key.start_mark.index].strip():
        raise ConfigError("the network mapping does not start on a line of its own")
    lines = [indent + "domains:"] + [indent + "  - " + yaml_item(e) for e in entries]
    return text[:line_start] + newline.join(lines) + newline + text[line_start:]


def _append_section(text: str, section: str, entries: Sequence[str], newline: str) -> str:
    """A ``network:`` (or ``fs:``) list appended to a file that has no such key."""
    lines = [f"{section}:"] + ["  - " + yaml_item(e) for e in entries]
    return _with_final_newline(text, newline) + newline.join(lines) + newline
