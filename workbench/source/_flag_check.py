"""Check a ``launch_server`` command line against one SGLang version's flags, the way its parser reads it.

Pure: works on a :class:`~workbench.source._flag_table.FlagTable` and a list of tokens.
Tokens are consumed as argparse consumes them: a flag that stores one value takes
the next token unless that token looks like a flag; ``store_true`` flags take
none (``--flag=x`` is refused, a stray ``x`` is an unrecognised argument);
``nargs`` ``"?"``/``"*"``/``"+"`` take as many non-flag tokens as there are.
Negative numbers are values, not flags (no SGLang flag looks like one).

Errors are what would stop the server from starting; warnings are deprecated
flags, abbreviations (they break when a later release adds a flag with the same
prefix, as ``--cuda-graph-max-bs`` did in 0.5.20) and values outside a choices
list that plugins may extend.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.source._flag_records import Flag, FlagError, FlagProblem

if TYPE_CHECKING:  # FlagTable.check calls check_argv: imported for annotations only
    from workbench.source._flag_table import FlagTable

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def looks_like_flag(token: str) -> bool:
    """True when argparse would read ``token`` as an option rather than a value."""
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def check_argv(table: FlagTable, argv: Sequence[str], *, require: bool = False) -> list[FlagProblem]:
    """Every problem ``table``'s version would have with ``argv`` (flags and values, no program name).

    Args:
        table: the version's flags (:func:`workbench.source.server_flags`).
        argv: the tokens after ``python -m sglang.launch_server``.
        require: also report required flags that are missing (``--model-path``).

    Returns:
        The problems in command-line order: errors (kinds unknown, removed,
        ambiguous, invalid_choice, missing_value, unexpected_value,
        unknown_algorithm, missing_required) and warnings (deprecated,
        abbreviation, extensible_choice).
    """
    problems: list[FlagProblem] = []
    seen: set[str] = set()
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--" or not looks_like_flag(token):
            problems.append(FlagProblem(
                "error", "unexpected_value", token, None,
                f"`{token}` is not a flag and no flag before it takes a value; the server would stop with "
                f"'unrecognized arguments: {token}'. Remove it, or put the flag it belongs to before it.",
            ))  # fmt: skip
            continue
        try:
            match = table.match(token)
        except FlagError as exc:
            problems.append(FlagProblem("error", exc.kind, token, None, str(exc), exc.fix))
            while i < len(tokens) and not looks_like_flag(tokens[i]):
                i += 1  # the unknown flag's values: one finding is enough
            continue
        flag = match.flag
        seen.add(flag.dest)
        problems.extend(_warnings(table, token, match.option, flag, match.abbreviated))
        values, i, problem = _consume(flag, token, match.explicit_value, tokens, i)
        if problem is not None:
            problems.append(problem)
            continue
        problems.extend(_check_values(table, token, flag, values))
    if require:
        for flag in table.flags:
            if flag.required and flag.dest not in seen:
                problems.append(FlagProblem(
                    "error", "missing_required", flag.name, flag.name,
                    f"`{flag.name}` is required by {_where(table)}; the server would stop with "
                    f"'the following arguments are required: {'/'.join(flag.option_strings)}'.",
                ))  # fmt: skip
    return problems


def _where(table: FlagTable) -> str:
    return f"SGLang {table.version}" if table.version else table.label


def _warnings(table: FlagTable, token: str, option: str, flag: Flag, abbreviated: bool) -> list[FlagProblem]:
    found = []
    if abbreviated:
        found.append(FlagProblem(
            "warning", "abbreviation", token, flag.name,
            f"`{token.partition('=')[0]}` is accepted by {_where(table)} only as an abbreviation of `{option}`; "
            f"write `{option}` (an abbreviation breaks when a later release adds a flag with the same prefix).",
            option,
        ))  # fmt: skip
    if flag.deprecated:
        fix = flag.replacement
        found.append(FlagProblem(
            "warning", "deprecated", token, flag.name,
            f"`{option}` is deprecated in {_where(table)}" + (f"; use `{fix}`." if fix else ".")
            + (f" ({flag.help})" if flag.help and not fix else ""),
            fix,
        ))  # fmt: skip
    return found


def _consume(flag: Flag, token: str, explicit: str | None, tokens: list[str], i: int
             ) -> tuple[list[str], int, FlagProblem | None]:  # fmt: skip
    """(values, next index, problem) for ``flag`` at ``tokens[i-1]``, as argparse's nargs rules take them."""
    if explicit is not None:
        if not flag.takes_value:
            return [], i, FlagProblem(
                "error", "unexpected_value", token, flag.name,
                f"`{flag.name}` takes no value ({flag.action}); the server would stop with 'ignored explicit "
                f"argument {explicit!r}'. Write `{token.partition('=')[0]}` alone to turn it on.",
            )  # fmt: skip
        return [explicit], i, None
    nargs = flag.nargs
    if not flag.takes_value:
        return [], i, None
    following: list[str] = []
    while i + len(following) < len(tokens) and not looks_like_flag(tokens[i + len(following)]):
        following.append(tokens[i + len(following)])
    if nargs in (None, "?") or isinstance(nargs, str) and nargs not in ("*", "+"):
        wanted = 1 if following else 0
        if nargs is None and not following:
            return [], i, FlagProblem(
                "error", "missing_value", token, flag.name,
                f"`{flag.name}` needs a value (expected one argument), e.g. `{flag.name} "
                f"{_example(flag)}`.",
            )  # fmt: skip
        return following[:wanted], i + wanted, None
    if isinstance(nargs, int):
        if len(following) < nargs:
            return (
                [],
                i + len(following),
                FlagProblem("error", "missing_value", token, flag.name, f"`{flag.name}` needs {nargs} values."),
            )
        return following[:nargs], i + nargs, None
    if nargs == "+" and not following:
        return [], i, FlagProblem("error", "missing_value", token, flag.name,
                                  f"`{flag.name}` needs at least one value.")  # fmt: skip
    return following, i + len(following), None


def _close(value: str, allowed: list[str]) -> list[str]:
    """The allowed value closest to ``value``, ignoring case (``eagle`` -> ``EAGLE``), as a 0/1-item list."""
    folded = {a.lower(): a for a in allowed}
    return [folded[c] for c in difflib.get_close_matches(value.lower(), list(folded), n=1, cutoff=0.6)]


def _example(flag: Flag) -> str:
    if flag.choices:
        return str(flag.choices[0])
    return {"int": "8", "float": "0.5"}.get(flag.type or "", "VALUE")


def _convert(flag: Flag, value: str) -> Any:
    """``value`` as the flag's ``type`` would make it (int and float only; anything else stays text)."""
    try:
        if flag.type == "int":
            return int(value)
        if flag.type == "float":
            return float(value)
    except ValueError:
        return value
    return value


def _check_values(table: FlagTable, token: str, flag: Flag, values: list[str]) -> list[FlagProblem]:
    found = []
    for value in values:
        if flag.type in ("int", "float") and not isinstance(_convert(flag, value), (int, float)):
            found.append(FlagProblem(
                "error", "invalid_choice", token, flag.name,
                f"`{flag.name}` takes {'an integer' if flag.type == 'int' else 'a number'}; "
                f"{value!r} is not one (invalid {flag.type} value).",
            ))  # fmt: skip
            continue
        if flag.choices is not None:
            if _convert(flag, value) in flag.choices or value in map(str, flag.choices):
                continue
            close = _close(value, [str(c) for c in flag.choices])
            allowed = ", ".join(map(str, flag.choices))
            if flag.choices_extensible:
                found.append(FlagProblem(
                    "warning", "extensible_choice", token, flag.name,
                    f"{value!r} is not a built-in choice of `{flag.name}` in {_where(table)} ({allowed}); it works "
                    "only if a plugin adds it.", close[0] if close else None,
                ))  # fmt: skip
            else:
                found.append(FlagProblem(
                    "error", "invalid_choice", token, flag.name,
                    f"{value!r} is not a choice of `{flag.name}` in {_where(table)}; choose from {allowed}"
                    + (f" (did you mean {close[0]!r}?)." if close else "."), close[0] if close else None,
                ))  # fmt: skip
        elif flag.dest == "speculative_algorithm" and not table.speculative.accepts(value):
            known = table.speculative.names + table.speculative.aliases
            close = _close(value, list(known))
            plugin = (
                " or a name a plugin registers via SpeculativeAlgorithm.register" if table.speculative.plugins else ""
            )
            where = ", ".join(table.speculative.validated_in[:1]) or table.speculative.source
            found.append(FlagProblem(
                "error", "unknown_algorithm", token, flag.name,
                f"{value!r} is not a speculative algorithm of {_where(table)}: it accepts {', '.join(known)}{plugin} "
                f"(checked in {where})." + (f" Did you mean {close[0]!r}?" if close else ""),
                close[0] if close else None,
            ))  # fmt: skip
    return found
