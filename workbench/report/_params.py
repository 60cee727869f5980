"""Notebook parameters: parse them from the command line or a YAML file, and check
them against what a notebook declares in its ``parameters`` cell.

Values are YAML scalars or collections, so ``8`` is an int, ``[1,2,4]`` a list,
``0.5`` a float, ``true`` a bool and ``myalias`` a string. Dates stay strings
(``2024-05-01`` is not turned into a ``datetime.date``, which a notebook could not
receive).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from workbench.errors import ConfigError

__all__ = [
    "RESERVED_PARAMETERS",
    "NotebookParameter",
    "check_parameters",
    "did_you_mean",
    "distribute_parameters",
    "load_params_file",
    "notebook_parameters",
    "parse_param_pairs",
    "parse_param_value",
]

#: Parameters the workbench injects into every notebook, declared or not.
RESERVED_PARAMETERS = frozenset({"report_dir"})


class _ParamLoader(yaml.SafeLoader):
    """YAML safe loader that leaves timestamps as strings."""


_ParamLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclasses.dataclass(frozen=True)
class NotebookParameter:
    """One name a notebook's ``parameters`` cell assigns.

    Attributes:
        name: the variable name.
        type_name: type papermill infers from the annotation or value (``"None"`` if unknown).
        default: the default as written in the cell (source text).
        help: the trailing comment on that line, if any.
    """

    name: str
    type_name: str
    default: str
    help: str

    def describe(self) -> str:
        """``name (type, default X)`` for error messages and listings."""
        if self.type_name in ("", "None"):
            return f"{self.name} (default {self.default})"
        return f"{self.name} ({self.type_name}, default {self.default})"


def parse_param_value(text: str) -> Any:
    """Parse one command-line parameter value as YAML.

    Args:
        text: the raw value, e.g. ``"8"``, ``"[1,2,4]"``, ``"myalias"``.

    Returns:
        The parsed value (int, float, bool, None, str, list or dict).

    Raises:
        ConfigError: ``text`` is not valid YAML (say, an unclosed bracket).
    """
    try:
        return yaml.load(text, Loader=_ParamLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"parameter value {text!r} is not valid YAML ({exc.__class__.__name__}); "
            "quote strings and close brackets, e.g. -p concurrency_levels '[1,2,4]'"
        ) from exc


def _named(names: list[str], *, joiner: str = "or") -> str:
    """``parameter 'a'``, ``parameters 'a' or 'b'``, ``parameters 'a', 'b' or 'c'`` (for messages)."""
    quoted = [repr(n) for n in names]
    if len(quoted) == 1:
        return f"parameter {quoted[0]}"
    return f"parameters {', '.join(quoted[:-1])} {joiner} {quoted[-1]}"


def did_you_mean(names: Iterable[str], known: Iterable[str]) -> str:
    """``"'repeets': did you mean 'repeats'?"`` for each of ``names`` close to one of ``known`` (difflib's
    ratio at least 0.75, the closest first, at most two), space-separated; ``""`` when none is close."""
    choices = sorted(set(known))
    out = []
    for name in names:
        close = difflib.get_close_matches(name, choices, n=2, cutoff=0.75)
        if close:
            out.append(f"{name!r}: did you mean {' or '.join(repr(c) for c in close)}?")
    return " ".join(out)


def _check_name(name: str, *, source: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(f"parameter name {name!r} from {source} is not a valid Python identifier")


def parse_param_pairs(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Turn ``-p NAME VALUE`` pairs into a dict, parsing each value as YAML.

    A name given twice keeps its last value.

    Raises:
        ConfigError: a name is not an identifier or a value is not valid YAML.
    """
    params: dict[str, Any] = {}
    for name, raw in pairs:
        _check_name(name, source="the command line")
        params[name] = parse_param_value(raw)
    return params


def load_params_file(path: str | Path) -> dict[str, Any]:
    """Read parameters from a YAML file whose top level is a mapping ``name: value``.

    Args:
        path: the YAML file.

    Returns:
        The mapping (empty for an empty file).

    Raises:
        ConfigError: the file is missing, unreadable, not valid YAML, not a mapping,
            or has a key that is not a Python identifier.
    """
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read parameters file {file}: {exc.strerror}") from exc
    try:
        data = yaml.load(text, Loader=_ParamLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"parameters file {file} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"parameters file {file} must hold a mapping 'name: value' at the top level, not a {type(data).__name__}"
        )
    for name in data:
        _check_name(name, source=str(file))
    return dict(data)


def notebook_parameters(notebook_path: str | Path) -> dict[str, NotebookParameter]:
    """The parameters a notebook declares in its cell tagged ``parameters``.

    Uses papermill's inspection, which parses the cell without running it.

    Args:
        notebook_path: the ``.ipynb`` file.

    Returns:
        Name -> :class:`NotebookParameter`, in the cell's order; empty when the
        notebook has no ``parameters`` cell.

    Raises:
        ConfigError: the file is missing or is not a readable notebook.
    """
    import nbformat
    import papermill

    path = Path(notebook_path)
    if not path.is_file():
        raise ConfigError(f"notebook {path} does not exist")
    try:
        raw = papermill.inspect_notebook(str(path))
    except (OSError, ValueError, KeyError, nbformat.ValidationError) as exc:
        raise ConfigError(f"cannot read notebook {path}: {exc.__class__.__name__}: {exc}") from exc
    return {
        name: NotebookParameter(
            name=name,
            type_name=str(info.get("inferred_type_name", "None")),
            default=str(info.get("default", "")),
            help=str(info.get("help", "")),
        )
        for name, info in raw.items()
    }


def check_parameters(
    notebook: str | Path,
    given: Mapping[str, Any],
    declared: Mapping[str, NotebookParameter],
) -> None:
    """Refuse parameters the notebook does not declare.

    Names in :data:`RESERVED_PARAMETERS` are always accepted.

    Args:
        notebook: the notebook's path (for the message).
        given: the parameters to inject.
        declared: what :func:`notebook_parameters` found.

    Raises:
        ConfigError: some names are unknown; the message lists the known ones.
    """
    unknown = [name for name in given if name not in declared and name not in RESERVED_PARAMETERS]
    if not unknown:
        return
    if declared:
        known = "; ".join(p.describe() for p in declared.values())
        hint = f"Known parameters: {known}."
    else:
        hint = "It declares no parameters (it has no cell tagged 'parameters')."
    guesses = did_you_mean(unknown, declared)
    raise ConfigError(
        f"notebook {notebook} has no {_named(unknown)}.{f' {guesses}' if guesses else ''} {hint} "
        f"Check the spelling, or add the {'name' if len(unknown) == 1 else 'names'} to the notebook's "
        "parameters cell."
    )


def distribute_parameters(
    declared: Mapping[Path, Mapping[str, NotebookParameter]],
    given: Mapping[str, Any],
) -> dict[Path, dict[str, Any]]:
    """Give each notebook the parameters it declares, out of one shared set.

    Used when one command runs several notebooks: ``-p host myalias`` reaches
    every notebook with a ``host`` parameter and skips the others. Reserved names
    (``report_dir``) reach every notebook.

    Args:
        declared: notebook -> its declared parameters (:func:`notebook_parameters`).
        given: the parameters from the command line and parameters file.

    Returns:
        notebook -> the parameters to inject into it, for every notebook in ``declared``.

    Raises:
        ConfigError: a name is declared by none of the notebooks; the message lists,
            per notebook, the names they do declare.
    """
    orphans = [
        name
        for name in given
        if name not in RESERVED_PARAMETERS and not any(name in params for params in declared.values())
    ]
    if orphans:
        hints = did_you_mean(orphans, {name for params in declared.values() for name in params})
        listing = "\n".join(
            f"  {Path(nb).name}: {', '.join(params) or '(no parameters cell)'}" for nb, params in declared.items()
        )
        raise ConfigError(
            f"no notebook declares {_named(orphans)}."
            + (f" {hints}" if hints else "")
            + f"\nKnown parameters:\n{listing}\n"
            f"Check the spelling, or pass the notebook that declares {'it' if len(orphans) == 1 else 'them'}."
        )
    return {
        nb: {name: value for name, value in given.items() if name in params or name in RESERVED_PARAMETERS}
        for nb, params in declared.items()
    }
