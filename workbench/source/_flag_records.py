"""What one ``launch_server`` flag is, and what a check says about it: plain frozen records.

- :class:`Flag`: one flag as the version's source declares it;
- :class:`SpeculativeAlgorithms`: the values ``--speculative-algorithm`` accepts;
- :class:`FlagMatch`: how one command-line token resolved;
- :class:`FlagProblem`: one finding of :meth:`FlagTable.check <workbench.source._flags.FlagTable.check>`;
- :class:`FlagError`: a token the version's parser would refuse.

Pure: nothing here reads files or runs anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from workbench.errors import ConfigError

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
        """Build from one flag of the helper's answer (keys the record lacks a field for are ignored)."""
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

    @classmethod
    def from_answer(cls, info: dict[str, Any]) -> SpeculativeAlgorithms:
        """Build from the helper answer's ``speculative_algorithms`` object."""
        return cls(
            names=tuple(info["names"]), aliases=tuple(info["aliases"]), case_sensitive=bool(info["case_sensitive"]),
            plugins=bool(info["plugins"]), source=info.get("source"), validated_in=tuple(info["validated_in"]),
        )  # fmt: skip


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
class FlagProblem:
    """One finding of :meth:`FlagTable.check <workbench.source._flags.FlagTable.check>`.

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
