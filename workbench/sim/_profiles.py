"""Simulator profiles: which hardware, model and SGLang version the sim stands for.

A profile is a TOML file in ``data/profiles/<name>.toml`` with sections
``[profile]`` (name, description, sglang_version), ``[hardware]``, ``[model]``,
``[workload]`` (the benchmark workload it was calibrated on), ``[cost]``
(:class:`~workbench.sim._cost_model.CostModel` fields), ``[acceptance]``
(:class:`~workbench.sim._acceptance.AcceptanceModel` fields) and
``[calibration]`` (the real measurements it reproduces, with their source).
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._cost_model import CostModel

#: Where shipped profiles live.
PROFILES_DIR = Path(__file__).resolve().parents[2] / "data" / "profiles"

#: The profile used when none is named.
DEFAULT_PROFILE = "seed-pcie-8gpu"


@dataclasses.dataclass(frozen=True)
class SimProfile:
    """A loaded profile (see module docstring for the file layout).

    Attributes:
        name: profile name (file stem).
        description: one paragraph for people.
        sglang_version: SGLang version whose API shapes the sim emulates by default.
        hardware: free-form facts (gpus, interconnect, tp_size, ...).
        model: target and draft model names, and why they were chosen.
        workload: workload the calibration assumes (max_new_tokens, prompt set, ...).
        cost: the cost model.
        acceptance: the acceptance model.
        calibration: measured targets, tolerance and their source.
        path: the file it was read from.
    """

    name: str
    description: str
    sglang_version: str
    hardware: dict[str, Any]
    model: dict[str, Any]
    workload: dict[str, Any]
    cost: CostModel
    acceptance: AcceptanceModel
    calibration: dict[str, Any]
    path: Path

    @property
    def max_total_num_tokens(self) -> int:
        """KV-cache capacity in tokens reported by /server_info."""
        return int(self.hardware.get("max_total_num_tokens", 1_000_000))


def list_profiles(directory: Path = PROFILES_DIR) -> list[str]:
    """Names of the profiles available in ``directory``."""
    return sorted(p.stem for p in directory.glob("*.toml"))


def load_profile(name_or_path: str | Path = DEFAULT_PROFILE, *, directory: Path = PROFILES_DIR) -> SimProfile:
    """Load a profile by name (``data/profiles/<name>.toml``) or by file path.

    Raises:
        ConfigError: unknown profile, unreadable TOML, or invalid/missing fields;
            the message names the file and lists the known profiles.
    """
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = directory / f"{name_or_path}.toml"
    if not path.is_file():
        raise ConfigError(
            f"Unknown simulator profile {str(name_or_path)!r} (no file {path}); "
            f"known profiles: {', '.join(list_profiles(directory)) or 'none'}"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Profile {path} is not valid TOML: {exc}") from exc
    try:
        head = data["profile"]
        return SimProfile(
            name=head["name"],
            description=head.get("description", ""),
            sglang_version=head.get("sglang_version", "0.5.9"),
            hardware=dict(data.get("hardware", {})),
            model=dict(data.get("model", {})),
            workload=dict(data.get("workload", {})),
            cost=CostModel(**data["cost"]),
            acceptance=AcceptanceModel(**data.get("acceptance", {})),
            calibration=dict(data.get("calibration", {})),
            path=path,
        )
    except KeyError as exc:
        raise ConfigError(f"Profile {path} lacks required key {exc.args[0]!r}") from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Profile {path} has an invalid value: {exc}") from exc
