"""``egg policy suggest --apply``: add allowlist entries and fs rules to the egg.yaml a run used.

Every byte the user wrote stays where it was: comments, key order, quoting, indentation, blank
lines. A round-trip *dump* does not promise that (ruamel.yaml's dump re-indents every mapping of
a file to one width and moves trailing comments), so nothing is re-serialised: egg's own YAML
parser (:func:`egg_core.config.parsing.compose`, the one every run loads egg.yaml with, so the two
can never disagree about a file) gives each node's exact position, and the new entries are
inserted as text where the list ends (or where the key that will hold them goes), written in the
style of the list they join.

The edit is checked before it is shown and again before it is written: egg's own loader (same
errors, same line numbers) and the base chain resolved again, every added entry matched by the
allowlist afterwards, nothing but the additions changed, and no wildcard added unless ``--fold``
proposed it (hostnames come from what the sandboxed program asked for), and no ``fs`` rule
added unless the scope says it may be (:mod:`egg_core.suggest.scope`, asked again here, right
before the write) or the user named it with ``--include``. The write is atomic (a fresh file
renamed over) and refused when the file changed since it was read. ``mode`` is never touched:
switching to ``enforce`` is the user's step.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

import attrs
import yaml

from egg_core import safeio
from egg_core.config.files import ResolvedConfig, resolve_config
from egg_core.config.parsing import compose, decode, load_config_file, load_config_string, to_data
from egg_core.errors import ConfigError, EggError, UsageError
from egg_core.netrules import DEFAULT_PORTS, NetworkRules
from egg_core.suggest.network import split_entry

#: an egg.yaml larger than this is not edited (the loader's own limit is far above real files)
MAX_CONFIG_BYTES = 1024 * 1024
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?")
_DOCUMENT_END = re.compile(r"^\.\.\.[ \t]*(#.*)?$", re.MULTILINE)
#: why an ``fs`` rule may not be added without the user naming it (None: it may);
#: :meth:`egg_core.suggest.scope.Scope.review`
Review = Callable[[str], str | None]


@attrs.frozen
class Applied:
    """What ``--apply`` does (or did) to one file."""

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

        def lines(text: str) -> list[str]:
            out = text.splitlines(keepends=True)
            if out and not out[-1].endswith("\n"):  # as diff(1) says it, never glued on
                out[-1] += "\n\\ No newline at end of file\n"
            return out

        return "".join(
            difflib.unified_diff(
                lines(self.before), lines(self.after), str(self.path), str(self.path), n=1
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
    path = _leaf(resolved)
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


def _leaf(resolved: ResolvedConfig) -> Path:
    if resolved.path is None:
        raise UsageError(
            "no egg.yaml to edit: this directory uses the built-in default "
            "(create ./egg.yaml, or pass --config PATH)"
        )
    return Path(os.path.abspath(resolved.path))


def planned_edit(
    resolved: ResolvedConfig,
    network: Sequence[str],
    fs: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    wildcards: Collection[str] = (),
    *,
    review: Review | None = None,
    included: Collection[str] = (),
) -> Applied:
    """What ``--apply`` would write, checked (nothing is written): the file, the entries it
    lacks, and its text before and after. ``wildcards``: the ``*.`` entries ``--fold`` made,
    the only ones that may be added. An ``fs`` rule is added only when ``review`` has nothing
    against it or it is in ``included`` (without ``review``, only the included ones)."""
    path = network_file(resolved) if network else _leaf(resolved)
    before = decode(_read(os.path.realpath(path), path), str(path))
    after, new_domains, new_fs = add_entries(before, network, fs, str(path))
    edit = Applied(path, new_domains, before, after, new_fs)
    if after != before:
        _check(edit, os.environ if environ is None else environ, wildcards)
        _check_scope(edit, review, included)
    return edit


def apply_entries(
    resolved: ResolvedConfig,
    network: Sequence[str],
    environ: Mapping[str, str],
    fs: Sequence[str] = (),
    wildcards: Collection[str] = (),
    *,
    review: Review | None = None,
    included: Collection[str] = (),
) -> Applied:
    """Add ``network`` entries to the allowlist and ``fs`` rules to the config ``resolved``
    came from, checked and written atomically (see the module docstring; ``review`` and
    ``included`` as for :func:`planned_edit`)."""
    edit = planned_edit(resolved, network, fs, environ, wildcards, review=review, included=included)
    if edit.after == edit.before:
        return edit
    real = os.path.realpath(edit.path)  # a symlinked egg.yaml: edit the file, keep the link
    data = _read(real, edit.path)
    if decode(data, str(edit.path)) != edit.before:
        raise EggError(f"{edit.path}: changed while egg was editing it; nothing written, run again")
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    st = os.stat(real)
    safeio.replace(real, bom + edit.after.encode("utf-8"), mode=st.st_mode & 0o7777)
    if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
        os.chown(real, st.st_uid, st.st_gid, follow_symlinks=False)
    return edit


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


def edit_text(text: str, entries: Sequence[str], source: str, section: str = "network") -> str:
    """``text`` with ``entries`` added to its ``network`` allowlist or its ``fs`` rules, as
    inserted text; unchanged when ``entries`` is empty. The result is not validated here (see
    :func:`planned_edit`)."""
    if not entries:
        return text
    root = compose(text, source)
    newline = "\r\n" if "\r\n" in text else "\n"
    if root is None or (isinstance(root, yaml.ScalarNode) and root.value == ""):
        return _add_top_key(text, None, section, entries, newline)  # nothing, or only "---"
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(f"{source}: the top level is not a mapping")
    pair = _pair(root, section, source)
    if pair is None:
        return _add_top_key(text, root, section, entries, newline)
    key, value = pair
    if section == "fs":
        if isinstance(value, yaml.SequenceNode):
            return _extend(text, value, entries, newline)
        if isinstance(value, yaml.ScalarNode):
            return _replace_scalar(text, key, value, _flow_list(entries), source)  # fs: / ~
        raise ConfigError(f"{source}: fs is not a list")
    if isinstance(value, yaml.SequenceNode):
        return _extend(text, value, entries, newline)
    if isinstance(value, yaml.ScalarNode):
        if value.value.strip() == "*":
            return text  # everything is allowed already
        return _replace_scalar(text, key, value, _flow_list(entries), source)  # none / ~ / empty
    if not isinstance(value, yaml.MappingNode):
        raise ConfigError(f"{source}: network is neither a list nor a mapping")
    pair = _pair(value, "domains", source)
    if pair is None:
        return _add_domains_key(text, value, entries, newline, source)
    key, domains = pair
    if isinstance(domains, yaml.SequenceNode):
        return _extend(text, domains, entries, newline)
    if isinstance(domains, yaml.ScalarNode):
        if domains.value.strip() == "*":
            return text
        return _replace_scalar(text, key, domains, _flow_list(entries), source)
    raise ConfigError(f"{source}: network.domains is neither a list nor '*'")


def _check(edit: Applied, environ: Mapping[str, str], wildcards: Collection[str]) -> None:
    """The edit passes what a run checks, adds exactly what it says and changes nothing else."""
    path = edit.path
    for entry in edit.added:
        if "*" in entry and entry not in wildcards:
            raise EggError(f"{path}: refusing to add the wildcard {entry!r} (only --fold adds one)")
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
        host, port = split_entry(entry)
        probe = host.replace("*.", "any.", 1) if host.startswith("*.") else host
        if not rules.match(probe, int(port) if port else DEFAULT_PORTS[0])[0]:
            raise EggError(f"{path}: after the edit {entry} is still refused; nothing written")


def _check_scope(edit: Applied, review: Review | None, included: Collection[str]) -> None:
    """Every ``fs`` rule added is in the scope --apply may write by itself, or named."""
    for rule in edit.added_fs:
        if rule in included:
            continue
        why = review(rule) if review is not None else "no scope to check it against"
        if why is not None:
            raise EggError(
                f"{edit.path}: refusing to add {rule} ({why}): name it with --include once "
                "you have read it; nothing written"
            )


def current_text(resolved: ResolvedConfig) -> str | None:
    """The text of the egg.yaml ``--apply`` edits for ``fs`` rules; None when there is none
    or it cannot be read."""
    try:
        path = _leaf(resolved)
        return decode(_read(os.path.realpath(path), path), str(path))
    except EggError:
        return None


def hand_line(text: str | None, rule: str, source: str) -> str:
    """What the user adds to egg.yaml (``text``; None when there is none to edit) to write
    ``rule`` by hand: the line(s) --apply --include would insert, as they would read there."""
    import difflib

    generic = "fs:\n  - " + yaml_item(rule) if text is None else "- " + yaml_item(rule)
    if text is None:
        return generic
    try:
        after = edit_text(text, [rule], source, "fs")
    except (ConfigError, yaml.YAMLError):
        return generic
    added = [
        line[1:]
        for line in difflib.unified_diff(text.splitlines(), after.splitlines(), lineterm="", n=0)
        if line.startswith("+") and not line.startswith("+++")
    ]
    return "\n".join(added) or generic


def _read(real: str, shown: Path) -> bytes:
    try:
        return safeio.read_regular(real, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise UsageError(f"{shown}: cannot read it: {exc.strerror or exc}") from None


def _pair(mapping: yaml.MappingNode, key: str, source: str) -> tuple[yaml.Node, yaml.Node] | None:
    """The key and value nodes of ``key`` in ``mapping``; an alias (``network: *shared``) is
    refused, since text inserted there would change the anchor's other uses too."""
    for key_node, value_node in mapping.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            if value_node.start_mark.index < key_node.end_mark.index:
                raise ConfigError(
                    f"{source}: {key} is an alias of another part of the file; "
                    "write it out to let egg add to it"
                )
            return key_node, value_node
    return None


def _flow_list(entries: Sequence[str]) -> str:
    return "[" + ", ".join(yaml_item(e) for e in entries) + "]"


def _after_node(text: str, node: yaml.Node) -> int:
    """Where a line inserted after ``node`` goes: after the line it ends on, or right where it
    ends if that is already a line start (a block scalar ends at the next line)."""
    end = node.end_mark.index
    if end > 0 and text[end - 1] == "\n":
        return end
    found = text.find("\n", end)
    return len(text) if found < 0 else found + 1


def _with_final_newline(text: str, newline: str) -> str:
    return text if not text or text.endswith("\n") else text + newline


def _extend(text: str, seq: yaml.SequenceNode, entries: Sequence[str], newline: str) -> str:
    """Entries appended to a list, in its own style."""
    items = seq.value
    if seq.flow_style:
        if items:  # after the last item (a trailing comma after it stays valid)
            at = items[-1].end_mark.index
            return text[:at] + "".join(", " + yaml_item(e) for e in entries) + text[at:]
        at = seq.end_mark.index - 1  # just inside the closing bracket of []
        return text[:at] + ", ".join(yaml_item(e) for e in entries) + text[at:]
    last = items[-1]
    line_start = text.rfind("\n", 0, last.start_mark.index) + 1
    prefix = text[line_start : last.start_mark.index]
    if prefix.strip() != "-":  # not "<indent>- item" on its own line: write a standard dash
        prefix = " " * seq.start_mark.column + "- "
    at = _after_node(text, last)
    head = _with_final_newline(text[:at], newline)
    added = "".join(prefix + yaml_item(e) + newline for e in entries)
    return head + added + text[at:]


def _replace_scalar(text: str, key: yaml.Node, node: yaml.Node, value: str, source: str) -> str:
    """The scalar ``node`` (``none``, ``~``, or nothing at all after ``key:``) replaced."""
    start, end = node.start_mark.index, node.end_mark.index
    if start == end:  # an empty value, placed by YAML at the next token: write after the colon
        between = text[key.end_mark.index : max(start, key.end_mark.index)]
        colon = between.find(":")
        if colon < 0:
            raise ConfigError(f"{source}: {key.value} has no ':' egg can write after")
        start = end = key.end_mark.index + colon + 1
        value = " " + value
    return text[:start] + value + text[end:]


def _add_domains_key(
    text: str, mapping: yaml.MappingNode, entries: Sequence[str], newline: str, source: str
) -> str:
    """``domains:`` added to a network mapping that has none (``network: {mode: observe}``)."""
    items = _flow_list(entries)
    if mapping.flow_style or not mapping.value:
        return _into_flow_mapping(text, mapping, f"domains: {items}", source)
    first_key = mapping.value[0][0]
    line_start = text.rfind("\n", 0, first_key.start_mark.index) + 1
    indent = " " * first_key.start_mark.column
    if text[line_start : first_key.start_mark.index].strip():
        raise ConfigError(f"{source}: the network mapping does not start on a line of its own")
    lines = [indent + "domains:"] + [indent + "  - " + yaml_item(e) for e in entries]
    return text[:line_start] + newline.join(lines) + newline + text[line_start:]


def _into_flow_mapping(text: str, mapping: yaml.MappingNode, pair: str, source: str) -> str:
    if mapping.value:
        at = mapping.value[-1][1].end_mark.index
        return text[:at] + ", " + pair + text[at:]
    at = mapping.end_mark.index - 1
    if text[at : at + 1] != "}":
        raise ConfigError(f"{source}: cannot find where the mapping ends")
    return text[:at] + pair + text[at:]


def _add_top_key(
    text: str,
    root: yaml.MappingNode | None,
    section: str,
    entries: Sequence[str],
    newline: str,
) -> str:
    """A ``network:`` (or ``fs:``) list added to a file that has no such key: inside a flow
    mapping's braces, after a block mapping's last value, or at the end of an empty file — never
    after a document end marker (``...``), which would start a second document."""
    if root is not None and root.flow_style:
        return _into_flow_mapping(text, root, f"{section}: {_flow_list(entries)}", "egg.yaml")
    lines = [f"{section}:"] + ["  - " + yaml_item(e) for e in entries]
    block = newline.join(lines) + newline
    if root is not None and root.value:
        at = _after_node(text, root.value[-1][1])
        return _with_final_newline(text[:at], newline) + block + text[at:]
    marker = _DOCUMENT_END.search(text)
    at = marker.start() if marker else len(text)
    return _with_final_newline(text[:at], newline) + block + text[at:]
