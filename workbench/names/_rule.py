"""The one rule for the names a user gives: variant names and run labels.

A variant name becomes part of a run id (``<time>-<name>-<hex>``), of chart file names
(``ratio_<name>.png``/``.svg``), of rows in parquet tables, of HTML reports and of command lines; a
label is stored with runs and shown in the catalogue and reports. One rule serves every entry
(variant files, grids, notebooks' ``variants``, ``workbench bench``, ``workbench import --variant``
and an imported file's own tag, ``workbench runs label``, a sweep's ``label``) and one message
says what broke it.

ASCII only: chart file names (``charts.save_chart``) and run ids keep to ASCII letters, digits,
``.``, ``_`` and ``-``, so a name with other characters would be measured and stored and then fail
when the report saves its charts; spaces would need quoting in every shell line the reports print.
"""

from __future__ import annotations

import re

from workbench.errors import ConfigError

__all__ = ["MAX_NAME_LENGTH", "NAME_RULE", "check_name"]

#: Longest name allowed (characters); a run id keeps the first 60 of the name.
MAX_NAME_LENGTH = 60

#: The rule in words, as every refusal states it.
NAME_RULE = (
    f"1 to {MAX_NAME_LENGTH} ASCII letters, digits, '.', '_' or '-', starting with a letter or digit "
    "(no spaces, no markup)"
)

_NAME = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_NAME_LENGTH - 1}}}$")


def _suggestion(value: str, what: str) -> str:
    """A name that keeps to the rule, made from ``value`` (for the message only, never used silently)."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", value.encode("ascii", "ignore").decode()).strip("-._")
    return text[:MAX_NAME_LENGTH].rstrip("-._") or f"my-{what.split()[0]}"


def check_name(value: object, *, what: str = "variant name", fix: str = "Rename it") -> str:
    """``value`` when it keeps to :data:`NAME_RULE`, else a :class:`ConfigError` that says so.

    Args:
        value: the name given.
        what: what the name is, for the message (``"variant name"``, ``"label"``, ``"grid name"``).
        fix: what to do, an imperative without a full stop (``"Change 'name' in eagle.toml"``,
            ``"Pass --variant NAME"``); a suggested name follows it.

    Returns:
        ``value`` unchanged (a ``str``).

    Raises:
        ConfigError: not a string, or breaks the rule. The one message: which name broke the
            rule, the rule, what to do, e.g. ``variant name '<b>' is not allowed: a name is 1 to 60
            ASCII letters, ... Change 'name' in x.toml, e.g. 'b'.``
    """
    if isinstance(value, str) and _NAME.match(value):
        return value
    shown = repr(value) if isinstance(value, str) else f"{value!r} (a {type(value).__name__})"
    raise ConfigError(
        f"{what} {shown} is not allowed: a name is {NAME_RULE}. {fix}, e.g. {_suggestion(str(value), what)!r}."
    )
