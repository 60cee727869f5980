"""One SGLang version's ``launch_server`` flags, answering the way that version's parser would.

A :class:`FlagTable` is built by :func:`workbench.source.server_flags`. Its rules are
``argparse.ArgumentParser``'s with ``allow_abbrev`` as the source sets it (CPython
3.11's, the interpreter SGLang's cp311 wheels target):

- an exact option string (primary or alias) is that flag;
- ``--name=value`` splits at the first ``=``;
- with ``allow_abbrev``, a unique prefix of a ``--`` option string is that flag
  (``--tp`` is ``--tp-size``), and a prefix of several is an "ambiguous option"
  error (``--cuda-graph-max-bs`` on 0.5.20 could be ``-decode`` or ``-prefill``);
- anything else is an unknown flag.

Messages name the flag and the fix: a flag the previous release had is reported
as removed, with its successor (its ``new_flag``, or the flag now storing the
same destination); otherwise close spellings are suggested (difflib, similarity of
at least :data:`SUGGEST_CUTOFF`, so a typo gets its flag and an unrelated flag
that merely shares the ``--speculative-`` prefix gets no suggestion).

Pure: the compared release's table is resolved by the caller
(:func:`workbench.source.server_flags`) and held in :attr:`FlagTable.previous`.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pandas as pd

from workbench.source._flag_records import Flag, FlagError, FlagMatch, FlagProblem, SpeculativeAlgorithms

#: Least difflib similarity (0-1) of a suggested spelling to an unknown flag. 0.8 keeps typos
#: (``--specualtive-num-steps`` -> ``--speculative-num-steps``: 0.96; ``--enable-dp-attn`` ->
#: ``--enable-dp-attention``: 0.87) and drops flags that only share a prefix
#: (``--speculative-adaptive`` -> ``--speculative-draft-model``: 0.72).
SUGGEST_CUTOFF = 0.8


#: How many releases before the previous one :meth:`FlagTable._older_history` looks through.
OLDER_RELEASES = 8


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
        previous: the table of the release compared against for removed flags, or None.
        previous_adjacent: :attr:`previous` is the release right before this one on the
            package index (messages then say "was removed in"; otherwise "is gone in").
        older: ``older(option, before, steps)`` -> ``(table of the newest release up to
            before that has option, the release after it)`` or None; set by
            :func:`workbench.source.server_flags` for a release compared with the one before.
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
    previous: FlagTable | None = None
    previous_adjacent: bool = False
    older: Callable[..., tuple[FlagTable, str] | None] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )

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

        See :func:`workbench.source._flag_check.check_argv`.
        """
        from workbench.source._flag_check import check_argv

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

    def _older_history(self, option: str) -> tuple[str, str | None] | None:
        """(when ``option`` went away, the flag to use now), from releases before the previous one.

        Only for a release compared with the one right before it (``previous="auto"``):
        walks back up to :data:`OLDER_RELEASES` releases (their wheels are fetched and
        cached) for the last one that had ``option``, so an abbreviation that became
        ambiguous long after its flag was removed (``--cuda-graph-max-bs``: removed in
        0.5.20, ambiguous since) is named as the removed flag, with its successor (the
        flag storing the same ``dest`` now).
        """
        if not (self.previous_adjacent and self.version and self.previous is not None and self.older):
            return None
        found = self.older(option, self.previous.version, steps=OLDER_RELEASES)
        if found is None:
            return None
        had, removed_in = found
        was = had.get(option)
        same_dest = [f for f in self.flags if was is not None and f.dest == was.dest]
        fix = same_dest[0].name if same_dest else None
        return (
            f"was removed in SGLang {removed_in} (SGLang {had.version} was the last release with it; "
            f"it is now only a prefix of other flags)"
        ), fix

    def _ambiguous(self, option: str, candidates: list[str]) -> FlagError:
        listed = ", ".join(f"`{c}`" for c in candidates)
        message = (f"`{option}` is ambiguous in {self._where()}: argparse's prefix matching could read it as "
                   f"{listed}, so the server refuses it.")  # fmt: skip
        fix = None
        history = self._history(option) or self._older_history(option)
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
        close = difflib.get_close_matches(option, longs, n=3, cutoff=SUGGEST_CUTOFF)
        message = f"`{option}` is not a flag of {self._where()}."
        if close:
            message += " Did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
        else:
            message += f" See `python -m sglang.launch_server --help` for {self._where()}'s flags."
        return FlagError(message, kind="unknown", option=option, version=self.label, candidates=close,
                         fix=close[0] if close else None)  # fmt: skip
