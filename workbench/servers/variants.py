"""Server variants: declarative files in ``data/variants/`` turned into launch commands.

A variant file (TOML) holds ``name``, ``description``, ``model_path``, optional
``draft_model_path``, a ``[flags]`` table of ``launch_server`` flags without the
leading ``--`` (``true`` for a store_true flag, a value otherwise) and an ``[env]``
table. The same variant launches on the real engine
(``python -m sglang.launch_server``) or on the simulator (``python -m
workbench.sim``, which takes the same flags plus ``--sim-*``).
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ConfigError

#: Where shipped variants live.
VARIANTS_DIR = Path(__file__).resolve().parents[2] / "data" / "variants"

Engine = Literal["sim", "sglang"]


@dataclasses.dataclass(frozen=True)
class Variant:
    """One server configuration to benchmark.

    Attributes:
        name: short identifier (used in run ids and charts).
        description: one line for people.
        model_path: target model path or hub id on the host.
        draft_model_path: draft model for speculative variants, else None.
        flags: ``launch_server`` flags (name without ``--`` -> value; True = store_true).
        env: environment variables for the server process.
        path: the file it came from, if any.
    """

    name: str
    model_path: str
    description: str = ""
    draft_model_path: str | None = None
    flags: dict[str, Any] = dataclasses.field(default_factory=dict)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    path: Path | None = None

    @property
    def speculative(self) -> bool:
        """True when the variant sets --speculative-algorithm."""
        return bool(self.flags.get("speculative-algorithm"))

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

    def launch_argv(
        self,
        *,
        engine: Engine,
        python: str,
        port: int,
        listen_host: str = "127.0.0.1",
        sim_options: dict[str, Any] | None = None,
    ) -> list[str]:
        """Full command line on the host.

        Args:
            engine: ``"sglang"`` (``-m sglang.launch_server``) or ``"sim"`` (``-m workbench.sim``).
            python: the host's Python interpreter.
            port: port to listen on.
            listen_host: address to bind (the host's loopback by default).
            sim_options: ``--sim-*`` options (name without ``--sim-`` -> value); sim only.
        """
        module = {"sglang": "sglang.launch_server", "sim": "workbench.sim"}.get(engine)
        if module is None:
            raise ConfigError(f"engine must be 'sim' or 'sglang', got {engine!r}")
        argv = [python, "-m", module, *self.server_flags(), "--host", listen_host, "--port", str(port)]
        if engine == "sim":
            for key, value in (sim_options or {}).items():
                if value is not None:
                    argv += [f"--sim-{key}", str(value)]
        elif sim_options:
            raise ConfigError("sim_options apply only to engine='sim'")
        return argv


def load_variant(name_or_path: str | Path, *, directory: Path = VARIANTS_DIR) -> Variant:
    """Load a variant by name (``data/variants/<name>.toml``) or path.

    Raises:
        ConfigError: unknown variant (lists the known ones) or an invalid file.
    """
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = directory / f"{name_or_path}.toml"
    if not path.is_file():
        known = ", ".join(list_variants(directory)) or "none"
        raise ConfigError(f"Unknown variant {str(name_or_path)!r} (no file {path}); known variants: {known}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Variant file {path} is not valid TOML: {exc}") from exc
    unknown = set(data) - {"name", "description", "model_path", "draft_model_path", "flags", "env"}
    if unknown:
        raise ConfigError(f"Variant file {path}: unknown keys {sorted(unknown)}")
    if "name" not in data or "model_path" not in data:
        raise ConfigError(f"Variant file {path} needs 'name' and 'model_path'")
    flags = data.get("flags", {})
    for key in flags:
        if key.startswith("-"):
            raise ConfigError(f"Variant file {path}: write flag {key!r} without leading dashes")
    env = {str(k): str(v) for k, v in data.get("env", {}).items()}
    return Variant(
        name=str(data["name"]),
        description=str(data.get("description", "")),
        model_path=str(data["model_path"]),
        draft_model_path=data.get("draft_model_path"),
        flags=dict(flags),
        env=env,
        path=path,
    )


def list_variants(directory: Path = VARIANTS_DIR) -> list[str]:
    """Names of the variant files in ``directory``."""
    return sorted(p.stem for p in directory.glob("*.toml"))
