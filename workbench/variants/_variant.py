"""Server variants: declarative files in ``data/variants/`` turned into launch commands.

A variant file (TOML)::

    name = "eagle3-topk4-off-above-8"          # required; used in run ids and charts
    description = "..."                        # one line for people
    base = "sglang==0.5.9"                     # what SGLang to run (see below); optional
    sglang_version = "0.5.9"                   # version to validate against (optional)
    model_path = "meta-llama/Llama-3.3-70B-Instruct"   # required: path on the host or hub id
    draft_model_path = "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"  # speculative variants
    patches = ["../patches/eagle-spec-off-above.patch"]  # relative to this file

    [flags]            # launch_server flags without the leading "--"
    tp-size = 8        # a value ...
    disable-custom-all-reduce = true   # ... or true for a store_true flag

    [env]              # environment variables of the server process
    SGLANG_ENABLE_SPEC_V2 = "1"

    [sim_policy]       # what the simulated engine does in place of the patches
    spec_off_above = 8 # -> --sim-spec-off-above 8

``base`` forms:

- ``"sglang==0.5.9"``: that release (an unpacked wheel; patched variants run from a
  copy of it);
- ``"host:/root/sglang"``: a git checkout at that path on whichever host the variant
  runs on; ``"<ssh alias>:/path"`` (or ``"local:/path"``) pins the host;
- absent: the ``sglang`` package the host's Python imports.

The same variant launches on any engine (:mod:`workbench.engines`): on SGLang
(``python -m sglang.launch_server``) or on the simulator (``python -m workbench.sim``,
which takes the same flags plus ``--sim-*``); the engine builds the command line
from :meth:`Variant.server_flags` (``Engine.launch_argv``). The simulator runs no
SGLang code, so patches cannot change what it does; ``sim_policy`` names the
simulator option that stands in for the patch's idea, and :meth:`Variant.sim_stand_in`
says so in words for manifests, data and charts.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import json
import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ConfigError
from workbench.names import check_name

#: Where shipped variants live.
VARIANTS_DIR = Path(__file__).resolve().parents[2] / "data" / "variants"

#: Simulator policies a variant may name: key -> (``--sim-*`` option, words with ``{value}``).
SIM_POLICIES: dict[str, tuple[str, str]] = {
    "spec_off_above": ("spec-off-above", "no drafting while more than {value} requests run"),
}

#: Flags the workbench sets on every launch command: a variant giving them would launch with two.
MANAGED_FLAGS = {
    "port": "it picks a free port on the host, or ServerHandle.start(port=...) sets one",
    "host": "the server listens on the host's 127.0.0.1 and is reached through an SSH tunnel",
}
#: Each top-level key of a variant file -> (the TOML types it may hold, those types in words).
SHAPES: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), 'a string, e.g. name = "eagle3-topk4"'),
    "description": ((str,), 'a string, e.g. description = "EAGLE-3, topk 4"'),
    "base": ((str,), 'a string, e.g. base = "sglang==0.5.9" or "host:/root/sglang"'),
    "sglang_version": ((str,), 'a string, e.g. sglang_version = "0.5.9"'),
    "model_path": ((str,), 'a string (a path or hub id), e.g. model_path = "meta-llama/Llama-3.1-8B-Instruct"'),
    "draft_model_path": ((str,), "a string (a path or hub id)"),
    "patches": ((list,), 'a list of file paths, e.g. patches = ["../patches/x.patch"]'),
    "flags": ((dict,), "a table: a [flags] section of `flag-name = value` lines"),
    "env": ((dict,), 'a table: an [env] section of `NAME = "value"` lines'),
    "sim_policy": ((dict,), "a table: a [sim_policy] section, e.g. spec_off_above = 8"),
}
_KEYS = set(SHAPES)
#: The integers a flag may hold: TOML's, 64-bit (tomllib reads larger ones).
FLAG_INT_RANGE = (-(2**63), 2**63 - 1)
_RELEASE = re.compile(r"^sglang\s*==\s*(\S+)$")
_CHECKOUT = re.compile(r"^([A-Za-z0-9_.@-]+):(/.*|~.*)$")


@dataclasses.dataclass(frozen=True)
class Base:
    """Which SGLang a variant runs.

    Attributes:
        kind: ``"release"`` (a PyPI release), ``"checkout"`` (a git checkout on a
            host) or ``"installed"`` (whatever the host's Python imports).
        version: the release version (``kind == "release"``), else None.
        host: the checkout's host: ``"host"`` means the host the variant runs on,
            anything else is an ssh alias or ``"local"`` (``kind == "checkout"``).
        path: the checkout's path on that host (repository root).
    """

    kind: Literal["release", "checkout", "installed"]
    version: str | None = None
    host: str | None = None
    path: str | None = None

    def host_for(self, run_host: str) -> str:
        """The host holding the checkout when the variant runs on ``run_host``."""
        return run_host if self.host in (None, "host") else str(self.host)

    def __str__(self) -> str:
        if self.kind == "release":
            return f"sglang=={self.version}"
        if self.kind == "checkout":
            return f"{self.host}:{self.path}"
        return "installed sglang"


def parse_base(text: str | None) -> Base:
    """Parse a variant's ``base`` string (None: the installed package).

    Raises:
        ConfigError: not ``sglang==<version>`` nor ``<host>:<absolute path>``.
    """
    if text is None or not str(text).strip():
        return Base("installed")
    text = str(text).strip()
    release = _RELEASE.match(text)
    if release:
        return Base("release", version=release.group(1))
    checkout = _CHECKOUT.match(text)
    if checkout:
        return Base("checkout", host=checkout.group(1), path=checkout.group(2).rstrip("/") or "/")
    raise ConfigError(
        f"base {text!r} is neither a release ('sglang==0.5.9') nor a checkout on a host "
        "('host:/root/sglang' for the host the variant runs on, or '<ssh alias>:/path')"
    )


@dataclasses.dataclass(frozen=True)
class Variant:
    """One server configuration to benchmark.

    Attributes:
        name: short identifier (used in run ids and charts); :data:`workbench.names.NAME_RULE`.
        model_path: target model path or hub id on the host.
        description: one line for people.
        draft_model_path: draft model for speculative variants, else None.
        flags: ``launch_server`` flags (name without ``--`` -> value; True = store_true).
        env: environment variables for the server process.
        path: the file it came from, if any.
        base: which SGLang it runs (``base`` string as written; see :func:`parse_base`).
        sglang_version: version to validate against when it cannot be read from the base.
        patches: patch files (absolute paths), applied in order to an isolated copy of the base.
        sim_policy: simulator stand-in for the patches' idea (key of :data:`SIM_POLICIES` -> value).
    """

    name: str
    model_path: str
    description: str = ""
    draft_model_path: str | None = None
    flags: dict[str, Any] = dataclasses.field(default_factory=dict)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    path: Path | None = None
    base: str | None = None
    sglang_version: str | None = None
    patches: tuple[Path, ...] = ()
    sim_policy: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name(self.name, fix=f"Change 'name' in {self.path}" if self.path else "Rename it")

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (paths as strings, ``patches`` a list): what a server record, a run's
        manifest (``variant_definition``, without ``name`` and ``description``) and a sweep's identity store.
        :meth:`from_dict` rebuilds the variant from it."""
        return {
            "name": self.name,
            "description": self.description,
            "model_path": self.model_path,
            "draft_model_path": self.draft_model_path,
            "flags": dict(self.flags),
            "env": dict(self.env),
            "path": str(self.path) if self.path else None,
            "base": self.base,
            "sglang_version": self.sglang_version,
            "patches": [str(p) for p in self.patches],
            "sim_policy": dict(self.sim_policy),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **given: Any) -> "Variant":
        """The variant :meth:`to_dict` wrote, or a part of it (a key left out takes the field's default; a
        missing ``model_path`` is ``"?"``: a record of a run that did not keep it).

        Args:
            data: keys of :meth:`to_dict` (unknown keys are ignored).
            given: fields to set whatever ``data`` holds, e.g. ``name=`` for a manifest's ``variant_definition``.

        Raises:
            ConfigError: a name that breaks :data:`workbench.names.NAME_RULE`.
        """
        d = {**data, **given}
        path = d.get("path")
        return cls(
            name=str(d["name"]),
            model_path=str(d.get("model_path") or "?"),
            description=str(d.get("description") or ""),
            draft_model_path=d.get("draft_model_path"),
            flags=dict(d.get("flags") or {}),
            env={str(k): str(x) for k, x in (d.get("env") or {}).items()},
            path=Path(path) if path else None,
            base=d.get("base"),
            sglang_version=d.get("sglang_version"),
            patches=tuple(Path(x) for x in d.get("patches") or ()),
            sim_policy=dict(d.get("sim_policy") or {}),
        )

    @property
    def speculative(self) -> bool:
        """True when the variant sets --speculative-algorithm."""
        return bool(self.flags.get("speculative-algorithm"))

    @property
    def gpus_wanted(self) -> int:
        """GPUs one server of this variant takes: ``--tp-size`` (or ``--tensor-parallel-size``) x
        ``--dp-size``, each 1 when the variant does not set it (SGLang's defaults, ``server_args.py``)."""
        tp = next((self.flags[k] for k in ("tp-size", "tensor-parallel-size") if self.flags.get(k)), 1)
        return int(tp) * int(self.flags.get("dp-size") or 1)

    @property
    def parsed_base(self) -> Base:
        """:attr:`base` parsed (raises ConfigError when malformed)."""
        return parse_base(self.base)

    @property
    def target_version(self) -> str | None:
        """The SGLang version this variant is meant for: the release base's, else ``sglang_version``."""
        base = self.parsed_base
        return base.version if base.kind == "release" else self.sglang_version

    def sim_options(self) -> dict[str, Any]:
        """``--sim-*`` options standing in for the patches (option name without ``--sim-`` -> value)."""
        return {SIM_POLICIES[key][0]: value for key, value in self.sim_policy.items()}

    def sim_stand_in(self) -> str | None:
        """Words for what the simulator runs in place of this variant's patches, or None.

        Example: ``"SIMULATOR STAND-IN for eagle-spec-off-above.patch: no drafting while
        more than 8 requests run (--sim-spec-off-above 8); the patch itself does not run
        on the simulated engine"``.
        """
        if not self.sim_policy:
            return None
        ideas = "; ".join(SIM_POLICIES[k][1].format(value=v) for k, v in self.sim_policy.items())
        options = " ".join(f"--sim-{opt} {val}" for opt, val in self.sim_options().items())
        what = ", ".join(p.name for p in self.patches) or "this variant"
        tail = "; the patch itself does not run on the simulated engine" if self.patches else ""
        return f"SIMULATOR STAND-IN for {what}: {ideas} ({options}){tail}"

    def server_flags(self) -> list[str]:
        """The variant's flags as an argv fragment (model paths first)."""
        argv = ["--model-path", self.model_path]
        if self.draft_model_path:
            argv += ["--speculative-draft-model-path", self.draft_model_path]
        for key, value in self.flags.items():
            if value is True:
                argv.append(f"--{key}")
            elif value is False or value is None:
                continue
            else:
                argv += [f"--{key}", str(value)]
        return argv


class UnknownVariantError(ConfigError):
    """A variant name with no file (bad input: exit status 2 in every command), from :func:`load_variant`."""


def _unknown_message(given: str, path: Path, directory: Path) -> str:
    """What was looked up where, the closest names (difflib) and every known one."""
    known = list_variants(directory)
    close = difflib.get_close_matches(Path(given).stem, known, n=3, cutoff=0.6)
    where = (
        f"no file {path}"
        if Path(given).suffix == ".toml"
        else f"no {path.name} in {directory}; a name is looked up there, or give a .toml file"
    )
    hint = f" Did you mean {', '.join(close[:-1]) + ' or ' if len(close) > 1 else ''}{close[-1]}?" if close else ""
    return f"Unknown variant {given!r} ({where}).{hint} Known variants: {', '.join(known) or 'none'}"


def load_variant(name_or_path: str | Path, *, directory: Path = VARIANTS_DIR) -> Variant:
    """Load a variant by name (``data/variants/<name>.toml``) or path.

    Raises:
        UnknownVariantError: no such name or file (a :class:`ConfigError` naming the folder
            looked in, the closest names and every known one).
        ConfigError: an invalid file (unknown keys, a name breaking :data:`workbench.names.NAME_RULE`,
            malformed base, missing patch file, unknown sim policy).
    """
    path = Path(name_or_path)
    if path.suffix != ".toml":
        check_name(str(name_or_path), fix="Give the name of a file in data/variants/, or a path ending in .toml")
        path = directory / f"{name_or_path}.toml"
    if not path.is_file():
        raise UnknownVariantError(_unknown_message(str(name_or_path), path, directory))
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Variant file {path} is not valid TOML: {exc}") from exc
    except ValueError as exc:  # tomllib's int() of a number of more than 4,300 digits
        raise ConfigError(
            f"Variant file {path} holds a number TOML cannot read ({exc}); write a value of at most 19 digits"
        ) from exc
    unknown = set(data) - _KEYS
    if unknown:
        raise ConfigError(f"Variant file {path}: unknown keys {sorted(unknown)}; known keys: {sorted(_KEYS)}")
    if "name" not in data or "model_path" not in data:
        raise ConfigError(f"Variant file {path} needs 'name' and 'model_path'")
    check_shapes(path, data)
    flags = data.get("flags", {})
    for key in flags:
        if key.startswith("-"):
            raise ConfigError(f"Variant file {path}: write flag {key!r} without leading dashes")
        if key in MANAGED_FLAGS:
            raise ConfigError(
                f"Variant file {path}: flag {key!r} is set by the workbench ({MANAGED_FLAGS[key]}); "
                f"remove it from [flags]"
            )
    env = {str(k): str(v) for k, v in data.get("env", {}).items()}
    try:
        base = parse_base(data.get("base"))
    except ConfigError as exc:
        raise ConfigError(f"Variant file {path}: {exc}") from None
    version = data.get("sglang_version")
    if base.kind == "release" and version is not None and str(version) != base.version:
        raise ConfigError(
            f"Variant file {path}: sglang_version {version!r} contradicts base {data['base']!r}; "
            "drop sglang_version (a release base names its version)"
        )
    patches = tuple(_patch_path(path, p) for p in data.get("patches", []))
    policy = dict(data.get("sim_policy", {}))
    _check_sim_policy(path, policy)
    return Variant(
        name=str(data["name"]),
        description=str(data.get("description", "")),
        model_path=str(data["model_path"]),
        draft_model_path=data.get("draft_model_path"),
        flags=dict(flags),
        env=env,
        path=path,
        base=data.get("base"),
        sglang_version=str(version) if version is not None else None,
        patches=patches,
        sim_policy=policy,
    )


def _kind(value: object) -> str:
    """What a TOML value is, in words (``"a list"``, ``"a table"``, ``"true/false"``, ...)."""
    if isinstance(value, bool):
        return "true/false"
    for types, words in (
        (dict, "a table"),
        (list, "a list"),
        (str, "a string"),
        (int, "an integer"),
        (float, "a number with a fraction"),
        ((datetime.date, datetime.time), "a date or time"),
    ):
        if isinstance(value, types):
            return words
    return f"a {type(value).__name__}"


def _in_int_range(value: int) -> bool:
    return FLAG_INT_RANGE[0] <= value <= FLAG_INT_RANGE[1]


def _shown(value: object) -> str:
    """``value`` for a message: its repr, cut to 60 characters (a huge integer by its digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and not _in_int_range(value):
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def flag_value_problem(value: object) -> str | None:
    """Why ``value`` cannot be a launch flag's value in a variant file, or None when it can.

    A flag holds one string, integer (64-bit, as TOML's), finite number or true/false: SGLang's
    parser reads each value from one command-line word.
    """
    if isinstance(value, (str, bool)):
        return None
    if isinstance(value, int):
        return None if _in_int_range(value) else "is beyond TOML's 64-bit integers"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"is {value!r}, not a finite number"
    return f"holds {_kind(value)}"


def _one_value(key: str, value: object) -> str:
    """How to write flag ``key`` with one value: the list's only item when it has one, else an example."""
    if isinstance(value, list) and len(value) == 1 and flag_value_problem(value[0]) is None:
        item = value[0]
        text = json.dumps(item) if isinstance(item, (str, bool)) else str(item)
        return f"`{key} = {text}`"
    return f'e.g. `{key} = 4`, `{key} = "text"` or `{key} = true`'


def check_shapes(path: Path, data: Mapping[str, Any]) -> None:
    """Refuse a variant file whose keys hold values of the wrong TOML type, naming the file, key and type.

    Every top-level key is checked against :data:`SHAPES`, each ``[flags]`` value with
    :func:`flag_value_problem`, each ``[env]`` value (a string or number) and each ``patches`` entry (a string).

    Raises:
        ConfigError: the first value of the wrong type: ``Variant file F: [flags] speculative-eagle-topk
            holds a list ([4]); a flag's value is one string, number or true/false, e.g. ...``.
    """
    for key, value in data.items():
        types, words = SHAPES[key]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ConfigError(f"Variant file {path}: {key} holds {_kind(value)} ({_shown(value)}); it takes {words}")
    for key, value in data.get("flags", {}).items():
        problem = flag_value_problem(value)
        if problem is not None:
            raise ConfigError(
                f"Variant file {path}: [flags] {key} {problem} ({_shown(value)}); a flag holds one "
                f"string, integer, finite number or true/false: write {_one_value(key, value)}"
            )
    for key, value in data.get("env", {}).items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(
                f"Variant file {path}: [env] {key} holds {_kind(value)} ({_shown(value)}); an "
                f'environment variable is text: write `{key} = "1"` (quoted)'
            )
    for entry in data.get("patches", []):
        if not isinstance(entry, str):
            raise ConfigError(
                f"Variant file {path}: patches holds {_kind(entry)} ({_shown(entry)}) in its list; "
                'it takes file paths, e.g. patches = ["../patches/x.patch"]'
            )


def _patch_path(variant_file: Path, entry: object) -> Path:
    if not isinstance(entry, str) or not entry:
        raise ConfigError(f"Variant file {variant_file}: patches must be a list of file paths, got {entry!r}")
    patch = (variant_file.parent / entry).resolve()
    if not patch.is_file():
        raise ConfigError(
            f"Variant file {variant_file}: patch {entry!r} not found (looked at {patch}); "
            "patch paths are relative to the variant file"
        )
    return patch


def _check_sim_policy(variant_file: Path, policy: dict[str, Any]) -> None:
    for key, value in policy.items():
        if key not in SIM_POLICIES:
            raise ConfigError(
                f"Variant file {variant_file}: unknown sim_policy {key!r}; known: {', '.join(sorted(SIM_POLICIES))}"
            )
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"Variant file {variant_file}: sim_policy {key} must be a positive integer, got {value!r}"
            )


def list_variants(directory: Path = VARIANTS_DIR) -> list[str]:
    """Names of the variant files in ``directory``."""
    return sorted(p.stem for p in directory.glob("*.toml"))
