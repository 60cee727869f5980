"""The ``launch_server`` flags of an SGLang version, derived from its source, with argparse's semantics.

:func:`server_flags` runs ``remote/server_flags.py`` on a release (its cached wheel,
on this machine) or on a checkout on any host, so the flag set is read from that
version's own ``srt/server_args.py`` and ``srt/arg_groups/`` -- never from a list
kept by hand. The :class:`FlagTable` it returns answers the way that version's
parser would (``argparse.ArgumentParser`` with ``allow_abbrev`` as the source sets
it; the rules are CPython 3.11's, the interpreter SGLang's cp311 wheels target):

- an exact option string (primary or alias) is that flag;
- ``--name=value`` splits at the first ``=``;
- with ``allow_abbrev``, a unique prefix of a ``--`` option string is that flag
  (``--tp`` is ``--tp-size``), and a prefix of several is an "ambiguous option"
  error (``--cuda-graph-max-bs`` on 0.5.20 could be ``-decode`` or ``-prefill``);
- anything else is an unknown flag.

Messages name the flag and the fix: a flag the previous release had is reported
as removed, with its successor (its ``new_flag``, or the flag now storing the
same destination); otherwise close spellings are suggested (difflib).

Facts the tests check: 0.5.9 has ``--cuda-graph-max-bs`` and ``--tp`` abbreviates
``--tp-size``; 0.5.16 keeps ``--cuda-graph-max-bs`` as a deprecated alias of
``--cuda-graph-max-bs-decode``; 0.5.20 drops it, so it is ambiguous there.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import pandas as pd

from workbench.errors import ConfigError, SourceError
from workbench.hosts import Host, LocalHost, get_host
from workbench.remote_helpers import call_helper
from workbench.source.releases import DOWNLOAD_TIMEOUT_S, sglang_release
from workbench.source.versions import previous_release

#: Limit for one extraction, in seconds.
FLAGS_TIMEOUT_S = 120.0
_VERSION_LIKE = re.compile(r"^[0-9]+(\.[0-9]+)+((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$")

FlagErrorKind = Literal["unknown", "removed", "ambiguous", "invalid_choice", "missing_value", "unexpected_value"]


class FlagError(ConfigError):
    """A command-line flag that the SGLang version's parser would refuse.

    Attributes:
        kind: unknown | removed | ambiguous | invalid_choice | missing_value | unexpected_value.
        option: the flag as written (``--cuda-graph-max-bs``).
        version: the SGLang version (or tree) checked against.
        candidates: the flags an ambiguous prefix could mean, or close spellings.
        fix: what to write instead, when there is one (``--cuda-graph-max-bs-decode``).
    """

    def __init__(self, message: str, *, kind: FlagErrorKind, option: str, version: str,
                 candidates: Sequence[str] = (), fix: str | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.kind = kind
        self.option = option
        self.version = version
        self.candidates = tuple(candidates)
        self.fix = fix


@dataclasses.dataclass(frozen=True)
class Flag:
    """One ``launch_server`` flag as the source declares it.

    Attributes:
        option_strings: every spelling, primary first (``("--tp-size", "--tensor-parallel-size")``).
        dest: the ``ServerArgs`` field it stores into.
        action: ``store``, ``store_true``, or the action class's name.
        nargs: argparse's nargs (None: exactly one value; 0: none; ``"+"``, ``"*"``, ``"?"`` or a count).
        takes_value: False for flags that take no value (store_true and friends).
        type: the ``type=`` as source text (``int``, ``json_list_type``), or None.
        choices: the allowed values, or None when free or computed at run time.
        choices_source: ``literal``, the constant it came from (``LOAD_FORMAT_CHOICES (file:line)``),
            or ``unresolved: <expr>``.
        choices_extensible: the choices list is extended at run time (plugins).
        default: the default (a literal, or its source text).
        required: argparse requires it.
        deprecated: a deprecated action or help text that says so.
        replacement: the flag to use instead, when the source names one.
        help: help text (first 600 characters).
        hidden: help is ``argparse.SUPPRESS``.
        condition: source of the ``if`` it is added under, when it is conditional.
        origin: ``add_argument``, ``field`` (an annotated field) or ``argparse`` (``--help``).
        file: source file (relative to the ``sglang`` package); line: its line.
    """

    option_strings: tuple[str, ...]
    dest: str
    action: str
    nargs: int | str | None
    takes_value: bool
    type: str | None
    choices: tuple[Any, ...] | None
    choices_source: str | None
    choices_extensible: bool
    default: Any
    required: bool
    deprecated: bool
    replacement: str | None
    help: str | None
    hidden: bool
    condition: str | None
    origin: str
    file: str
    line: int | None

    @property
    def name(self) -> str:
        """The primary option string."""
        return self.option_strings[0]

    @classmethod
    def from_answer(cls, record: dict[str, Any]) -> Flag:
        """Build from one flag of the helper's answer."""
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in record.items() if k in fields}
        values["option_strings"] = tuple(values["option_strings"])
        values["choices"] = tuple(values["choices"]) if values.get("choices") is not None else None
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class SpeculativeAlgorithms:
    """The values ``--speculative-algorithm`` accepts in one version.

    Attributes:
        names: the algorithms (argparse choices, or the ``SpeculativeAlgorithm`` enum's members).
        aliases: other accepted spellings (``NEXTN``).
        case_sensitive: False when the value is upper-cased before the check.
        plugins: names registered by plugins are accepted too.
        source: where ``names`` come from (file and line).
        validated_in: where a free-string value is checked (``file:line``).
    """

    names: tuple[str, ...]
    aliases: tuple[str, ...]
    case_sensitive: bool
    plugins: bool
    source: str | None
    validated_in: tuple[str, ...]

    def accepts(self, value: str) -> bool:
        """True when ``value`` is a built-in name or alias (plugins aside)."""
        known = self.names + self.aliases
        return value in known if self.case_sensitive else value.upper() in {k.upper() for k in known}


@dataclasses.dataclass(frozen=True)
class FlagMatch:
    """How one command-line token resolved.

    Attributes:
        flag: the flag.
        option: the option string it matched (the full spelling).
        explicit_value: the part after ``=``, or None.
        abbreviated: matched as a prefix abbreviation.
    """

    flag: Flag
    option: str
    explicit_value: str | None
    abbreviated: bool


@dataclasses.dataclass(frozen=True)
class FlagTable:
    """Every ``launch_server`` flag of one SGLang version (or tree), with its parser's matching rules.

    Attributes:
        label: the version (``"0.5.20"``) or ``"<host>:<root>"`` for a tree.
        version: the release version, or None for a tree.
        flags: the flags, in the order the parser adds them (``--help`` first).
        allow_abbrev: prefix abbreviations are accepted (argparse's default).
        layout: ``add_argument`` (up to 0.5.13), ``dataclass-fields`` (0.5.14 to 0.5.19)
            or ``namespaces`` (0.5.20 on).
        speculative: the ``--speculative-algorithm`` values.
        parser: where the parser is built (file, line, prog).
        notes: what the extraction could not do (choices computed at run time, ...).
        host, root: where the source was read.
        compare_with: the release compared against for removed flags: a version,
            ``"auto"`` (the release right before :attr:`version` on the package index,
            looked up when first needed), or None.
    """

    label: str
    version: str | None
    flags: tuple[Flag, ...]
    allow_abbrev: bool
    layout: str
    speculative: SpeculativeAlgorithms
    parser: dict[str, Any]
    notes: tuple[str, ...]
    host: str
    root: str
    compare_with: str | None = None

    def __repr__(self) -> str:  # the flags themselves would fill a notebook cell
        return f"<FlagTable {self.label}: {len(self.flags)} flags, layout {self.layout!r}>"

    # -- lookup ---------------------------------------------------------------
    @functools.cached_property
    def _by_option(self) -> dict[str, Flag]:
        return {option: flag for flag in self.flags for option in flag.option_strings}

    def __iter__(self) -> Iterator[Flag]:
        return iter(self.flags)

    def __len__(self) -> int:
        return len(self.flags)

    def __contains__(self, option: object) -> bool:
        return option in self._by_option

    def get(self, option: str) -> Flag | None:
        """The flag spelled exactly ``option`` (primary or alias), or None."""
        return self._by_option.get(option)

    @property
    def options(self) -> list[str]:
        """Every option string, in the parser's order."""
        return list(self._by_option)

    @functools.cached_property
    def previous(self) -> FlagTable | None:
        """The table of the release named by :attr:`compare_with` (built on first use), or None.

        With ``"auto"``, an index that cannot be listed means no comparison (messages
        then fall back to close spellings) rather than an error.
        """
        version = self.compare_with
        if version == "auto":
            try:
                version = previous_release(self.version) if self.version else None
            except SourceError:
                return None
        return server_flags(version, previous=None) if version else None

    @property
    def previous_adjacent(self) -> bool:
        """True when :attr:`previous` is the release right before this one."""
        return self.compare_with == "auto"

    # -- argparse semantics -----------------------------------------------------
    def match(self, token: str) -> FlagMatch:
        """Resolve one command-line token (``--tp``, ``--port=8000``) as this version's parser would.

        Raises:
            FlagError: kind ``ambiguous``, ``removed`` or ``unknown``; the message names the fix.
        """
        if token in self._by_option:
            return FlagMatch(self._by_option[token], token, None, False)
        option, sep, value = token.partition("=")
        explicit = value if sep else None
        if sep and option in self._by_option:
            return FlagMatch(self._by_option[option], option, explicit, False)
        candidates = []
        if self.allow_abbrev and option.startswith("--"):
            candidates = [o for o in self._by_option if o.startswith(option)]
        if len(candidates) == 1:
            return FlagMatch(self._by_option[candidates[0]], candidates[0], explicit, True)
        if len(candidates) > 1:
            raise self._ambiguous(option, candidates)
        raise self._unknown(option)

    def resolve(self, token: str) -> Flag:
        """The flag ``token`` means (see :meth:`match`).

        Raises:
            FlagError: the token is ambiguous, removed or unknown.
        """
        return self.match(token).flag

    def check(self, argv: Sequence[str], *, require: bool = False) -> list[FlagProblem]:
        """Every problem the parser would have with ``argv``, plus warnings (deprecated, abbreviated).

        See :func:`workbench.source.flag_check.check_argv`.
        """
        from workbench.source.flag_check import check_argv

        return check_argv(self, argv, require=require)

    def frame(self) -> pd.DataFrame:
        """One row per flag: flag, aliases, action, takes_value, type, choices, default, required,
        deprecated, replacement, file, line."""
        rows = [{
            "flag": f.name, "aliases": ", ".join(f.option_strings[1:]), "action": f.action,
            "takes_value": f.takes_value, "type": f.type,
            "choices": None if f.choices is None else ", ".join(map(str, f.choices)),
            "default": f.default, "required": f.required, "deprecated": f.deprecated, "replacement": f.replacement,
            "file": f.file, "line": f.line,
        } for f in self.flags]  # fmt: skip
        return pd.DataFrame(rows)

    # -- messages -------------------------------------------------------------
    def _where(self) -> str:
        return f"SGLang {self.version}" if self.version else self.label

    def _history(self, option: str) -> tuple[str, str | None] | None:
        """(what the previous release had, the flag to use now) when ``option`` was a flag there."""
        previous = self.previous
        was = previous.get(option) if previous is not None else None
        if was is None:
            return None
        fix = None
        if was.replacement and was.replacement.split("=")[0] in self._by_option:
            fix = was.replacement
        if fix is None:
            same_dest = [f for f in self.flags if f.dest == was.dest]
            shared = [o for o in was.option_strings if o in self._by_option]
            fix = same_dest[0].name if same_dest else (shared[0] if shared else was.replacement)
        what = (f"a deprecated alias of `{was.replacement}`" if was.deprecated and was.replacement
                else "deprecated" if was.deprecated else "a flag")  # fmt: skip
        when = (f"was removed in {self._where()}" if self.previous_adjacent
                else f"is gone in {self._where()}")  # fmt: skip
        return f"{when} (in SGLang {previous.version} it was {what})", fix  # type: ignore[union-attr]

    def _ambiguous(self, option: str, candidates: list[str]) -> FlagError:
        listed = ", ".join(f"`{c}`" for c in candidates)
        message = (f"`{option}` is ambiguous in {self._where()}: argparse's prefix matching could read it as "
                   f"{listed}, so the server refuses it.")  # fmt: skip
        fix = None
        history = self._history(option)
        if history is not None:
            said, fix = history
            message += f" `{option}` {said}."
        if fix:
            message += f" Use `{fix}`."
        else:
            message += " Spell the flag out in full."
        return FlagError(message, kind="ambiguous", option=option, version=self.label, candidates=candidates, fix=fix)

    def _unknown(self, option: str) -> FlagError:
        history = self._history(option)
        if history is not None:
            said, fix = history
            message = f"`{option}` {said}." + (f" Use `{fix}`." if fix else " Drop it.")
            return FlagError(message, kind="removed", option=option, version=self.label, fix=fix)
        longs = [o for o in self._by_option if o.startswith("--")]
        close = difflib.get_close_matches(option, longs, n=3, cutoff=0.6)
        message = f"`{option}` is not a flag of {self._where()}."
        if close:
            message += " Did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
        else:
            message += f" See `python -m sglang.launch_server --help` for {self._where()}'s flags."
        return FlagError(message, kind="unknown", option=option, version=self.label, candidates=close,
                         fix=close[0] if close else None)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class FlagProblem:
    """One finding of :meth:`FlagTable.check`.

    Attributes:
        severity: ``error`` (the server would refuse it) or ``warning``.
        kind: a :class:`FlagError` kind, or ``deprecated``, ``abbreviation``, ``missing_required``,
            ``unknown_algorithm``, ``extensible_choice``.
        option: the token as written.
        flag: the flag it resolved to (primary spelling), or None.
        message: says what is wrong and what to write instead.
        fix: the replacement, when there is one.
    """

    severity: Literal["error", "warning"]
    kind: str
    option: str
    flag: str | None
    message: str
    fix: str | None = None


def server_flags(
    version_or_tree: str,
    *,
    host: str | Host = "local",
    previous: str | FlagTable | None = "auto",
    timeout_s: float = FLAGS_TIMEOUT_S,
) -> FlagTable:
    """The ``launch_server`` flags of an SGLang release or source tree, read from its source.

    Args:
        version_or_tree: a release version (``"0.5.20"``: its wheel is fetched and cached)
            or a directory on ``host``: the ``sglang`` package, or a checkout holding
            ``python/sglang``.
        host: where a tree is (``"local"``, an ssh config alias, or a Host); releases
            are always read on this machine.
        previous: the release to compare against for removed flags: ``"auto"`` (the
            release right before a release version, found on the package index when
            first needed; none for a tree), a version, a table, or None.
        timeout_s: limit for the extraction, in seconds.

    Returns:
        The :class:`FlagTable`.

    Raises:
        ConfigError: a malformed version.
        SourceError: the release could not be fetched, or the tree is not an SGLang
            source tree (or cannot be parsed by the host's python3).
        HostError: the host could not be reached.
    """
    if _VERSION_LIKE.match(version_or_tree):
        answer = _release_answer(version_or_tree, timeout_s)
        where, label, version = "local", version_or_tree, version_or_tree
    else:
        target = get_host(host)
        answer = call_helper(target, "server_flags", {"root": version_or_tree}, timeout_s=timeout_s)
        where, label, version = target.name, f"{target.name}:{answer['root']}", None
    compare_with = None
    if isinstance(previous, FlagTable):
        compare_with = previous.version
    elif previous == "auto":
        compare_with = "auto" if version is not None else None
    elif previous is not None:
        compare_with = previous
    table = FlagTable(
        label=label, version=version, flags=tuple(Flag.from_answer(f) for f in answer["flags"]),
        allow_abbrev=bool(answer["parser"]["allow_abbrev"]), layout=answer["layout"],
        speculative=_algorithms(answer["speculative_algorithms"]), parser=dict(answer["parser"]),
        notes=tuple(answer["notes"]), host=where, root=answer["root"], compare_with=compare_with,
    )  # fmt: skip
    if isinstance(previous, FlagTable):
        table.__dict__["previous"] = previous  # cached_property's slot: no need to build it again
    return table


@functools.lru_cache(maxsize=64)
def _release_answer(version: str, timeout_s: float) -> dict[str, Any]:
    """The helper's answer for a release (releases never change, so it is kept for the process)."""
    release = sglang_release(version, timeout_s=DOWNLOAD_TIMEOUT_S)
    return call_helper(LocalHost(), "server_flags", {"root": str(release.package_dir)}, timeout_s=timeout_s)


def _algorithms(info: dict[str, Any]) -> SpeculativeAlgorithms:
    return SpeculativeAlgorithms(
        names=tuple(info["names"]), aliases=tuple(info["aliases"]), case_sensitive=bool(info["case_sensitive"]),
        plugins=bool(info["plugins"]), source=info.get("source"), validated_in=tuple(info["validated_in"]),
    )  # fmt: skip
